"""Shape and layout ops at opset 9: view/reshape, flatten, transpose, cat, squeeze, casts."""

from __future__ import annotations

import torch

from torchscript_onnx import dtypes
from torchscript_onnx.ir import Value

from .. import onnx_ops
from .. import symbolic_helper as sh
from ..registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(9)


def reshape_to(g, self: Value, shape) -> Value:
    """Reshape to ``shape``: a constant list, a list with runtime elements, or a 1-D int64 value."""
    if isinstance(shape, Value) and shape.elements is None and not shape.is_const:
        return g.op("Reshape", self, onnx_ops.cast(g, shape, torch.int64))
    target = sh.const(shape)
    if target is not sh.UNKNOWN:
        return g.op("Reshape", self, g.constant([int(d) for d in target], torch.int64))
    return g.op("Reshape", self, shape)


@_onnx_symbolic("aten::view")
def view(g, self, size):
    """view(Tensor(a) self, SymInt[] size) -> Tensor(a)"""
    return reshape_to(g, self, size)


@_onnx_symbolic("aten::reshape")
def reshape(g, self, shape):
    """reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)"""
    return reshape_to(g, self, shape)


@_onnx_symbolic("aten::view_as")
def view_as(g, self, other):
    """view_as(Tensor(a) self, Tensor other) -> Tensor(a)"""
    return g.op("Reshape", self, onnx_ops.shape_of(g, other))


@_onnx_symbolic("aten::reshape_as")
def reshape_as(g, self, other):
    """reshape_as(Tensor(a) self, Tensor other) -> Tensor(a)"""
    return g.op("Reshape", self, onnx_ops.shape_of(g, other))


@_onnx_symbolic("aten::flatten")
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
        if start == 1:
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


@_onnx_symbolic("aten::t")
def t(g, self):
    """t(Tensor(a) self) -> Tensor(a)"""
    if self.rank is not None and self.rank < 2:
        return self
    return g.op("Transpose", self, perm_i=[1, 0])


@_onnx_symbolic("aten::transpose")
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


@_onnx_symbolic("aten::permute")
@sh.parse_args("v", "is")
def permute(g, self, dims):
    """permute(Tensor(a) self, int[] dims) -> Tensor(a)"""
    rank = len(dims)
    perm = [d % rank for d in dims]
    if perm == list(range(rank)):
        return self
    return g.op("Transpose", self, perm_i=perm)


@_onnx_symbolic("aten::unsqueeze")
@sh.parse_args("v", "i")
def unsqueeze(g, self, dim):
    """unsqueeze(Tensor(a) self, int dim) -> Tensor(a)"""
    if dim < 0:
        if self.rank is None:
            sh.value_error("unsqueeze with a negative dim needs a known rank", self)
        dim += self.rank + 1
    return onnx_ops.unsqueeze(g, self, [dim])


@_onnx_symbolic("aten::squeeze")
def squeeze(g, self, dim=None):
    """squeeze.dim(Tensor(a) self, int dim) -> Tensor(a); squeeze(Tensor(a) self) -> Tensor(a)"""
    dims = sh.sizes(self)
    if dim is None or sh.is_none(dim):
        if dims is not None and all(isinstance(d, int) for d in dims):
            axes = [i for i, d in enumerate(dims) if d == 1]
            return onnx_ops.squeeze(g, self, axes) if axes else self
        return onnx_ops.squeeze(g, self)
    axes = sh.const(dim)
    axes = axes if isinstance(axes, list) else [axes]
    rank = len(dims) if dims is not None else None
    keep = []
    for axis in axes:
        axis = axis % rank if rank else axis
        size = dims[axis] if dims is not None else None
        if size == 1:
            keep.append(axis)
        elif size is None or isinstance(size, str):
            sh.value_error(f"squeeze: dim {axis} has a size known only at runtime; torch squeezes it only "
                           "when it is 1, which ONNX cannot decide", self)
    return onnx_ops.squeeze(g, self, keep) if keep else self


@_onnx_symbolic("aten::cat")
def cat(g, tensors, dim):
    """cat(Tensor[] tensors, int dim=0) -> Tensor"""
    values = [v for v in sh.unpack_list(tensors) if not _is_empty_1d(v)]
    dim = sh._get_const(dim, "i", "dim")
    if len(values) == 1:
        return values[0]
    from .math import as_operand

    dtype = g.output_dtype() or sh.promote_types(*values)
    return g.op("Concat", *[as_operand(g, v, dtype) for v in values], axis_i=dim)


def _is_empty_1d(v: Value) -> bool:
    """torch.cat skips 1-D empty tensors (legacy behaviour)."""
    return v.shape == (0,)


@_onnx_symbolic("aten::stack")
def stack(g, tensors, dim):
    """stack(Tensor[] tensors, int dim=0) -> Tensor"""
    values = sh.unpack_list(tensors)
    dim = sh._get_const(dim, "i", "dim")
    rank = values[0].rank
    if dim < 0:
        dim += rank + 1
    return g.op("Concat", *[onnx_ops.unsqueeze(g, v, [dim]) for v in values], axis_i=dim)


def cast_to(g, self: Value, dtype: torch.dtype) -> Value:
    return onnx_ops.cast(g, self, dtype)


@_onnx_symbolic("aten::to")
def to(g, self, *args):
    """to.dtype(Tensor self, ScalarType dtype, ...) / to.device(...) / to.other(Tensor other, ...)"""
    dtype = g.output_dtype() or _dtype_from_to_args(args)
    return self if dtype is None else cast_to(g, self, dtype)


def _dtype_from_to_args(args) -> torch.dtype | None:
    for arg in args:
        if isinstance(arg, Value) and not arg.is_const and arg.dtype is not None:
            return arg.dtype  # to.other
        raw = sh.const(arg, None)
        if isinstance(raw, int) and not isinstance(raw, bool):
            return dtypes.from_scalar_type(raw)
    return None


@_onnx_symbolic("aten::type_as")
def type_as(g, self, other):
    """type_as(Tensor self, Tensor other) -> Tensor"""
    return cast_to(g, self, other.dtype) if other.dtype is not None else self


def _cast_op(name: str, dtype: torch.dtype):
    def fn(g, self, memory_format=None):
        return cast_to(g, self, dtype)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{name}(Tensor self, MemoryFormat? memory_format=None) -> Tensor"
    return _onnx_symbolic(f"aten::{name}")(fn)


float_ = _cast_op("float", torch.float32)
double = _cast_op("double", torch.float64)
half = _cast_op("half", torch.float16)
long = _cast_op("long", torch.int64)
int_ = _cast_op("int", torch.int32)
bool_ = _cast_op("bool", torch.bool)
