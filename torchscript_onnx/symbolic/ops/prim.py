"""prim:: ops and the scalar plumbing around sizes (aten::size, aten::Int, prim::NumToTensor).

These mostly move Python values and lists around: a static size stays a Python int, a dynamic
one becomes a 0-d int64 value computed at runtime."""

from __future__ import annotations

import torch

from torchscript_onnx.builder import dtypes, jit_walk, onnx_ops
from torchscript_onnx.builder.ir import Value

from .. import symbolic_helper as sh
from ..registry import symbolic
from .math import binary


def _jit_constant(node: torch._C.Node):
    output = node.output()
    if not node.hasAttribute("value"):
        return None
    kind = node.kindOf("value")
    if kind == "t":
        return node.t("value")
    if kind == "i":
        value = node.i("value")
        return bool(value) if isinstance(output.type(), torch._C.BoolType) else value
    if kind == "f":
        return node.f("value")
    if kind == "s":  # a string, or a device stored as its name ("cpu")
        text = node.s("value")
        return torch.device(text) if isinstance(output.type(), torch._C.DeviceObjType) else text
    return output.toIValue()


@symbolic("prim::Constant")
def prim_constant(g, **attrs):
    """prim::Constant[value=...]() -> a Python value (tensor, number, list, string, None, device)."""
    value = _jit_constant(g.original_node)
    if isinstance(value, torch.Tensor):
        return Value("", value.dtype, tuple(value.shape), value)
    return Value("", const=value)


@symbolic("prim::ListConstruct")
def prim_list_construct(g, *elements):
    """prim::ListConstruct(...) -> a list: constant when every element is, else kept element-wise."""
    if all(e.is_const for e in elements):
        return _typed_as_captured(g, Value("", const=[e.const for e in elements]))
    return _typed_as_captured(g, Value("", elements=list(elements)))


@symbolic("prim::TupleConstruct")
def prim_tuple_construct(g, *elements):
    """prim::TupleConstruct(...) -> a tuple, kept element-wise."""
    return _typed_as_captured(g, Value("", elements=list(elements)))


def _typed_as_captured(g, value: Value) -> Value:
    """The list or tuple keeps the type the captured graph gave it, which legacy symbolics see.
    One of JIT constants only is a constant to legacy (its constant propagation folds it into one
    ``onnx::Constant``), and so it stays here."""
    node = g.original_node
    if node is not None and node.outputsSize() == 1 and \
            not all(i.node().kind() == "prim::Constant" for i in jit_walk.inputs(node)):
        value.jit_type = node.output().type()
    return value


@symbolic("prim::ListUnpack")
def prim_list_unpack(g, packed):
    """prim::ListUnpack(t[] list) -> the elements."""
    return tuple(sh.unpack_list(packed))


@symbolic("prim::TupleUnpack")
def prim_tuple_unpack(g, packed):
    """prim::TupleUnpack(tuple) -> the elements."""
    return tuple(sh.unpack_list(packed))


@symbolic("prim::NumToTensor")
def prim_num_to_tensor(g, number):
    """prim::NumToTensor(Scalar a) -> Tensor: a scalar is already a 0-d value here."""
    return number


@symbolic("aten::Int")
def aten_int(g, value):
    """aten::Int.Tensor(Tensor a) -> int"""
    return _to_python_number(g, value, int, torch.int64)


@symbolic("aten::Float")
def aten_float(g, value):
    """aten::Float.Tensor(Tensor a) -> float"""
    return _to_python_number(g, value, float, torch.float64)


@symbolic("aten::IntImplicit")
def aten_int_implicit(g, value):
    """aten::IntImplicit(Tensor a) -> int: a 0-d tensor used where an int goes (``x[i:]`` with a tensor i)"""
    return _to_python_number(g, value, int, torch.int64)


@symbolic("aten::FloatImplicit")
def aten_float_implicit(g, value):
    """aten::FloatImplicit(Tensor a) -> float"""
    return _to_python_number(g, value, float, torch.float64)


@symbolic("aten::ScalarImplicit")
def aten_scalar_implicit(g, value):
    """aten::ScalarImplicit(Tensor a) -> Scalar"""
    return value if not value.is_const else Value("", const=value.const.item()
                                                  if isinstance(value.const, torch.Tensor) else value.const)


def _to_python_number(g, value: Value, kind, dtype: torch.dtype):
    raw = sh.const(value)
    if raw is not sh.UNKNOWN:
        return Value("", const=kind(raw.item() if isinstance(raw, torch.Tensor) else raw))
    number = onnx_ops.cast(g, value, dtype)
    if value.rank:  # float(t) of a one-element tensor of any rank is a number: 0-d
        number = g.op("Reshape", number, g.constant(torch.zeros(0, dtype=torch.int64)))
    return number


@symbolic("aten::size")
def size(g, self, dim=None):
    """aten::size.int(Tensor self, int dim) -> int; aten::size(Tensor self) -> int[]"""
    if dim is None:
        dims = sh.sizes(self)
        if dims is not None and all(isinstance(d, int) for d in dims):
            return Value("", const=list(dims))
        shape = g.op("Shape", self)
        return Value("", elements=[_gather_scalar(g, shape, k) for k in range(len(dims))]) \
            if dims is not None else shape
    axis = sh.const(dim)
    dims = sh.sizes(self)
    if axis is sh.UNKNOWN:  # x.size(d) in a loop over d: the rank is known, so wrap d and gather
        if dims is None:
            sh.value_error("size(dim) with a runtime dim needs a tensor of known rank", self)
        rank = g.constant(len(dims), torch.int64)
        wrapped = g.op("Mod", g.op("Add", onnx_ops.cast(g, dim, torch.int64), rank), rank)
        return g.op("Gather", g.op("Shape", self), wrapped, axis_i=0)
    if dims is not None and isinstance(dims[axis], int):
        return Value("", const=dims[axis])
    return onnx_ops.size(g, self, axis)


@symbolic("aten::stride")
def stride(g, self, dim=None):
    """aten::stride(Tensor self) -> int[]; aten::stride.int(Tensor self, int dim) -> int"""
    # ONNX tensors have no memory layout. A graph input arrives contiguous, so its strides are the
    # products of the sizes after each dim; a tensor computed in the graph may be a view with other
    # strides in torch (x.t()), which nothing in ONNX tells.
    if not any(self is v for v in g.root.graph.inputs):
        sh.value_error("stride() of a tensor computed in the graph: torch may give it a view's strides, which ONNX "
                       "tensors do not have; only a graph input's (contiguous) strides are known", self)
    dims = sh.sizes(self)
    if dims is None:
        sh.value_error("stride() needs a tensor of known rank", self)
    if all(isinstance(d, int) for d in dims):
        strides = [int(torch.tensor(dims[k + 1:], dtype=torch.int64).prod()) for k in range(len(dims))]
    else:  # sizes known at runtime: each stride the product of the runtime sizes after its dim
        shape = g.op("Shape", self)
        strides = [onnx_ops.reduce(g, "ReduceProd", onnx_ops.slice(g, shape, [0], [k + 1], [len(dims)]), [0], False)
                   if k + 1 < len(dims) else 1 for k in range(len(dims))]
    if dim is None:
        return Value("", const=strides) if all(isinstance(s, int) for s in strides) \
            else Value("", elements=[s if isinstance(s, Value) else Value("", const=s) for s in strides])
    axis = sh._get_const(dim, "i", "dim")
    picked = strides[axis]
    return picked if isinstance(picked, Value) else Value("", const=picked)


def _gather_scalar(g, shape: Value, k: int) -> Value:
    return g.op("Gather", shape, g.constant(k, torch.int64), axis_i=0)


@symbolic("aten::dim")
def dim(g, self):
    """aten::dim(Tensor self) -> int"""
    return Value("", const=self.rank)


@symbolic("aten::numel")
def numel(g, self):
    """aten::numel(Tensor self) -> int"""
    dims = sh.static_sizes(self)
    if dims is not None:
        return Value("", const=int(torch.Size(dims).numel()))
    return g.op("Size", self)


@symbolic("prim::device")
def prim_device(g, self):
    """prim::device(Tensor a) -> Device"""
    return Value("", const=torch.device("cpu"))


@symbolic("prim::dtype")
def prim_dtype(g, self):
    """prim::dtype(Tensor a) -> int: the ScalarType index"""
    return Value("", const=dtypes.TORCH_TO_SCALAR_TYPE[self.dtype])


@symbolic("prim::layout")
def prim_layout(g, self):
    """prim::layout(Tensor a) -> Layout: exported tensors are strided (torch.strided is 0)"""
    return Value("", const=0)


@symbolic("prim::type")
def prim_type(g, device):
    """prim::type(Device self) -> str: the device type ("cpu")"""
    return Value("", const=device.const.type if isinstance(device.const, torch.device) else "cpu")


@symbolic("prim::data")
def prim_data(g, self):
    """prim::data(Tensor(a) a) -> Tensor(a)"""
    return self


@symbolic("prim::tolist")
def prim_tolist(g, self, dim, elem_type):
    """prim::tolist(Tensor a, int dim, int elem_type) -> list: a list of at most one dimension stays the
    tensor it came from (ONNX has no lists of numbers), as in legacy"""
    if sh.const(dim, None) not in (0, 1):
        sh.value_error("tolist: only tensors of rank 0 or 1 convert (ONNX has no nested lists)", self)
    return self


@symbolic("prim::GetAttr")
def prim_get_attr(g, obj, **attrs):
    """prim::GetAttr[name=...](module) -> the attribute: a parameter, submodule or Python value."""
    name = g.original_node.s("name")
    owner = obj.const
    attr = getattr(owner, name)
    if isinstance(attr, torch.Tensor):
        return g.param(attr)
    return Value("", const=attr)


@symbolic("aten::detach")
def detach(g, self):
    """aten::detach(Tensor(a) self) -> Tensor(a)"""
    return self


@symbolic("aten::set_")
def set_(g, self, source):
    """set_.source_Tensor(Tensor(a!) self, Tensor source) -> Tensor(a!): self becomes source"""
    return source


@symbolic("aten::contiguous")
def contiguous(g, self, memory_format=None):
    """aten::contiguous(Tensor(a) self, *, MemoryFormat memory_format=contiguous_format) -> Tensor(a)"""
    return self


@symbolic("aten::clone")
def clone(g, self, memory_format=None):
    """aten::clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor"""
    return self


@symbolic("aten::lift_fresh")
def lift_fresh(g, self):
    """aten::lift_fresh(Tensor(a) self) -> Tensor(a)"""
    return self


@symbolic("aten::lift")
def lift(g, self):
    """aten::lift(Tensor self) -> Tensor: a constant tensor made a graph value, nothing to compute"""
    return self


@symbolic("aten::is_pinned")
def is_pinned(g, self, device=None):
    """aten::is_pinned(Tensor self, Device? device=None) -> bool: ONNX tensors are never in pinned
    (page-locked) memory; the legacy exporter returns nothing here, so code that tests it fails there"""
    return Value("", const=False)


def _python_extreme(g, op_type: str, pick, values: list):
    """Python's max/min of numbers: folded when all are known, else ONNX Max/Min in their common dtype."""
    raws = [sh.const(v) for v in values]
    if sh.UNKNOWN not in raws:
        return Value("", const=pick(r.item() if isinstance(r, torch.Tensor) else r for r in raws))
    result = values[0]
    for value in values[1:]:
        result = binary(g, op_type, result, value)
    return result


@symbolic("prim::max")
def prim_max(g, a, b=None):
    """prim::max.int(int a, int b) -> int; prim::max.float(...); prim::max.int_list(int[] l) -> int"""
    return _python_extreme(g, "Max", max, sh.unpack_list(a) if b is None else [a, b])


@symbolic("prim::min")
def prim_min(g, a, b=None):
    """prim::min.int(int a, int b) -> int; prim::min.float(...); prim::min.int_list(int[] l) -> int"""
    return _python_extreme(g, "Min", min, sh.unpack_list(a) if b is None else [a, b])
