"""Tensor creation at opset 9: zeros/ones/full/empty (plain, _like, new_), arange, linspace, eye,
tril/triu_indices, and the random ops (rand, randn, randint, bernoulli, normal, multinomial).

Sizes may hold runtime elements (``torch.zeros(x.size(0), 3)``): they become one 1-D int64 value
and a ConstantOfShape (opset 9+) or an Expand of the fill value (opset 8). Sizes, ranges and
indices known at export time become constants (small ones fold; large fills stay ConstantOfShape).

The versions for higher opsets follow, each registered with ``since=N``: opset 15."""

from __future__ import annotations

import math
import warnings

import torch

from torchscript_onnx.builder import dtypes, onnx_ops
from torchscript_onnx.builder.folding import MAX_FOLDED_ELEMENTS
from torchscript_onnx.builder.ir import Value

from .. import symbolic_helper as sh
from ..registry import declare_opset_requirements, symbolic
from .operand_types import as_operand, dtype_arg

# The conditions under which a conversion here needs more than opset 7 (OPSET.require states
# them) -> the lowest opset that meets each; a registration at 9 serves 7 and 8 where ONNX allows.
OPSET = declare_opset_requirements({}, unlisted={
    "a fill value known only at runtime": 8,
    "a size known only at runtime": 8,
    "a size known only at runtime (ONNX EyeLike)": 9,
    "arguments known only at runtime": 9,
    "bounds known only at runtime": 9,
})


# onnxruntime samples float and double only (the ops also allow float16): others sample float32 and cast.
_RANDOM_TYPES = (torch.float32, torch.float64)


# ---------------------------------------------------------------------------------------------
# Helpers


def creation_dtype(g, dtype, default: torch.dtype | None = None) -> torch.dtype:
    """The dtype the trace recorded for the result, else the ``dtype`` argument, else ``default``."""
    return g.output_dtype() or dtype_arg(dtype) or default or torch.get_default_dtype()


def static_shape(size) -> list[int] | None:
    raw = sh.const(size, None) if isinstance(size, Value) else size
    if isinstance(raw, torch.Tensor):
        raw = raw.tolist()
    if isinstance(raw, int):
        return [raw]
    if isinstance(raw, (list, tuple)):  # 0-d integer tensors stand for ints in scripted size lists
        raw = [d.item() if isinstance(d, torch.Tensor) and d.dim() == 0 and not d.is_floating_point() else d
               for d in raw]
    if isinstance(raw, (list, tuple)) and all(isinstance(d, int) for d in raw):
        return [int(d) for d in raw]
    return None


def shape_value(g, size) -> Value:
    """``size`` (constant list, list with runtime elements, or 1-D tensor) as a 1-D int64 value."""
    dims = static_shape(size)
    if dims is not None:
        return g.constant(dims, torch.int64)
    if isinstance(size, Value) and size.elements is not None:
        return g.materialize(size)
    if isinstance(size, Value) and size.rank == 1:
        return onnx_ops.cast(g, size, torch.int64)
    if isinstance(size, Value) and size.rank == 0:  # one runtime int where int[] is expected (script)
        return onnx_ops.unsqueeze(g, onnx_ops.cast(g, size, torch.int64), [0])
    sh.value_error("expected a list of sizes", size)


def filled(g, size, fill, dtype: torch.dtype) -> Value:
    """A tensor of ``size`` filled with ``fill`` (a Python number or a 0-d runtime value) of ``dtype``."""
    dims = static_shape(size)
    number = sh.const(fill, sh.UNKNOWN) if isinstance(fill, Value) else fill
    if isinstance(number, torch.Tensor) and number.numel() == 1:
        number = number.item()
    if number is sh.UNKNOWN:  # the fill value is computed at runtime: broadcast it
        OPSET.require(g, "a fill value known only at runtime", fill)
        scalar = onnx_ops.cast(g, fill, dtype)
        if scalar.rank:
            scalar = g.op("Reshape", scalar, g.constant([], torch.int64))
        return g.op("Expand", scalar, shape_value(g, size))
    if onnx_ops.has_op(g, "ConstantOfShape"):
        value = torch.tensor([number], dtype=dtype)
        return g.op("ConstantOfShape", shape_value(g, size), value_t=value)
    if dims is not None:
        return g.constant(torch.full(dims, number, dtype=dtype))
    OPSET.require(g, "a size known only at runtime", size)
    return g.op("Expand", g.constant(number, dtype), shape_value(g, size))


def filled_like(g, self: Value, fill, dtype: torch.dtype) -> Value:
    dims = sh.static_sizes(self)
    if dims is not None or onnx_ops.has_op(g, "ConstantOfShape"):
        return filled(g, dims if dims is not None else onnx_ops.shape_of(g, self), fill, dtype)
    OPSET.require(g, "a size known only at runtime", self)
    return filled(g, g.op("Shape", self), fill, dtype)


# ---------------------------------------------------------------------------------------------
# zeros / ones / full / empty


@symbolic("aten::zeros")
def zeros(g, size, dtype=None, layout=None, device=None, pin_memory=None):
    """zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None,
    bool? pin_memory=None) -> Tensor"""
    return filled(g, size, 0, creation_dtype(g, dtype))


@symbolic("aten::ones")
def ones(g, size, dtype=None, layout=None, device=None, pin_memory=None):
    """ones(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None,
    bool? pin_memory=None) -> Tensor"""
    return filled(g, size, 1, creation_dtype(g, dtype))


@symbolic("aten::empty")
def empty(g, size, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    """empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, ..., MemoryFormat? memory_format=None)"""
    return filled(g, size, 0, creation_dtype(g, dtype))


def _fill_default_dtype(fill) -> torch.dtype:
    raw = sh.const(fill, None) if isinstance(fill, Value) else fill
    if isinstance(raw, bool):
        return torch.bool
    if isinstance(raw, int):
        return torch.int64
    if isinstance(fill, Value) and fill.dtype is not None and not fill.is_const and not dtypes.is_floating(fill.dtype):
        return torch.bool if fill.dtype == torch.bool else torch.int64  # a runtime Python int or bool
    return torch.get_default_dtype()


@symbolic("aten::full")
def full(g, size, fill_value, dtype=None, layout=None, device=None, pin_memory=None):
    """full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None,
    Device? device=None, bool? pin_memory=None) -> Tensor"""
    return filled(g, size, fill_value, creation_dtype(g, dtype, _fill_default_dtype(fill_value)))


@symbolic("aten::zeros_like")
def zeros_like(g, self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    """zeros_like(Tensor self, *, ScalarType? dtype=None, ..., MemoryFormat? memory_format=None) -> Tensor"""
    return filled_like(g, self, 0, creation_dtype(g, dtype, self.dtype))


@symbolic("aten::ones_like")
def ones_like(g, self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    """ones_like(Tensor self, *, ScalarType? dtype=None, ..., MemoryFormat? memory_format=None) -> Tensor"""
    return filled_like(g, self, 1, creation_dtype(g, dtype, self.dtype))


@symbolic("aten::empty_like")
def empty_like(g, self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    """empty_like(Tensor self, *, ScalarType? dtype=None, ..., MemoryFormat? memory_format=None) -> Tensor"""
    return filled_like(g, self, 0, creation_dtype(g, dtype, self.dtype))


@symbolic("aten::full_like")
def full_like(g, self, fill_value, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    """full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None, ...) -> Tensor"""
    return filled_like(g, self, fill_value, creation_dtype(g, dtype, self.dtype))


@symbolic("aten::new_zeros")
def new_zeros(g, self, size, dtype=None, layout=None, device=None, pin_memory=None):
    """new_zeros(Tensor self, SymInt[] size, *, ScalarType? dtype=None, ...) -> Tensor"""
    return filled(g, size, 0, creation_dtype(g, dtype, self.dtype))


@symbolic("aten::new_ones")
def new_ones(g, self, size, dtype=None, layout=None, device=None, pin_memory=None):
    """new_ones(Tensor self, SymInt[] size, *, ScalarType? dtype=None, ...) -> Tensor"""
    return filled(g, size, 1, creation_dtype(g, dtype, self.dtype))


@symbolic("aten::new_empty")
def new_empty(g, self, size, dtype=None, layout=None, device=None, pin_memory=None):
    """new_empty(Tensor self, SymInt[] size, *, ScalarType? dtype=None, ...) -> Tensor"""
    return filled(g, size, 0, creation_dtype(g, dtype, self.dtype))


@symbolic("aten::new_full")
def new_full(g, self, size, fill_value, dtype=None, layout=None, device=None, pin_memory=None):
    """new_full(Tensor self, SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, ...) -> Tensor"""
    return filled(g, size, fill_value, creation_dtype(g, dtype, self.dtype))


# ---------------------------------------------------------------------------------------------
# arange / linspace / eye / tril_indices / triu_indices


def _number(v):
    raw = sh.const(v, sh.UNKNOWN) if isinstance(v, Value) else v
    if isinstance(raw, torch.Tensor) and raw.numel() == 1:
        return raw.item()
    return raw


def _is_integral(v) -> bool:
    raw = _number(v)
    if raw is not sh.UNKNOWN:
        return isinstance(raw, int)
    return v.dtype is not None and (v.dtype in dtypes.INTEGRAL or v.dtype == torch.bool)


def arange_between(g, start, end, step, dtype: torch.dtype | None) -> Value:
    """torch.arange(start, end, step) of ``dtype``; bounds are numbers or 0-d runtime values."""
    integral = all(_is_integral(v) for v in (start, end, step))
    if dtype == torch.int64 and not integral:
        # torch truncates every bound to int64 first: arange(2, 8.5, 1.5, dtype=long) is 2..7 (for
        # the other integral dtypes it counts the elements in double: arange(6.9, dtype=int) has 7)
        start, end, step = (_truncated(g, v) for v in (start, end, step))
        integral = True
    bounds = [_number(v) for v in (start, end, step)]
    dtype = dtype or (torch.int64 if integral else torch.float32)
    if sh.UNKNOWN not in bounds:
        return g.constant(torch.arange(*bounds, dtype=dtype))
    if onnx_ops.has_op(g, "Range"):
        return _runtime_range(g, start, end, step, integral, dtype)
    OPSET.require(g, "bounds known only at runtime", start)
    # No Range before opset 11: NonZero over ceil((end - start) / step) ones numbers 0..n-1.
    if integral and bounds[0] == 0 and bounds[2] == 1:  # arange(n), n usually a size: n >= 0
        count = _scalar(g, end, torch.int64)
        ones_ = g.op("ConstantOfShape", onnx_ops.unsqueeze(g, count, [0]), value_t=torch.tensor([1]))
        return onnx_ops.cast(g, onnx_ops.squeeze(g, g.op("NonZero", ones_), [0]), dtype)
    first, last, delta = (_scalar(g, v, torch.float64) for v in (start, end, step))
    ones_ = g.op("ConstantOfShape", onnx_ops.unsqueeze(g, _range_count(g, first, last, delta), [0]),
                 value_t=torch.tensor([1], dtype=torch.int64))
    index = onnx_ops.squeeze(g, g.op("NonZero", ones_), [0])
    values = g.op("Add", g.op("Mul", onnx_ops.cast(g, index, torch.float64), delta), first)
    return onnx_ops.cast(g, values, dtype)


def _runtime_range(g, start, end, step, integral: bool, dtype: torch.dtype) -> Value:
    """arange with runtime bounds (opset 11+), built so that onnxruntime's optimizer keeps it right.

    onnxruntime rewrites a Range whose only consumer is a Gather's indices into a Slice(start, end,
    step) (GatherToSliceFusion, ORT_ENABLE_EXTENDED and above, so on by default), and Slice reads a
    negative bound as counted from the end: arange(n - 1, -1, -1) then selects nothing, and so does
    arange(-n, 0). So an integer Range starts at a bound that cannot be negative and steps up; any
    other range is start + Range(0, end - start, step), or start - Range(0, start - end, -step)
    (a Range that feeds an Add or Sub, never a Gather). Float ranges cannot be indices: only their
    step is kept positive. docs/onnxruntime_workarounds.md lists this with its test.
    """
    stride = _number(step)
    if isinstance(stride, (int, float)) and stride > 0 and (not integral or _never_negative(start)):
        # Range computes in one type: integers when every bound is, else float64 (cast at the end).
        compute = dtype if integral and dtype in (torch.int16, torch.int32, torch.int64) else \
            torch.int64 if integral else torch.float64
        parts = [_scalar(g, v, compute) for v in (start, end, step)]
        return onnx_ops.cast(g, g.op("Range", *parts), dtype)
    compute = torch.int64 if integral else torch.float64
    first, last = _scalar(g, start, compute), _scalar(g, end, compute)
    zero = g.constant(0, compute)
    if isinstance(stride, (int, float)):
        ascending = stride > 0
        span = g.op("Sub", last, first) if ascending else g.op("Sub", first, last)
        offsets = g.op("Range", zero, span, g.constant(abs(stride), compute))
        return onnx_ops.cast(g, g.op("Add" if ascending else "Sub", first, offsets), dtype)
    # a runtime step, of either sign: start + step * [0, 1, ..., count - 1]
    delta = _scalar(g, step, compute)
    wide = [_scalar(g, v, torch.float64) for v in (start, end, step)]
    index = g.op("Range", g.constant(0, torch.int64), _range_count(g, *wide), g.constant(1, torch.int64))
    offsets = g.op("Mul", onnx_ops.cast(g, index, compute), delta)
    return onnx_ops.cast(g, g.op("Add", first, offsets), dtype)


def _range_count(g, first: Value, last: Value, delta: Value) -> Value:
    """max(0, ceil((last - first) / delta)) as int64, from float64 bounds (exact for any realistic size)."""
    count = g.op("Ceil", g.op("Div", g.op("Sub", last, first), delta))
    return onnx_ops.cast(g, g.op("Max", count, g.constant(0.0, torch.float64)), torch.int64)


# Ops whose output is a part or a copy of their first input: never negative when that input is not.
_SAME_SIGN_OPS = ("Gather", "Slice", "Squeeze", "Unsqueeze", "Reshape", "Identity", "Cast")


def _never_negative(v, depth: int = 8) -> bool:
    """True when ``v`` cannot be negative: a constant >= 0, a size, or sums and products of those."""
    raw = _number(v)
    if raw is not sh.UNKNOWN:
        return isinstance(raw, (int, float)) and raw >= 0
    if not isinstance(v, Value) or v.producer is None or depth == 0:
        return isinstance(v, Value) and v.sym is not None
    node = v.producer
    if v.sym is not None or node.op_type in ("Shape", "Size"):
        return True
    if node.op_type in _SAME_SIGN_OPS:
        return _never_negative(node.inputs[0], depth - 1)
    if node.op_type in ("Add", "Mul", "Div", "Min"):
        return all(_never_negative(x, depth - 1) for x in node.inputs)
    if node.op_type == "Max":
        return any(_never_negative(x, depth - 1) for x in node.inputs)
    return False


def _truncated(g, v):
    raw = _number(v)
    if raw is not sh.UNKNOWN:
        return int(raw)
    return v if _is_integral(v) else onnx_ops.cast(g, v, torch.int64)


def _scalar(g, v, dtype: torch.dtype) -> Value:
    raw = _number(v)
    if raw is not sh.UNKNOWN:
        return g.constant(raw, dtype)
    v = onnx_ops.cast(g, v, dtype)
    return g.op("Reshape", v, g.constant([], torch.int64)) if v.rank else v


@symbolic("aten::arange")
def arange(g, *args):
    """arange(Scalar end, *, ScalarType? dtype=None, ...) -> Tensor;
    arange.start(Scalar start, Scalar end, *, ScalarType? dtype=None, ...);
    arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, ...);
    arange.out(Scalar end, *, Tensor(a!) out); arange.start_out(Scalar start, Scalar end, Scalar step=1, *,
    Tensor(a!) out)"""
    if len(args) in (2, 4):  # the out= overloads: the result takes out's dtype
        _warn_unwritten_out(g, "arange")
        start, end, step, dtype = (0, args[0], 1, args[1].dtype) if len(args) == 2 else (*args[:3], args[3].dtype)
    elif len(args) == 5:
        start, end, step, dtype = 0, args[0], 1, args[1]
    elif len(args) == 6:
        start, end, step, dtype = args[0], args[1], 1, args[2]
    elif len(args) == 7:
        start, end, step, dtype = args[0], args[1], args[2], args[3]
    else:
        sh.value_error(f"arange: unexpected number of arguments ({len(args)})")
    return arange_between(g, start, end, step, g.output_dtype() or
                          (dtype if isinstance(dtype, torch.dtype) else dtype_arg(dtype)))


def _warn_unwritten_out(g, op: str) -> None:
    """The result stands for ``out`` only through the op's own output: later reads of the ``out``
    tensor itself still see its old value (as with the legacy exporter), so say so."""
    node = g.original_node
    if node is None:
        return
    out = list(node.inputs())[-1]
    if any(use.user is not node for use in out.uses()):
        warnings.warn(f"{op}(..., out=t): the exported graph does not write into t; uses of t after this "
                      f"call see its earlier value (use the returned tensor instead)", stacklevel=2)


@symbolic("aten::__range_length")
def __range_length(g, lo, hi, step):
    """__range_length(int lo, int hi, int step) -> int: the trip count of range(lo, hi, step)"""
    bounds = [_number(v) for v in (lo, hi, step)]
    if sh.UNKNOWN not in bounds:
        return Value("", const=len(range(*(int(b) for b in bounds))))
    return _range_count(g, *(_scalar(g, v, torch.float64) for v in (lo, hi, step)))


@symbolic("aten::__derive_index")
def __derive_index(g, index, start, step):
    """__derive_index(int index, int start, int step) -> int: start + index * step"""
    values = [_number(v) for v in (index, start, step)]
    if sh.UNKNOWN not in values:
        return Value("", const=int(values[1]) + int(values[0]) * int(values[2]))
    index, start, step = (_scalar(g, v, torch.int64) for v in (index, start, step))
    return g.op("Add", start, g.op("Mul", index, step))


@symbolic("aten::_dim_arange")
@sh.parse_args("v", "i")
def _dim_arange(g, like, dim):
    """_dim_arange(Tensor like, int dim) -> Tensor"""
    size = sh.sizes(like)[dim] if like.shape is not None else None
    end = size if isinstance(size, int) else onnx_ops.size(g, like, dim)
    return arange_between(g, 0, end, 1, torch.int64)


@symbolic("aten::linspace")
def linspace(g, start, end, steps, dtype=None, layout=None, device=None, pin_memory=None):
    """linspace(Scalar start, Scalar end, int steps, *, ScalarType? dtype=None, ...) -> Tensor"""
    out_dtype = creation_dtype(g, dtype)
    n = _number(steps)
    first, last = _number(start), _number(end)
    if sh.UNKNOWN not in (first, last, n):
        return g.constant(torch.linspace(first, last, int(n), dtype=out_dtype))
    OPSET.require(g, "arguments known only at runtime", start)
    # torch steps from both ends: start + i * step in the first half, end - (n - 1 - i) * step after.
    compute = out_dtype if dtypes.is_floating(out_dtype) else torch.float64
    a, b = _scalar(g, start, compute), _scalar(g, end, compute)
    if n is sh.UNKNOWN:
        return _linspace_runtime_steps(g, a, b, _scalar(g, steps, torch.int64), compute, out_dtype)
    n = int(n)
    if n == 1:
        return onnx_ops.cast(g, onnx_ops.unsqueeze(g, a, [0]), out_dtype)
    step = g.op("Div", g.op("Sub", b, a), g.constant(n - 1, compute))
    index = torch.arange(n, dtype=compute)
    low = g.op("Add", a, g.op("Mul", g.constant(index), step))
    high = g.op("Sub", b, g.op("Mul", g.constant(n - 1 - index), step))
    out = g.op("Where", g.constant(index < n // 2), low, high)
    return onnx_ops.cast(g, out, out_dtype)


def _linspace_runtime_steps(g, a, b, n, compute, out_dtype) -> Value:
    """linspace with a runtime number of steps; one step gives [start] as in torch."""
    one = onnx_ops.cast(g, g.op("Equal", n, g.constant(1, torch.int64)), torch.int64)
    # n - 1 intervals (1 when n == 1, so nothing divides by 0); the first half is (n + [n == 1]) // 2.
    intervals = g.op("Add", g.op("Sub", n, g.constant(1, torch.int64)), one)
    half = g.op("Div", g.op("Add", n, one), g.constant(2, torch.int64))
    step = g.op("Div", g.op("Sub", b, a), onnx_ops.cast(g, intervals, compute))
    index = arange_between(g, 0, n, 1, torch.int64)
    low = g.op("Add", a, g.op("Mul", onnx_ops.cast(g, index, compute), step))
    back = onnx_ops.cast(g, g.op("Sub", g.op("Sub", n, g.constant(1, torch.int64)), index), compute)
    high = g.op("Sub", b, g.op("Mul", back, step))
    out = g.op("Where", g.op("Less", index, half), low, high)
    return onnx_ops.cast(g, out, out_dtype)


@symbolic("aten::eye")
def eye(g, n, *args):
    """eye(SymInt n, *, ScalarType? dtype=None, ...) -> Tensor; eye.m(SymInt n, SymInt m, *, ...) -> Tensor"""
    m, dtype = (args[0], args[1]) if len(args) == 5 else (n, args[0])
    out_dtype = creation_dtype(g, dtype)
    rows, cols = _number(n), _number(m)
    if rows is not sh.UNKNOWN and cols is not sh.UNKNOWN and (not onnx_ops.has_op(g, "EyeLike") or rows * cols <= MAX_FOLDED_ELEMENTS):
        return g.constant(torch.eye(rows, cols, dtype=out_dtype))  # what folding would make of EyeLike
    OPSET.require(g, "a size known only at runtime (ONNX EyeLike)", n)
    size = Value("", elements=[v if isinstance(v, Value) else Value("", const=v) for v in (n, m)])
    zeros_ = filled(g, size, 0, out_dtype)
    return g.op("EyeLike", zeros_)


def _tri_indices(g, fn, row, col, offset, dtype):
    rows, cols = sh._get_const(row, "i", "row"), sh._get_const(col, "i", "col")
    k = sh._get_const(offset, "i", "offset") if not sh.is_none(offset) else 0
    return g.constant(fn(rows, cols, k, dtype=creation_dtype(g, dtype, torch.int64)))


@symbolic("aten::tril_indices")
def tril_indices(g, row, col, offset=0, dtype=None, layout=None, device=None, pin_memory=None):
    """tril_indices(int row, int col, int offset=0, *, ScalarType? dtype=long, ...) -> Tensor"""
    return _tri_indices(g, torch.tril_indices, row, col, offset, dtype)


@symbolic("aten::triu_indices")
def triu_indices(g, row, col, offset=0, dtype=None, layout=None, device=None, pin_memory=None):
    """triu_indices(int row, int col, int offset=0, *, ScalarType? dtype=long, ...) -> Tensor"""
    return _tri_indices(g, torch.triu_indices, row, col, offset, dtype)


@symbolic("aten::scalar_tensor")
def scalar_tensor(g, s, dtype=None, layout=None, device=None, pin_memory=None):
    """scalar_tensor(Scalar s, *, ScalarType? dtype=None, ...) -> Tensor"""
    out_dtype = creation_dtype(g, dtype)
    raw = _number(s)
    if raw is not sh.UNKNOWN:
        return g.constant(raw, out_dtype)
    return onnx_ops.cast(g, s, out_dtype)


def _literal_dtype(items) -> torch.dtype:
    """The dtype torch.tensor infers for a (nested) list: bool, int64 or the default float."""
    kinds = set()

    def visit(item):
        if isinstance(item, Value) and item.elements is not None:
            for e in item.elements:
                visit(e)
            return
        raw = sh.const(item, sh.UNKNOWN) if isinstance(item, Value) else item
        if isinstance(raw, (list, tuple)):
            for e in raw:
                visit(e)
        elif raw is not sh.UNKNOWN and not isinstance(raw, torch.Tensor):
            kinds.add(type(raw))
        else:
            dt = raw.dtype if isinstance(raw, torch.Tensor) else item.dtype
            kinds.add(bool if dt == torch.bool else float if dtypes.is_floating(dt) else int)

    visit(items)
    if float in kinds:
        return torch.get_default_dtype()
    return torch.int64 if int in kinds else torch.bool if kinds else torch.get_default_dtype()


def _stacked(g, data, dtype: torch.dtype) -> Value:
    """A (nested) list with runtime elements as one tensor: each element gains a leading dim, then Concat."""
    parts = []
    for e in sh.unpack_list(data):
        if isinstance(e, Value) and e.elements is not None:
            item = _stacked(g, e, dtype)
        elif isinstance(e, Value) and not e.is_const:
            item = onnx_ops.cast(g, e, dtype)
        else:
            item = g.constant(torch.tensor(sh.const(e), dtype=dtype))
        parts.append(onnx_ops.unsqueeze(g, item, [0]))
    return parts[0] if len(parts) == 1 else g.op("Concat", *parts, axis_i=0)


@symbolic("aten::tensor")
def tensor(g, data, dtype=None, device=None, requires_grad=False):
    """tensor(t[] data, *, ScalarType? dtype=None, Device? device=None, bool requires_grad=False) -> Tensor"""
    out_dtype = g.output_dtype() or dtype_arg(dtype)
    raw = sh.const(data)
    if raw is not sh.UNKNOWN:
        return g.constant(torch.tensor(raw, dtype=out_dtype))
    out_dtype = out_dtype or _literal_dtype(data)
    if sh.is_packed_list(data):
        return _stacked(g, data, out_dtype)
    return onnx_ops.cast(g, data, out_dtype)


@symbolic("aten::as_tensor")
def as_tensor(g, data, dtype=None, device=None):
    """as_tensor(Tensor(a) data, *, ScalarType? dtype=None, Device? device=None) -> Tensor(a)"""
    return tensor(g, data, dtype, device)


@symbolic("aten::hann_window")
def hann_window(g, window_length, *args):
    """hann_window(int window_length, *, ScalarType? dtype=None, ...) -> Tensor;
    hann_window.periodic(int window_length, bool periodic, *, ScalarType? dtype=None, ...) -> Tensor"""
    periodic = bool(sh._get_const(args[0], "b", "periodic")) if len(args) == 5 else True
    out_dtype = creation_dtype(g, args[1] if len(args) == 5 else args[0])
    n = _number(window_length)
    if n is not sh.UNKNOWN:
        return g.constant(torch.hann_window(int(n), periodic, dtype=out_dtype))
    # 0.5 - 0.5 cos(2 pi i / N), N = n when periodic, else n - 1; a length-1 window is [1]
    compute = out_dtype if dtypes.is_floating(out_dtype) else torch.float32
    index = arange_between(g, 0, window_length, 1, compute)
    length = _scalar(g, window_length, compute)
    span = length if periodic else g.op("Max", g.op("Sub", length, g.constant(1.0, compute)),
                                         g.constant(1.0, compute))
    angle = g.op("Div", g.op("Mul", index, g.constant(2 * math.pi, compute)), span)
    window = g.op("Sub", g.constant(0.5, compute), g.op("Mul", g.constant(0.5, compute), g.op("Cos", angle)))
    single = g.op("Equal", _scalar(g, window_length, torch.int64), g.constant(1, torch.int64))
    window = g.op("Where", single, g.constant(1.0, compute), window)
    return onnx_ops.cast(g, window, out_dtype)


# ---------------------------------------------------------------------------------------------
# Random ops: values differ from torch's generator; shapes and dtypes match.


def _random_type(dtype: torch.dtype) -> torch.dtype:
    """The sampling type for a result of ``dtype``."""
    return dtype if dtype in _RANDOM_TYPES else torch.float32


def random_of_size(g, kind: str, size, dtype: torch.dtype, **attrs) -> Value:
    """``RandomUniform``/``RandomNormal`` of ``size`` (static or runtime), cast to ``dtype``."""
    sample = _random_type(dtype)
    dims = static_shape(size)
    if dims is not None:
        out = typed_sample(g.op(kind, shape_i=dims, dtype_i=dtypes.to_onnx(sample), **attrs), sample, dims)
    else:
        template = filled(g, size, 0, sample)
        out = g.op(kind + "Like", template, dtype_i=dtypes.to_onnx(sample), **attrs)
        out = typed_sample(out, sample, template.shape)
    return onnx_ops.cast(g, out, dtype)


def random_like(g, kind: str, self: Value, dtype: torch.dtype, **attrs) -> Value:
    sample = _random_type(dtype)
    out = typed_sample(g.op(kind + "Like", self, dtype_i=dtypes.to_onnx(sample), **attrs), sample, self.shape)
    return onnx_ops.cast(g, out, dtype)


def typed_sample(out: Value, dtype: torch.dtype, shape) -> Value:
    """The Random* ops have no shape rule (their type is an attribute): state it here, or a
    scripted graph (no traced types) leaves the sample untyped for the ops that follow."""
    if out.dtype is None:
        out.dtype = dtype
    if out.shape is None and shape is not None:
        out.shape = tuple(shape)
    return out


@symbolic("aten::rand")
def rand(g, size, *args):
    """rand(SymInt[] size, *, ScalarType? dtype=None, ...) -> Tensor; rand.generator(size, *, generator, ...)"""
    dtype = args[1] if len(args) == 5 else args[0] if args else None
    return random_of_size(g, "RandomUniform", size, creation_dtype(g, dtype))


@symbolic("aten::randn")
def randn(g, size, *args):
    """randn(SymInt[] size, *, ScalarType? dtype=None, ...) -> Tensor; randn.generator(size, *, generator, ...)"""
    dtype = args[1] if len(args) == 5 else args[0] if args else None
    return random_of_size(g, "RandomNormal", size, creation_dtype(g, dtype))


def _random_integers(g, uniform: Value, dtype: torch.dtype) -> Value:
    return onnx_ops.cast(g, g.op("Floor", uniform), dtype)


@symbolic("aten::randint")
def randint(g, *args):
    """randint(SymInt high, SymInt[] size, *, ScalarType? dtype=long, ...) -> Tensor;
    randint.low(SymInt low, SymInt high, SymInt[] size, *, ScalarType? dtype=long, ...);
    randint.generator / randint.low_generator (same with a generator)"""
    if isinstance(sh.const(args[1], None), (list, tuple)) or sh.is_packed_list(args[1]):
        low, high, size = 0, args[0], args[1]
        rest = args[2:]
    else:
        low, high, size = args[0], args[1], args[2]
        rest = args[3:]
    dtype = rest[1] if len(rest) == 5 else rest[0] if rest else None
    out_dtype = creation_dtype(g, dtype, torch.int64)
    lo, hi = float(sh._get_const(low, "f", "low")), float(sh._get_const(high, "f", "high"))
    # sampled in float64 so that large bounds stay exact and floor() never reaches high
    uniform = random_of_size(g, "RandomUniform", size, torch.float64, low_f=lo, high_f=hi)
    return _random_integers(g, uniform, out_dtype)


@symbolic("aten::rand_like")
def rand_like(g, self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    """rand_like(Tensor self, *, ScalarType? dtype=None, ...) -> Tensor"""
    return random_like(g, "RandomUniform", self, creation_dtype(g, dtype, self.dtype))


@symbolic("aten::randn_like")
def randn_like(g, self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    """randn_like(Tensor self, *, ScalarType? dtype=None, ...) -> Tensor"""
    return random_like(g, "RandomNormal", self, creation_dtype(g, dtype, self.dtype))


@symbolic("aten::randint_like")
def randint_like(g, self, *args):
    """randint_like(Tensor self, SymInt high, *, ScalarType? dtype=None, ...) -> Tensor;
    randint_like.low_dtype(Tensor self, SymInt low, SymInt high, *, ScalarType? dtype=None, ...)"""
    if len(args) == 7:
        low, high, dtype = args[0], args[1], args[2]
    else:
        low, high, dtype = 0, args[0], args[1] if len(args) > 1 else None
    out_dtype = creation_dtype(g, dtype, self.dtype)
    lo, hi = float(sh._get_const(low, "f", "low")), float(sh._get_const(high, "f", "high"))
    uniform = typed_sample(g.op("RandomUniformLike", self, dtype_i=dtypes.to_onnx(torch.float64), low_f=lo, high_f=hi),
                     torch.float64, self.shape)
    return _random_integers(g, uniform, out_dtype)


def bernoulli_by_uniform(g, probs: Value, like: Value, dtype: torch.dtype) -> Value:
    """1 where a uniform sample falls below the probability, else 0."""
    sample = _random_type(probs.dtype if isinstance(probs, Value) and probs.dtype in _RANDOM_TYPES else dtype)
    uniform = typed_sample(g.op("RandomUniformLike", like, dtype_i=dtypes.to_onnx(sample)), sample, like.shape)
    return onnx_ops.cast(g, g.op("Less", uniform, onnx_ops.cast(g, probs, sample)), dtype)


@symbolic("aten::bernoulli")
def bernoulli(g, self, p=None, generator=None):
    """bernoulli(Tensor self, *, Generator? generator=None) -> Tensor;
    bernoulli.p(Tensor self, float p, *, Generator? generator=None) -> Tensor"""
    out_dtype = g.output_dtype() or self.dtype
    if p is None or generator is None:  # bernoulli(self, *, generator): the 2nd input is the generator
        p = None
    if p is None:
        return bernoulli_by_uniform(g, self, self, out_dtype)
    raw = _number(p)
    if raw is not sh.UNKNOWN:
        return bernoulli_by_uniform(g, g.constant(float(raw), torch.float32), self, out_dtype)
    # bernoulli_.Tensor(self, Tensor p): probabilities broadcast to self's shape
    like = g.op("Add", g.op("Mul", onnx_ops.cast(g, self, p.dtype), g.constant(0, p.dtype)), p)
    return bernoulli_by_uniform(g, p, like, out_dtype)


@symbolic("aten::normal")
def normal(g, *args):
    """normal.Tensor_float(Tensor mean, float std=1, *, Generator? generator=None) -> Tensor;
    normal.float_Tensor(float mean, Tensor std, ...); normal.Tensor_Tensor(Tensor mean, Tensor std, ...);
    normal.float_float(float mean, float std, SymInt[] size, *, Generator? generator=None,
    ScalarType? dtype=None, ...)"""
    mean, std = args[0], args[1]
    if len(args) >= 7:
        size, dtype = args[2], args[4]
        out_dtype = creation_dtype(g, dtype)
        return random_of_size(g, "RandomNormal", size, out_dtype,
                              mean_f=float(sh._get_const(mean, "f", "mean")),
                              scale_f=float(sh._get_const(std, "f", "std")))
    out_dtype = g.output_dtype() or sh.promote_types(mean, std) or torch.float32
    tensors = [v for v in (mean, std) if isinstance(v, Value) and not sh.is_const(v)]
    like = tensors[0] if len(tensors) == 1 else g.op("Add", g.op("Mul", tensors[0], g.constant(0, out_dtype)),
                                                     g.op("Mul", tensors[1], g.constant(0, out_dtype)))
    noise = random_like(g, "RandomNormal", like, out_dtype)
    return g.op("Add", g.op("Mul", noise, as_operand(g, std, out_dtype)), as_operand(g, mean, out_dtype))


@symbolic("aten::normal_")
def normal_(g, self, mean=0.0, std=1.0, generator=None):
    """normal_(Tensor(a!) self, float mean=0, float std=1, *, Generator? generator=None) -> Tensor(a!)"""
    return random_like(g, "RandomNormal", self, self.dtype, mean_f=float(sh._get_const(mean, "f", "mean")),
                       scale_f=float(sh._get_const(std, "f", "std")))


@symbolic("aten::uniform_")
def uniform_(g, self, low=0.0, high=1.0, generator=None):
    """uniform_(Tensor(a!) self, float from=0, float to=1, *, Generator? generator=None) -> Tensor(a!)"""
    return random_like(g, "RandomUniform", self, self.dtype, low_f=float(sh._get_const(low, "f", "from")),
                       high_f=float(sh._get_const(high, "f", "to")))


@symbolic("aten::multinomial")
def multinomial(g, self, num_samples, replacement=False, generator=None):
    """multinomial(Tensor self, SymInt num_samples, bool replacement=False, *, Generator? generator=None) -> Tensor"""
    n = sh._get_const(num_samples, "i", "num_samples")
    if not sh._get_const(replacement, "b", "replacement") and n > 1:
        sh.unimplemented("multinomial", "sampling more than one value without replacement")
    # ONNX Multinomial samples from unnormalised log-probabilities of a [batch, classes] input.
    logits = g.op("Log", onnx_ops.cast(g, self, _random_type(self.dtype)))
    if self.rank == 1:
        logits = onnx_ops.unsqueeze(g, logits, [0])
    out = g.op("Multinomial", logits, sample_size_i=n, dtype_i=dtypes.to_onnx(torch.int64))
    return onnx_ops.squeeze(g, out, [0]) if self.rank == 1 else out


# ---------------------------------------------------------------------------------------------
# Opset 15. Creation at opset 15: the Bernoulli op samples a tensor of probabilities.


@symbolic("aten::bernoulli", since=15)
def bernoulli_15(g, self, p=None, generator=None):
    """bernoulli(Tensor self, *, Generator? generator=None) -> Tensor;
    bernoulli_15.p(Tensor self, float p, *, Generator? generator=None) -> Tensor"""
    if p is not None and generator is not None:  # bernoulli_15.p: a probability for every element
        return bernoulli(g, self, p, generator)
    out_dtype = g.output_dtype() or self.dtype
    if not dtypes.is_floating(self.dtype):
        return bernoulli(g, self, p, generator)
    sample = typed_sample(g.op("Bernoulli", self, dtype_i=dtypes.to_onnx(self.dtype)), self.dtype, self.shape)
    return onnx_ops.cast(g, sample, out_dtype)
