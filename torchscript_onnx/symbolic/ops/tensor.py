"""Shape and layout ops at opset 9: view/reshape, flatten, transpose, cat, squeeze, casts."""

from __future__ import annotations

import torch

from torchscript_onnx.builder import dtypes, onnx_ops
from torchscript_onnx.builder.ir import Value

from .. import symbolic_helper as sh
from ..registry import declare_opset_requirements, symbolic
from .creation import arange_between
from .operand_types import as_operand


# When an op here needs a higher opset than it is registered at: the condition (the reason its
# conversion states with OPSET.require) -> the lowest opset that converts it (docs/supported_ops.md).
OPSET = declare_opset_requirements({
    "aten::unsqueeze": {"a dim known only at runtime (Unsqueeze with an axes input)": 13},
    "aten::squeeze": {"a dim known only at runtime (Squeeze with an axes input)": 13},
    "aten::repeat_interleave": {"repeats known only at runtime (ONNX CumSum and Range)": 11},
    ("aten::flip", "aten::fliplr", "aten::flipud", "aten::rot90"): {"a dynamic dim (Slice with negative steps)": 10},
    "aten::diagonal": {"a matrix sized at runtime (ONNX Range)": 11},
    ("aten::tril", "aten::triu"): {"a diagonal known only at runtime (ONNX Trilu)": 14,
                                   "a matrix of dynamic size (ONNX Trilu)": 14},
}, unlisted={
    "ONNX Expand": 8,
    "ONNX Where": 9,
})


def reshape_to(g, self: Value, shape) -> Value:
    """Reshape to ``shape``: a constant list, a list with runtime elements, or a 1-D int64 value."""
    if isinstance(shape, Value) and shape.elements is None and not shape.is_const:
        return g.op("Reshape", self, onnx_ops.cast(g, shape, torch.int64))
    target = sh.const(shape)
    if target is not sh.UNKNOWN:
        dims = [int(d) for d in target]
        # torch's 0 is an empty dim; ONNX Reshape's 0 copies the input dim unless allowzero (opset 14).
        allowzero = 1 if 0 in dims and onnx_ops.has_attribute(g, "Reshape", "allowzero") else None
        return g.op("Reshape", self, g.constant(dims, torch.int64), allowzero_i=allowzero)
    return g.op("Reshape", self, shape)


@symbolic("aten::view")
def view(g, self, size):
    """view(Tensor(a) self, SymInt[] size) -> Tensor(a)"""
    return reshape_to(g, self, size)


@symbolic("aten::reshape")
def reshape(g, self, shape):
    """reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)"""
    return reshape_to(g, self, shape)


@symbolic("aten::view_as")
def view_as(g, self, other):
    """view_as(Tensor(a) self, Tensor other) -> Tensor(a)"""
    return g.op("Reshape", self, onnx_ops.shape_of(g, other))


@symbolic("aten::reshape_as")
def reshape_as(g, self, other):
    """reshape_as(Tensor(a) self, Tensor other) -> Tensor(a)"""
    return g.op("Reshape", self, onnx_ops.shape_of(g, other))


@symbolic("aten::flatten")
@sh.parse_args("v", "i", "i")
def flatten(g, self, start_dim=0, end_dim=-1):
    """flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)"""
    rank = self.rank
    if rank is None:
        sh.value_error("flatten: the input rank must be known", self)
    if rank == 0:
        return onnx_ops.unsqueeze(g, self, [0])
    start = start_dim + rank if start_dim < 0 else start_dim
    end = end_dim + rank if end_dim < 0 else end_dim
    if start == end:
        return self
    if end == rank - 1 and start > 0:
        # Flatten makes 2-D: dims before start collapse into the first, which is what we want
        # only when they are a single dim.
        if start == 1 and g.opset >= 9:  # Flatten-1 is float-only
            return g.op("Flatten", self, axis_i=1)
    dims = sh.sizes(self)
    target = []
    for i in range(start):
        target.append(dims[i] if isinstance(dims[i], int) else 0)
    target.append(-1)
    for i in range(end + 1, rank):
        if not isinstance(dims[i], int):
            return _flatten_dynamic(g, self, start, end)
        target.append(dims[i])
    if sum(1 for d in target if d == -1) > 1:
        return _flatten_dynamic(g, self, start, end)
    return g.op("Reshape", self, g.constant(target, torch.int64))


def _flatten_dynamic(g, self, start, end):
    shape = g.op("Shape", self)
    rank = self.rank
    parts = []
    if start > 0:
        parts.append(onnx_ops.slice(g, shape, [0], [0], [start]))
    parts.append(g.constant([-1], torch.int64))
    if end + 1 < rank:
        parts.append(onnx_ops.slice(g, shape, [0], [end + 1], [rank]))
    return g.op("Reshape", self, g.op("Concat", *parts, axis_i=0))


@symbolic("aten::t")
def t(g, self):
    """t(Tensor(a) self) -> Tensor(a)"""
    if self.rank is not None and self.rank < 2:
        return self
    return g.op("Transpose", self, perm_i=[1, 0])


@symbolic("aten::transpose")
@sh.parse_args("v", "i", "i")
def transpose(g, self, dim0, dim1):
    """transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)"""
    rank = self.rank
    if rank is None:
        sh.value_error("transpose: the input rank must be known", self)
    if rank == 0:
        return self
    dim0, dim1 = dim0 % rank, dim1 % rank
    if dim0 == dim1:
        return self
    perm = list(range(rank))
    perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
    return g.op("Transpose", self, perm_i=perm)


@symbolic("aten::permute")
@sh.parse_args("v", "is")
def permute(g, self, dims):
    """permute(Tensor(a) self, int[] dims) -> Tensor(a)"""
    rank = len(dims)
    perm = [d % rank for d in dims]
    if perm == list(range(rank)):
        return self
    return g.op("Transpose", self, perm_i=perm)


@symbolic("aten::unsqueeze")
def unsqueeze(g, self, dim):
    """unsqueeze(Tensor(a) self, int dim) -> Tensor(a)"""
    if sh.const(dim) is sh.UNKNOWN:
        # A runtime dim (an int graph input): Unsqueeze takes its axes as an input from opset 13,
        # and reads a negative axis against the output rank, as torch does.
        OPSET.require(g, "a dim known only at runtime (Unsqueeze with an axes input)", dim)
        axes = onnx_ops.cast(g, dim, torch.int64)
        # (Unsqueeze, not Reshape, makes the axes 1-D: onnxruntime 1.2x's optimizer mistypes a
        # Reshape feeding Unsqueeze's axes.)
        return onnx_ops.unsqueeze(g, self, onnx_ops.unsqueeze(g, axes, [0]) if axes.rank == 0 else axes)
    dim = sh._get_const(dim, "i", "dim")
    if dim < 0:
        if self.rank is None:
            sh.value_error("unsqueeze with a negative dim needs a known rank", self)
        dim += self.rank + 1
    return onnx_ops.unsqueeze(g, self, [dim])


@symbolic("aten::squeeze")
def squeeze(g, self, dim=None):
    """squeeze.dim(Tensor(a) self, int dim) -> Tensor(a); squeeze(Tensor(a) self) -> Tensor(a)"""
    dims = sh.sizes(self)
    if dim is None or sh.is_none(dim):
        if dims is not None and all(isinstance(d, int) for d in dims):
            axes = [i for i, d in enumerate(dims) if d == 1]
            return onnx_ops.squeeze(g, self, axes) if axes else self
        return onnx_ops.squeeze(g, self)
    axes = sh.const(dim)
    rank = require_rank("squeeze", self)
    if axes is sh.UNKNOWN:  # a runtime int dim (scripted): Squeeze takes its axes as an input from 13
        OPSET.require(g, "a dim known only at runtime (Squeeze with an axes input)", dim)
        rank_value = g.constant(rank, torch.int64)
        axis = g.op("Mod", g.op("Add", onnx_ops.cast(g, dim, torch.int64), rank_value), rank_value)
        result = _squeeze_if_one(g, self, axis)
        result.shape = (None,) * _traced_rank(g, rank)
        return result
    axes = axes if isinstance(axes, list) else [axes]
    axes = sorted({axis % rank if rank else axis for axis in axes})
    ones = [axis for axis in axes if dims[axis] == 1]
    unknown = [axis for axis in axes if not isinstance(dims[axis], int)]
    if unknown and g.opset >= 11:
        # torch squeezes a dim only when it is 1 at runtime: an If per such dim, as legacy does;
        # later conversions see the rank the trace had
        traced = _traced_rank(g, rank - len(ones))
        result = onnx_ops.squeeze(g, self, ones) if ones else self
        for axis in sorted(unknown, reverse=True):
            result = _squeeze_if_one(g, result, axis - sum(1 for one in ones if one < axis))
        result.shape = (None,) * traced
        return result
    if unknown:
        # Below opset 11 (as legacy) do what the trace did: the traced output rank says whether
        # the dynamic dims were 1 then.
        removed = rank - _traced_rank(g, rank - len(ones))
        if removed == len(ones) + len(unknown):
            ones = sorted(ones + unknown)
        elif removed != len(ones):
            sh.value_error(f"squeeze: dims {unknown} have sizes known only at runtime and the trace does not "
                           "say whether they were squeezed", self)
    return onnx_ops.squeeze(g, self, ones) if ones else self


def _squeeze_if_one(g, x: Value, axis) -> Value:
    """``x`` without dim ``axis`` (an int, or a 0-d int64 runtime value from opset 13) when its
    runtime size is 1, else ``x``: an If with two branches."""
    from torchscript_onnx.builder.ir import Graph

    index = g.constant(axis, torch.int64) if isinstance(axis, int) else axis
    size = g.op("Gather", g.op("Shape", x), index, axis_i=0)
    is_one = g.op("Equal", size, g.constant(1, torch.int64))
    branches = []
    for squeezed in (True, False):
        body = Graph(parent=g.graph)
        sub = g.subgraph_context(body)
        if squeezed and isinstance(axis, int):
            out = onnx_ops.squeeze(sub, x, [axis])
        elif squeezed:
            out = sub.op("Squeeze", x, onnx_ops.unsqueeze(sub, axis, [0]))
        else:  # an Identity of its own: a body output must be made inside the body
            node = body.add_node("Identity", "", [x], {}, 1, sub.scope, sub.source)
            out = node.outputs[0]
            out.dtype = x.dtype
        body.outputs = [out]
        branches.append(body)
    result = g.op("If", is_one, then_branch_g=branches[0], else_branch_g=branches[1])
    result.dtype = x.dtype
    return result


def _traced_rank(g, default: int) -> int:
    node = g.original_node
    jit_type = node.output().type() if node is not None else None
    rank = jit_type.dim() if isinstance(jit_type, torch._C.TensorType) else None
    return default if rank is None else rank


@symbolic("aten::cat")
def cat(g, tensors, dim):
    """cat(Tensor[] tensors, int dim=0) -> Tensor"""
    values = [v for v in sh.unpack_list(tensors) if not _is_empty_1d(v)]
    dim = sh._get_const(dim, "i", "dim")
    if len(values) == 1:
        g.legacy_only(1)  # legacy's Concat of one input
        return values[0]
    dtype = g.output_dtype() or sh.promote_types(*values)
    return g.op("Concat", *[as_operand(g, v, dtype) for v in values], axis_i=dim)


def _is_empty_1d(v: Value) -> bool:
    """torch.cat skips 1-D empty tensors (legacy behaviour)."""
    return v.shape == (0,)


@symbolic("aten::stack")
def stack(g, tensors, dim):
    """stack(Tensor[] tensors, int dim=0) -> Tensor"""
    values = sh.unpack_list(tensors)
    dim = sh._get_const(dim, "i", "dim")
    rank = values[0].rank
    if dim < 0:
        dim += rank + 1
    dtype = g.output_dtype() or sh.promote_types(*values)
    return g.op("Concat", *[onnx_ops.unsqueeze(g, as_operand(g, v, dtype), [dim]) for v in values], axis_i=dim)


def cast_to(g, self: Value, dtype: torch.dtype) -> Value:
    return onnx_ops.cast(g, self, dtype)


@symbolic("aten::to")
def to(g, self, *args):
    """to.dtype(Tensor self, ScalarType dtype, ...) / to.device(...) / to.other(Tensor other, ...)"""
    dtype = g.output_dtype() or _dtype_from_to_args(args)
    return self if dtype is None else cast_to(g, self, dtype)


def _dtype_from_to_args(args) -> torch.dtype | None:
    for arg in args:
        if isinstance(arg, Value) and not arg.is_const and arg.dtype is not None:
            return arg.dtype  # to.other
        raw = sh.const(arg, None)
        if isinstance(raw, torch.Tensor):
            return raw.dtype  # to.other with a tensor known at export time
        if isinstance(raw, int) and not isinstance(raw, bool):
            return dtypes.from_scalar_type(raw)
    return None


@symbolic("aten::type_as")
def type_as(g, self, other):
    """type_as(Tensor self, Tensor other) -> Tensor"""
    return cast_to(g, self, other.dtype) if other.dtype is not None else self


@symbolic("aten::item")
def item(g, self):
    """item(Tensor self) -> Scalar"""
    raw = sh.const(self)
    if raw is not sh.UNKNOWN:
        return Value("", const=raw.item() if isinstance(raw, torch.Tensor) else raw)
    return self if self.rank == 0 else reshape_to(g, self, [])


@symbolic("aten::is_floating_point")
def is_floating_point(g, self):
    """is_floating_point(Tensor self) -> bool"""
    if self.dtype is None:
        sh.value_error("is_floating_point: the input dtype must be known", self)
    return Value("", const=dtypes.is_floating(self.dtype))


def _cast_op(name: str, dtype: torch.dtype):
    def fn(g, self, memory_format=None):
        return cast_to(g, self, dtype)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{name}(Tensor self, MemoryFormat? memory_format=None) -> Tensor"
    return symbolic(f"aten::{name}")(fn)


float_ = _cast_op("float", torch.float32)
double = _cast_op("double", torch.float64)
half = _cast_op("half", torch.float16)
long = _cast_op("long", torch.int64)
int_ = _cast_op("int", torch.int32)
bool_ = _cast_op("bool", torch.bool)


# ---------------------------------------------------------------------------------------------
# Shape helpers shared by the ops below


def axis_of(dim: int, rank: int) -> int:
    return dim + rank if dim < 0 else dim


def shape_parts(g, x: Value, start: int, end: int | None = None) -> Value:
    """``shape(x)[start:end]`` as a 1-D int64 value: a constant when those dims are static."""
    dims = sh.sizes(x)
    end = len(dims) if end is None else end
    part = dims[start:end]
    if all(isinstance(d, int) for d in part):
        return g.constant(part, torch.int64)
    return onnx_ops.slice(g, g.op("Shape", x), [0], [start], [end])


def concat_shape(g, parts: list) -> Value:
    """One 1-D int64 shape from pieces: lists of ints and 1-D int64 values."""
    values = [g.constant(list(p), torch.int64) if isinstance(p, (list, tuple)) else p for p in parts]
    values = [v for v in values if v.shape != (0,)]
    if len(values) == 1:
        return values[0]
    return g.op("Concat", *values, axis_i=0)


def dim_value(g, x: Value, axis: int):
    """Size of ``axis``: an int when static, else a 1-element int64 value."""
    if sh.is_static(x, axis):
        return sh.sizes(x)[axis]
    return onnx_ops.unsqueeze(g, onnx_ops.size(g, x, axis), [0])


def where_all_dtypes(g, condition: Value, a: Value, b: Value) -> Value:
    """Where for every dtype: onnxruntime has no bool, int8 or int16 Where kernels."""
    if a.dtype == torch.bool:
        return g.op("Or", g.op("And", condition, a), g.op("And", g.op("Not", condition), b))
    if a.dtype in (torch.int8, torch.int16):
        wide = g.op("Where", condition, onnx_ops.cast(g, a, torch.int32), onnx_ops.cast(g, b, torch.int32))
        return onnx_ops.cast(g, wide, a.dtype)
    return g.op("Where", condition, a, b)


def require_rank(op: str, x: Value) -> int:
    if x.rank is None:
        sh.value_error(f"{op}: the input rank must be known", x)
    return x.rank


def static_dim(op: str, x: Value, axis: int) -> int:
    if not sh.is_static(x, axis):
        sh.value_error(f"{op}: dim {axis} has a size known only at runtime; this lowering needs it static", x)
    return sh.sizes(x)[axis]


# ---------------------------------------------------------------------------------------------
# Views and layout


@symbolic("aten::unflatten")
@sh.parse_args("v", "i", "v")
def unflatten(g, self, dim, sizes):
    """unflatten.int(Tensor(a) self, int dim, SymInt[] sizes) -> Tensor(a)"""
    rank = require_rank("unflatten", self)
    dim = axis_of(dim, rank)
    dims = sh.sizes(self)
    before = [d if isinstance(d, int) else 0 for d in dims[:dim]]  # Reshape 0 keeps a leading dim
    after = dims[dim + 1:]
    if sh.const(sizes) is sh.UNKNOWN:  # sizes computed from runtime dims: a 1-D int64 piece
        sizes = onnx_ops.cast(g, g.materialize(sizes), torch.int64)
        return g.op("Reshape", self, concat_shape(g, [before, sizes, shape_parts(g, self, dim + 1)]))
    sizes = [int(d) for d in sh.const(sizes)]
    if all(isinstance(d, int) for d in after):
        return g.op("Reshape", self, g.constant(before + list(sizes) + after, torch.int64))
    return g.op("Reshape", self, concat_shape(g, [before, list(sizes), shape_parts(g, self, dim + 1)]))


def _swap_last_two(g, self):
    rank = require_rank("transpose", self)
    if rank < 2:
        return self
    perm = list(range(rank))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    return g.op("Transpose", self, perm_i=perm)


@symbolic("aten::mT")
def mT(g, self):
    """mT(Tensor(a) self) -> Tensor(a)"""
    return _swap_last_two(g, self)


@symbolic("aten::mH")
def mH(g, self):
    """mH(Tensor(a) self) -> Tensor(a); real tensors only, where it is mT"""
    return _swap_last_two(g, self)


@symbolic("aten::adjoint")
def adjoint(g, self):
    """adjoint(Tensor(a) self) -> Tensor(a); real tensors only, where it is mT"""
    return _swap_last_two(g, self)


@symbolic("aten::numpy_T")
def numpy_T(g, self):
    """numpy_T(Tensor(a) self) -> Tensor(a)"""
    rank = require_rank("numpy_T", self)
    if rank < 2:
        return self
    return g.op("Transpose", self, perm_i=list(reversed(range(rank))))


@symbolic("aten::movedim")
def movedim(g, self, source, destination):
    """movedim.intlist(Tensor(a) self, int[] source, int[] destination) -> Tensor(a)"""
    rank = require_rank("movedim", self)
    src, dst = sh.const(source), sh.const(destination)
    src = [axis_of(d, rank) for d in (src if isinstance(src, list) else [src])]
    dst = [axis_of(d, rank) for d in (dst if isinstance(dst, list) else [dst])]
    perm = [-1] * rank
    for s, d in zip(src, dst):
        perm[d] = s
    rest = iter(d for d in range(rank) if d not in src)
    perm = [p if p != -1 else next(rest) for p in perm]
    if perm == list(range(rank)):
        return self
    return g.op("Transpose", self, perm_i=perm)


@symbolic("aten::moveaxis")
def moveaxis(g, self, source, destination):
    """moveaxis.intlist(Tensor(a) self, int[] source, int[] destination) -> Tensor(a)"""
    return movedim(g, self, source, destination)


@symbolic("aten::swapaxes")
def swapaxes(g, self, axis0, axis1):
    """swapaxes(Tensor(a) self, int axis0, int axis1) -> Tensor(a)"""
    return transpose(g, self, axis0, axis1)


@symbolic("aten::swapdims")
def swapdims(g, self, dim0, dim1):
    """swapdims(Tensor(a) self, int dim0, int dim1) -> Tensor(a)"""
    return transpose(g, self, dim0, dim1)


@symbolic("aten::alias")
def alias(g, self):
    """alias(Tensor(a) self) -> Tensor(a)"""
    return self


# ---------------------------------------------------------------------------------------------
# Expand, repeat, tile


def _expand_to(g, self: Value, size) -> Value:
    OPSET.require(g, "ONNX Expand")
    target = sh.const(size)
    if target is not sh.UNKNOWN:
        # torch's -1 keeps the input dim; Expand broadcasting does the same with 1.
        dims = [1 if int(d) == -1 else int(d) for d in target]
        if list(sh.sizes(self) or []) == dims:
            return self
        raw = sh.const(self)
        if isinstance(raw, torch.Tensor) and not self.in_graph and not self.is_param:
            # A constant broadcast keeps its zero strides (as the trace's constant does), so a copy_
            # into a slice sized at runtime can broadcast the small constant again (indexing.copy).
            out = raw.expand(torch.broadcast_shapes(tuple(raw.shape), tuple(dims)))
            return Value("", out.dtype, tuple(out.shape), out)
        return g.op("Expand", self, g.constant(dims, torch.int64))
    if isinstance(size, Value) and size.elements is not None:
        parts = [Value("", const=1) if e.is_const and int(sh.const(e)) == -1 else e for e in size.elements]
        shape = g.materialize(Value("", elements=parts))
        # A runtime entry may be -1 too (a scripted int, a tensor's item) unless it is a dim's size.
        may_be_minus_one = any(not e.is_const and e.sym is None and not _is_size(e) for e in parts)
    else:
        shape = onnx_ops.cast(g, size, torch.int64)
        if shape.rank == 0:
            shape = reshape_to(g, shape, [1])
        may_be_minus_one = True
    if may_be_minus_one:
        # torch's -1 keeps the input's dim: as legacy, 1 at runtime (Expand broadcasts it).
        one = g.constant(1, torch.int64)
        shape = g.op("Where", g.op("Equal", shape, g.constant(-1, torch.int64)), one, shape)
    return g.op("Expand", self, shape)


def _is_size(e: Value) -> bool:
    """True when ``e`` is read off a shape (Shape, then Gather/Slice/Squeeze), so never -1."""
    node = e.producer
    while node is not None and node.op_type in ("Gather", "Slice", "Squeeze", "Unsqueeze", "Reshape", "Cast"):
        node = node.inputs[0].producer if node.inputs else None
    return node is not None and node.op_type in ("Shape", "Size")


@symbolic("aten::expand")
def expand(g, self, size, implicit=None):
    """expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)"""
    return _expand_to(g, self, size)


@symbolic("aten::broadcast_to")
def broadcast_to(g, self, size):
    """broadcast_to(Tensor(a) self, SymInt[] size) -> Tensor(a)"""
    return _expand_to(g, self, size)


@symbolic("aten::expand_as")
def expand_as(g, self, other):
    """expand_as(Tensor(a) self, Tensor other) -> Tensor(a)"""
    OPSET.require(g, "ONNX Expand")
    if sh.static_sizes(self) is not None and sh.static_sizes(self) == sh.static_sizes(other):
        return self
    return g.op("Expand", self, onnx_ops.shape_of(g, other))


def _tile(g, self: Value, repeats: list[int]) -> Value:
    rank = require_rank("repeat", self)
    if len(repeats) > rank:
        self = onnx_ops.unsqueeze(g, self, list(range(len(repeats) - rank)))
    if all(r == 1 for r in repeats):
        return self
    return g.op("Tile", self, g.constant(repeats, torch.int64))


def _tile_runtime(g, self: Value, repeats: Value) -> Value:
    """Tile by repeats known only at runtime (a list with runtime elements or a 1-D tensor)."""
    rank = require_rank("repeat", self)
    if repeats.elements is not None:
        if len(repeats.elements) > rank:
            self = onnx_ops.unsqueeze(g, self, list(range(len(repeats.elements) - rank)))
        return g.op("Tile", self, onnx_ops.cast(g, g.materialize(repeats), torch.int64))
    # The number of repeats is runtime too: Expand to that many leading ones gives the rank.
    repeats = onnx_ops.cast(g, repeats, torch.int64)
    ones = g.op("ConstantOfShape", g.op("Shape", repeats), value_t=torch.ones(1, dtype=torch.int64))
    return g.op("Tile", g.op("Expand", self, ones), repeats)


@symbolic("aten::repeat")
def repeat(g, self, repeats):
    """repeat(Tensor self, SymInt[] repeats) -> Tensor"""
    if sh.const(repeats) is sh.UNKNOWN:
        return _tile_runtime(g, self, repeats)
    return _tile(g, self, sh._get_const(repeats, "is", "repeats"))


@symbolic("aten::tile")
def tile(g, self, dims):
    """tile(Tensor self, SymInt[] dims) -> Tensor"""
    rank = require_rank("tile", self)
    if sh.const(dims) is sh.UNKNOWN:
        if dims.elements is None:
            sh.value_error("tile: dims known only at runtime need a known count", dims)
        ones = [Value("", const=1)] * (rank - len(dims.elements))
        return _tile_runtime(g, self, Value("", elements=ones + list(dims.elements)))
    dims = sh._get_const(dims, "is", "dims")
    return _tile(g, self, [1] * (rank - len(dims)) + list(dims))


@symbolic("aten::repeat_interleave")
def repeat_interleave(g, self, repeats, dim=None, output_size=None):
    """repeat_interleave.self_int(Tensor self, SymInt repeats, int? dim=None, *, SymInt? output_size=None)
    -> Tensor; repeat_interleave.self_Tensor(Tensor self, Tensor repeats, int? dim=None, ...)"""
    if sh.is_none(dim):
        self = reshape_to(g, self, [-1])
        dim = 0
    else:
        dim = axis_of(sh._get_const(dim, "i", "dim"), require_rank("repeat_interleave", self))
    counts = sh.const(repeats)
    if isinstance(counts, torch.Tensor) and counts.numel() == 1:
        counts = int(counts.item())
    if isinstance(counts, int):
        return _repeat_each(g, self, counts, dim)
    if isinstance(counts, torch.Tensor):
        # Known repeats: the gathered positions are a constant.
        index = torch.repeat_interleave(torch.arange(counts.numel()), counts)
        return g.op("Gather", self, g.constant(index, torch.int64), axis_i=dim)
    return _repeat_runtime(g, self, repeats, dim)


def _repeat_each(g, self, count: int, dim: int) -> Value:
    rank = self.rank
    tiled = g.op("Tile", onnx_ops.unsqueeze(g, self, [dim + 1]),
                 g.constant([1] * (dim + 1) + [count] + [1] * (rank - dim - 1), torch.int64))
    dims = sh.sizes(self)
    before = [d if isinstance(d, int) else 0 for d in dims[:dim]]
    after = dims[dim + 1:]
    if all(isinstance(d, int) for d in after):
        return g.op("Reshape", tiled, g.constant(before + [-1] + after, torch.int64))
    return g.op("Reshape", tiled, concat_shape(g, [before, [-1], shape_parts(g, self, dim + 1)]))


def _repeat_runtime(g, self, repeats, dim: int) -> Value:
    """Repeats known only at runtime: output position j takes input i = #(cumsum(repeats) <= j)."""
    OPSET.require(g, "repeats known only at runtime (ONNX CumSum and Range)")
    repeats = onnx_ops.cast(g, repeats, torch.int64)
    length = sh.static_sizes(repeats)
    if not length or length[0] == 1 or not sh.is_static(self, dim):
        # One count (or a count list whose length is known only at runtime, which torch allows
        # to be 1) broadcast over the dim: Expand takes [1] or [size] to [size].
        repeats = g.op("Expand", reshape_to(g, repeats, [-1]), shape_parts(g, self, dim, dim + 1))
    ends = g.op("CumSum", repeats, g.constant(0, torch.int64))
    total = g.op("ReduceSum", repeats, keepdims_i=0)
    positions = g.op("Range", g.constant(0, torch.int64), total, g.constant(1, torch.int64))
    passed = g.op("Not", g.op("Greater", onnx_ops.unsqueeze(g, ends, [0]), onnx_ops.unsqueeze(g, positions, [1])))
    index = onnx_ops.reduce(g, "ReduceSum", onnx_ops.cast(g, passed, torch.int64), [1], False)
    return g.op("Gather", self, index, axis_i=dim)


# ---------------------------------------------------------------------------------------------
# Reordering: flip, roll, rot90


def reverse(g, self: Value, axes: list[int]) -> Value:
    """``self`` reversed along ``axes``: Slice with step -1 (opset 10), or Gather on static dims."""
    if not axes:
        return self
    if not onnx_ops.has_attribute(g, "Slice", "starts"):  # Slice-10: steps, so -1 reverses
        n = len(axes)
        return onnx_ops.slice(g, self, axes, [-1] * n, [-onnx_ops.INT64_MAX] * n, [-1] * n)
    for axis in axes:
        size = sh.sizes(self)[axis] if sh.is_static(self, axis) else None
        if size is None:
            OPSET.require(g, "a dynamic dim (Slice with negative steps)", self)
        self = g.op("Gather", self, g.constant(list(range(size - 1, -1, -1)), torch.int64), axis_i=axis)
    return self


@symbolic("aten::flip")
@sh.parse_args("v", "is")
def flip(g, self, dims):
    """flip(Tensor self, int[] dims) -> Tensor"""
    rank = require_rank("flip", self)
    return reverse(g, self, sorted({axis_of(d, rank) for d in dims}))


@symbolic("aten::fliplr")
def fliplr(g, self):
    """fliplr(Tensor self) -> Tensor"""
    return reverse(g, self, [1])


@symbolic("aten::flipud")
def flipud(g, self):
    """flipud(Tensor self) -> Tensor"""
    return reverse(g, self, [0])


@symbolic("aten::roll")
@sh.parse_args("v", "v", "is")
def roll(g, self, shifts, dims):
    """roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor"""
    shifts = [s if sh.const(s) is sh.UNKNOWN else sh.const(s) for s in sh.unpack_list(shifts)] \
        if sh.is_value(shifts) else list(shifts)
    if not dims:
        # torch rolls the flattened tensor and restores the shape.
        flat = reshape_to(g, self, [-1])
        rolled = roll(g, flat, shifts[:1], [0])
        return g.op("Reshape", rolled, onnx_ops.shape_of(g, self))
    if len(shifts) != len(dims):
        sh.value_error(f"roll: {len(shifts)} shifts for {len(dims)} dims", self)
    rank = require_rank("roll", self)
    for shift, dim in zip(shifts, dims):
        dim = axis_of(dim, rank)
        if isinstance(shift, Value) and shift.is_const:
            shift = shift.const
        if isinstance(shift, torch.Tensor):
            shift = int(shift.item())
        if isinstance(shift, int) and sh.is_static(self, dim):
            size = sh.sizes(self)[dim]
            shift = shift % size if size else 0
            if shift == 0:
                continue
            tail = onnx_ops.slice(g, self, [dim], [size - shift], [onnx_ops.INT64_MAX])
            head = onnx_ops.slice(g, self, [dim], [0], [size - shift])
        elif isinstance(shift, int) and shift == 0:
            continue
        else:
            self = _roll_runtime(g, self, shift, dim)
            continue
        self = g.op("Concat", tail, head, axis_i=dim)
    return self


def _roll_runtime(g, self: Value, shift, dim: int) -> Value:
    """``self`` rolled by ``shift`` along a dim whose size (or the shift) is known only at
    runtime. torch takes the shift modulo the size, so it may exceed the size or be negative."""
    if not isinstance(shift, Value):
        shift = g.constant(shift, torch.int64)
    shift = onnx_ops.cast(g, shift, torch.int64)
    if shift.rank != 0:
        shift = reshape_to(g, shift, [])
    size = onnx_ops.size(g, self, dim)
    # An empty dim rolls to itself; dividing by its 0 size would trap.
    divisor = g.op("Add", size, onnx_ops.cast(g, g.op("Equal", size, g.constant(0, torch.int64)), torch.int64))
    if not onnx_ops.has_op(g, "Mod"):
        # No Mod, no Slice with runtime bounds: gather positions (i - shift) mod size. Two rounds
        # of a - (a / n) * n give the non-negative remainder whether Div truncates or floors.
        def rem(a):
            return g.op("Sub", a, g.op("Mul", g.op("Div", a, divisor), divisor))

        position = rem(g.op("Sub", arange_between(g, 0, size, 1, torch.int64), shift))  # in (-n, n)
        position = rem(g.op("Add", position, divisor))  # in [0, n)
        return g.op("Gather", self, position, axis_i=dim)
    split = g.op("Sub", size, g.op("Mod", shift, divisor, fmod_i=0))
    tail = onnx_ops.slice(g, self, [dim], [split], [onnx_ops.INT64_MAX])
    head = onnx_ops.slice(g, self, [dim], [0], [split])
    return g.op("Concat", tail, head, axis_i=dim)


@symbolic("aten::rot90")
@sh.parse_args("v", "i", "is")
def rot90(g, self, k=1, dims=(0, 1)):
    """rot90(Tensor self, int k=1, int[] dims=[0,1]) -> Tensor"""
    rank = require_rank("rot90", self)
    d0, d1 = axis_of(dims[0], rank), axis_of(dims[1], rank)
    k %= 4
    perm = list(range(rank))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    if k == 1:
        return g.op("Transpose", reverse(g, self, [d1]), perm_i=perm)
    if k == 2:
        return reverse(g, self, sorted([d0, d1]))
    if k == 3:
        return g.op("Transpose", reverse(g, self, [d0]), perm_i=perm)
    return self


# ---------------------------------------------------------------------------------------------
# Diagonals and triangles (static sizes of the matrix dims; the other dims may be dynamic)


def diagonal_layout(g, self, offset: int, dim1: int, dim2: int):
    """Move dim1, dim2 last and merge them: returns (flat, n, m, positions of the diagonal)."""
    rank = require_rank("diagonal", self)
    dim1, dim2 = axis_of(dim1, rank), axis_of(dim2, rank)
    n, m = static_dim("diagonal", self, dim1), static_dim("diagonal", self, dim2)
    rest = [d for d in range(rank) if d not in (dim1, dim2)]
    perm = rest + [dim1, dim2]
    moved = self if perm == list(range(rank)) else g.op("Transpose", self, perm_i=perm)
    flat = g.op("Reshape", moved, g.constant([0] * len(rest) + [n * m], torch.int64))
    rows = range(max(0, -offset), min(n, m - offset)) if -n < offset < m else range(0)
    positions = [r * m + r + offset for r in rows]
    return flat, n, m, perm, positions


@symbolic("aten::diagonal")
@sh.parse_args("v", "i", "i", "i")
def diagonal(g, self, offset=0, dim1=0, dim2=1):
    """diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)"""
    rank = require_rank("diagonal", self)
    if not (sh.is_static(self, dim1 % rank) and sh.is_static(self, dim2 % rank)):
        OPSET.require(g, "a matrix sized at runtime (ONNX Range)", self)
        return _diagonal_runtime(g, self, offset, axis_of(dim1, rank), axis_of(dim2, rank))
    flat, n, m, perm, positions = diagonal_layout(g, self, offset, dim1, dim2)
    return g.op("Gather", flat, g.constant(positions, torch.int64), axis_i=len(perm) - 2)


def _diagonal_runtime(g, self, offset: int, dim1: int, dim2: int) -> Value:
    """The diagonal of an n x m matrix sized at runtime: rows r in [max(0, -offset), min(n, m - offset))
    of the flattened matrix at r * (m + 1) + offset (Range, opset 11)."""
    rank = self.rank
    rest = [d for d in range(rank) if d not in (dim1, dim2)]
    perm = rest + [dim1, dim2]
    moved = self if perm == list(range(rank)) else g.op("Transpose", self, perm_i=perm)
    flat = g.op("Reshape", moved, g.constant([0] * len(rest) + [-1], torch.int64))
    n, m = onnx_ops.size(g, self, dim1), onnx_ops.size(g, self, dim2)
    cols_left = g.op("Sub", m, g.constant(offset, torch.int64))
    end = g.op("Where", g.op("Less", n, cols_left), n, cols_left)  # (int Min only from opset 12)
    # Range over an empty span (end <= start) is empty, as torch's diagonal is then
    rows = g.op("Range", g.constant(max(0, -offset), torch.int64), end, g.constant(1, torch.int64))
    positions = g.op("Add", g.op("Mul", rows, g.op("Add", m, g.constant(1, torch.int64))),
                     g.constant(offset, torch.int64))
    return g.op("Gather", flat, positions, axis_i=len(rest))


@symbolic("aten::diag")
@sh.parse_args("v", "i")
def diag(g, self, diagonal_=0):
    """diag(Tensor self, int diagonal=0) -> Tensor"""
    if self.rank == 2:
        return diagonal(g, self, diagonal_, 0, 1)
    if self.rank != 1:
        sh.value_error("diag: the input must be 1-D or 2-D", self)
    n = static_dim("diag", self, 0)
    size = n + abs(diagonal_)
    # Gather from [x..., 0]: each cell of the matrix names the element it holds, or the zero.
    index = torch.full((size, size), n, dtype=torch.int64)
    for i in range(n):
        r, c = (i, i + diagonal_) if diagonal_ >= 0 else (i - diagonal_, i)
        index[r, c] = i
    padded = g.op("Concat", self, g.constant([0], self.dtype), axis_i=0)
    return g.op("Gather", padded, g.constant(index, torch.int64), axis_i=0)


def _triangle(g, self, diagonal_, lower: bool) -> Value:
    """``diagonal_`` an int, or a runtime value (Trilu's k input, opset 14)."""
    rank = require_rank("tril" if lower else "triu", self)
    if rank < 2:
        sh.value_error("tril/triu need at least 2 dims", self)
    if sh.const(diagonal_) is not sh.UNKNOWN:
        diagonal_ = sh._get_const(diagonal_, "i", "diagonal")
    else:
        OPSET.require(g, "a diagonal known only at runtime (ONNX Trilu)", diagonal_)
    if onnx_ops.has_op(g, "Trilu"):
        k = g.constant(diagonal_, torch.int64) if isinstance(diagonal_, int) else \
            onnx_ops.cast(g, diagonal_, torch.int64)
        k = reshape_to(g, k, []) if k.rank else k
        if self.dtype in (torch.int8, torch.int16, torch.uint8):  # onnxruntime's Trilu lacks these
            wide = g.op("Trilu", onnx_ops.cast(g, self, torch.int64), k, upper_i=0 if lower else 1)
            return onnx_ops.cast(g, wide, self.dtype)
        return g.op("Trilu", self, k, upper_i=0 if lower else 1)
    n, m = sh.sizes(self)[-2:]
    if not isinstance(n, int) or not isinstance(m, int):
        OPSET.require(g, "a matrix of dynamic size (ONNX Trilu)", self)
    OPSET.require(g, "ONNX Where", self)
    ones = torch.ones(n, m, dtype=torch.bool)
    mask = g.constant(torch.tril(ones, diagonal_) if lower else torch.triu(ones, diagonal_))
    if self.dtype == torch.bool:
        return g.op("And", mask, self)
    return where_all_dtypes(g, mask, self, g.constant(0, self.dtype))


@symbolic("aten::tril")
def tril(g, self, diagonal_=0):
    """tril(Tensor self, int diagonal=0) -> Tensor"""
    return _triangle(g, self, diagonal_, lower=True)


@symbolic("aten::triu")
def triu(g, self, diagonal_=0):
    """triu(Tensor self, int diagonal=0) -> Tensor"""
    return _triangle(g, self, diagonal_, lower=False)


# ---------------------------------------------------------------------------------------------
# Windows, strides and broadcasting


@symbolic("aten::unfold")
@sh.parse_args("v", "i", "i", "i")
def unfold(g, self, dimension, size, step):
    """unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)"""
    rank = require_rank("unfold", self)
    if rank == 0:
        return onnx_ops.unsqueeze(g, self, [0])
    dim = axis_of(dimension, rank)
    length = static_dim("unfold", self, dim)
    count = (length - size) // step + 1
    # windows[i, j] = i * step + j, gathered along dim, then the window axis moves last
    index = torch.arange(count).unsqueeze(1) * step + torch.arange(size).unsqueeze(0)
    windows = g.op("Gather", self, g.constant(index, torch.int64), axis_i=dim)
    perm = list(range(dim + 1)) + list(range(dim + 2, rank + 1)) + [dim + 1]
    return windows if perm == list(range(rank + 1)) else g.op("Transpose", windows, perm_i=perm)


@symbolic("aten::as_strided")
def as_strided(g, self, size, stride, storage_offset=None):
    """as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a)"""
    # ONNX tensors have no strides: read the elements of the contiguous input that the strides name.
    dims = sh._get_const(size, "is", "size")
    strides = sh._get_const(stride, "is", "stride")
    offset = 0 if storage_offset is None or sh.is_none(storage_offset) else sh._get_const(storage_offset, "i", "x")
    positions = torch.full(dims, offset, dtype=torch.int64)
    for axis, (n, s) in enumerate(zip(dims, strides)):
        shape = [1] * len(dims)
        shape[axis] = n
        positions = positions + (torch.arange(n) * s).reshape(shape)
    flat = g.op("Reshape", self, g.constant([-1], torch.int64))
    return g.op("Gather", flat, g.constant(positions, torch.int64), axis_i=0)


@symbolic("aten::broadcast_tensors")
def broadcast_tensors(g, tensors):
    """broadcast_tensors(Tensor[] tensors) -> Tensor[]"""
    values = sh.unpack_list(tensors)
    static = [sh.static_sizes(v) for v in values]
    if all(s is not None and s == static[0] for s in static):
        return values
    OPSET.require(g, "ONNX Expand")
    if all(s is not None for s in static):
        shape = list(torch.broadcast_shapes(*[tuple(s) for s in static]))
        return [v if static[k] == shape else g.op("Expand", v, g.constant(shape, torch.int64))
                for k, v in enumerate(values)]
    # Expand's output shape is the broadcast of its input's and the target's: chain them
    probe = g.constant(0, torch.int64)
    for v in values:
        probe = g.op("Expand", probe, g.op("Shape", v))
    shape = g.op("Shape", probe)
    return [g.op("Expand", v, shape) for v in values]


@symbolic("aten::_shape_as_tensor")
def _shape_as_tensor(g, self):
    """_shape_as_tensor(Tensor self) -> Tensor"""
    return onnx_ops.shape_of(g, self)


@symbolic("aten::_reshape_from_tensor")
def _reshape_from_tensor(g, self, shape):
    """_reshape_from_tensor(Tensor self, Tensor shape) -> Tensor"""
    return reshape_to(g, self, shape)
