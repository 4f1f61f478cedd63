"""Reductions at opset 9: sum/mean/prod, max/min (full, by dim, elementwise), arg reductions,
all/any, std/var, norms, logsumexp, scans (cumprod, logcumsumexp), median/kthvalue.

The schema moves of Reduce* (axes became an input at 13 for ReduceSum, at 18 for the others) live
in ``onnx_ops.reduce``. The ONNX reductions accept fewer element types than torch (no bool before
opset 20, no int8/uint8 before 12): ``reduce`` computes in a type the op accepts and casts back.

The versions for higher opsets follow, each registered with ``since=N``: opset 11."""

from __future__ import annotations

import builtins
import math

import torch

from torchscript_onnx.builder import dtypes, onnx_ops
from torchscript_onnx.builder.ir import Value

from .. import symbolic_helper as sh
from ..registry import declare_opset_requirements, symbolic
from .math import isnan, where
from .operand_types import as_operand, dtype_arg, onnx_input_types, to_floating


# When an op here needs a higher opset than it is registered at: the condition (the reason its
# conversion states with OPSET.require) -> the lowest opset that converts it (docs/supported_ops.md).
OPSET = declare_opset_requirements({
    ("aten::cumsum", "aten::cumprod", "aten::logcumsumexp"): {"a dim of runtime size": 11},
    ("aten::kthvalue", "aten::median"): {"k known only at runtime": 10},
}, unlisted={
    "ONNX Where": 9,
    "non-float input (TopK)": 11,
})

_REDUCE_TYPES = frozenset({torch.float16, torch.float32, torch.float64, torch.int32, torch.int64})


# ---------------------------------------------------------------------------------------------
# Helpers shared by the reductions (and by linalg.py)


def axes_of(dim, rank: int | None) -> list[int] | None:
    """``dim`` (None, an int or a list of ints, known at export time) as non-negative axes; None means all.

    torch treats an empty dim list as "every dim", as does ONNX without axes.
    """
    raw = sh.const(dim, sh.UNKNOWN) if isinstance(dim, Value) else dim
    if raw is sh.UNKNOWN:
        sh.value_error("the reduction dims must be known at export time", dim)
    if raw is None:
        return None
    if isinstance(raw, torch.Tensor):
        raw = raw.tolist()
    axes = [int(raw)] if not isinstance(raw, (list, tuple)) else [int(a) for a in raw]
    if not axes:
        return None
    if builtins.any(a < 0 for a in axes):
        if rank is None:
            sh.value_error("a negative reduction dim needs the input rank", dim)
        axes = [a + rank if a < 0 else a for a in axes]
    if rank == 0:  # torch allows dim 0 / -1 on a 0-d tensor: reduce nothing
        return []
    return axes


def _compute_type(g, op_type: str, dtype: torch.dtype | None) -> torch.dtype | None:
    if dtype is None or dtype in _REDUCE_TYPES:
        return dtype
    if dtype == torch.bfloat16 or (op_type in ("ReduceMax", "ReduceMin") and dtype in (torch.int8, torch.uint8)):
        if dtype in onnx_input_types(op_type, g.opset):  # bfloat16 from opset 13; ReduceMax/Min int8 from 12
            return dtype
    return torch.float32 if dtypes.is_floating(dtype) else torch.int32 if dtype != torch.uint64 else dtype


def reduce(g, op_type: str, x: Value, axes: list[int] | None, keepdim: bool,
           out_dtype: torch.dtype | None = None) -> Value:
    """``op_type`` over ``axes`` (None: all) in a type the op accepts, returning ``out_dtype`` (default: x's)."""
    out_dtype = out_dtype or x.dtype
    if axes == []:  # a 0-d input: nothing to reduce
        return onnx_ops.cast(g, x, out_dtype) if op_type not in ("ReduceL1", "ReduceL2") else \
            onnx_ops.cast(g, g.op("Abs", x), out_dtype)
    compute = _compute_type(g, op_type, out_dtype)
    out = onnx_ops.reduce(g, op_type, onnx_ops.cast(g, x, compute), axes, keepdim)
    return onnx_ops.cast(g, out, out_dtype)


def reduced_count(g, x: Value, axes: list[int] | None, dtype: torch.dtype, kept: Value) -> Value:
    """How many elements each reduction over ``axes`` sees, as a scalar of ``dtype``;
    ``kept`` is a reduction of ``x`` over ``axes`` with keepdims."""
    dims = sh.sizes(x)
    picked = dims if axes is None else [dims[a] for a in axes] if dims is not None else None
    if picked is not None and builtins.all(isinstance(d, int) for d in picked):
        return g.constant(float(math.prod(picked)) if dtypes.is_floating(dtype) else math.prod(picked), dtype)
    count = g.op("Div", g.op("Size", x), g.op("Size", kept))
    return onnx_ops.cast(g, count, dtype)


# ---------------------------------------------------------------------------------------------
# sum, mean, prod


@symbolic("aten::sum")
def sum(g, self, dim=None, keepdim=None, dtype=None):  # noqa: A001 - named after the aten op
    """sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    if keepdim is None:  # sum(Tensor self, *, ScalarType? dtype=None)
        dim, dtype, keepdim = None, dim, False
    out_dtype = g.output_dtype() or dtype_arg(dtype) or sum_dtype(self.dtype)
    keep = bool(sh._get_const(keepdim, "b", "keepdim"))
    return reduce(g, "ReduceSum", onnx_ops.cast(g, self, out_dtype), axes_of(dim, self.rank), keep, out_dtype)


def sum_dtype(dtype: torch.dtype | None) -> torch.dtype | None:
    """torch sums bool and integer tensors as int64."""
    return torch.int64 if dtype is not None and (dtype == torch.bool or dtype in dtypes.INTEGRAL) else dtype


@symbolic("aten::mean")
def mean(g, self, dim=None, keepdim=None, dtype=None):
    """mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    if keepdim is None:
        dim, dtype, keepdim = None, dim, False
    out_dtype = g.output_dtype() or dtype_arg(dtype) or self.dtype
    keep = bool(sh._get_const(keepdim, "b", "keepdim"))
    return reduce(g, "ReduceMean", onnx_ops.cast(g, self, out_dtype), axes_of(dim, self.rank), keep, out_dtype)


@symbolic("aten::prod")
def prod(g, self, dim=None, keepdim=None, dtype=None):
    """prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    if keepdim is None:
        dim, dtype, keepdim = None, dim, False
    out_dtype = g.output_dtype() or dtype_arg(dtype) or sum_dtype(self.dtype)
    keep = bool(sh._get_const(keepdim, "b", "keepdim"))
    return reduce(g, "ReduceProd", onnx_ops.cast(g, self, out_dtype), axes_of(dim, self.rank), keep, out_dtype)


@symbolic("aten::nansum")
def nansum(g, self, dim=None, keepdim=False, dtype=None):
    """nansum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    if dtypes.is_floating(self.dtype):
        self = where(g, isnan(g, self), g.constant(0, self.dtype), self)
    return sum(g, self, dim, keepdim, dtype)


@symbolic("aten::nanmean")
def nanmean(g, self, dim=None, keepdim=False, dtype=None):
    """nanmean(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    keep = bool(sh._get_const(keepdim, "b", "keepdim"))
    axes = axes_of(dim, self.rank)
    nan = isnan(g, self)
    total = reduce(g, "ReduceSum", where(g, nan, g.constant(0, self.dtype), self), axes, keep)
    count = reduce(g, "ReduceSum", onnx_ops.cast(g, g.op("Not", nan), self.dtype), axes, keep)
    return g.op("Div", total, count)


@symbolic("aten::count_nonzero")
def count_nonzero(g, self, dim=None):
    """count_nonzero.dim_IntList(Tensor self, int[] dim) -> Tensor; count_nonzero(Tensor self, int? dim=None)"""
    # Cast to bool is "!= 0" for every type (Equal takes floats only from opset 11).
    nonzero = onnx_ops.cast(g, onnx_ops.cast(g, self, torch.bool), torch.int64)
    return reduce(g, "ReduceSum", nonzero, axes_of(dim, self.rank), False)


# ---------------------------------------------------------------------------------------------
# max / min: full, by dim (values and indices), elementwise


def _full_or_dim(g, op_type: str, arg_op: str, self, dim_or_other, keepdim):
    if dim_or_other is None:
        return reduce(g, op_type, self, None, False)
    if keepdim is None:  # elementwise: max.other(Tensor self, Tensor other)
        return elementwise_extreme(g, "Max" if op_type == "ReduceMax" else "Min", self, dim_or_other)
    axes = axes_of(dim_or_other, self.rank)
    keep = bool(sh._get_const(keepdim, "b", "keepdim"))
    values = reduce(g, op_type, self, axes, keep)
    if axes == []:
        return values, g.constant(0, torch.int64)
    return values, arg_reduce(g, arg_op, self, axes[0], keep)


def arg_reduce(g, op_type: str, x: Value, axis: int, keepdim: bool) -> Value:
    x = onnx_ops.cast(g, x, torch.int32) if x.dtype == torch.bool else x
    return g.op(op_type, x, axis_i=axis, keepdims_i=int(keepdim))


@symbolic("aten::max")
def max(g, self, dim_or_other=None, keepdim=None):  # noqa: A001
    """max(Tensor self) -> Tensor; max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor, Tensor);
    max.other(Tensor self, Tensor other) -> Tensor"""
    return _full_or_dim(g, "ReduceMax", "ArgMax", self, dim_or_other, keepdim)


@symbolic("aten::min")
def min(g, self, dim_or_other=None, keepdim=None):  # noqa: A001
    """min(Tensor self) -> Tensor; min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor, Tensor);
    min.other(Tensor self, Tensor other) -> Tensor"""
    return _full_or_dim(g, "ReduceMin", "ArgMin", self, dim_or_other, keepdim)


def elementwise_extreme(g, op_type: str, self, other) -> Value:
    """Max/Min of two operands after torch's type promotion."""
    dtype = g.output_dtype() or sh.promote_types(self, other)
    a, b = as_operand(g, self, dtype), as_operand(g, other, dtype)
    if dtype == torch.bool:
        return g.op("Or" if op_type == "Max" else "And", a, b)
    if dtypes.is_floating(dtype):
        if g.opset < 8 and a.shape != b.shape:  # Max-6/Min-6 do not broadcast: broadcast by adding 0
            zero = g.constant(0, dtype)
            a, b = g.op("Add", a, g.op("Mul", b, zero)), g.op("Add", b, g.op("Mul", a, zero))
        return g.op(op_type, a, b)
    # (dtype may be unknown in scripted code: ask whether the op takes integers at all)
    if torch.int64 in onnx_input_types(op_type, g.opset):  # Max/Min take integers from opset 12
        return g.op(op_type, a, b)
    if torch.int64 in onnx_input_types("Greater", g.opset):  # Greater/Less from 9
        pick = g.op("Greater" if op_type == "Max" else "Less", a, b)
        return g.op("Where", pick, a, b)
    # Opsets 7-8 compare floats only: (a + b +- |a - b|) / 2 is exact in integers (Add/Abs/Div take int32/64).
    wide = torch.int64 if dtype == torch.int64 else torch.int32
    a, b = onnx_ops.cast(g, a, wide), onnx_ops.cast(g, b, wide)
    spread = g.op("Abs", g.op("Sub", a, b))
    both = g.op("Add", a, b)
    both = g.op("Add" if op_type == "Max" else "Sub", both, spread)
    return onnx_ops.cast(g, g.op("Div", both, g.constant(2, wide)), dtype)


@symbolic("aten::maximum")
def maximum(g, self, other):
    """maximum(Tensor self, Tensor other) -> Tensor"""
    return elementwise_extreme(g, "Max", self, other)


@symbolic("aten::minimum")
def minimum(g, self, other):
    """minimum(Tensor self, Tensor other) -> Tensor"""
    return elementwise_extreme(g, "Min", self, other)


def _nan_ignoring(g, op_type: str, self, other) -> Value:
    dtype = g.output_dtype() or sh.promote_types(self, other)
    if not dtypes.is_floating(dtype):
        return elementwise_extreme(g, op_type, self, other)
    a, b = as_operand(g, self, dtype), as_operand(g, other, dtype)
    # fmax/fmin return the other operand where one is NaN; Max/Min propagate NaN.
    out = g.op(op_type, a, b)
    out = where(g, isnan(g, a), b, out)
    return where(g, isnan(g, b), a, out)


@symbolic("aten::fmax")
def fmax(g, self, other):
    """fmax(Tensor self, Tensor other) -> Tensor"""
    return _nan_ignoring(g, "Max", self, other)


@symbolic("aten::fmin")
def fmin(g, self, other):
    """fmin(Tensor self, Tensor other) -> Tensor"""
    return _nan_ignoring(g, "Min", self, other)


@symbolic("aten::amax")
def amax(g, self, dim=None, keepdim=False):
    """amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor"""
    return reduce(g, "ReduceMax", self, axes_of(dim, self.rank), bool(sh._get_const(keepdim, "b", "keepdim")))


@symbolic("aten::amin")
def amin(g, self, dim=None, keepdim=False):
    """amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor"""
    return reduce(g, "ReduceMin", self, axes_of(dim, self.rank), bool(sh._get_const(keepdim, "b", "keepdim")))


@symbolic("aten::aminmax")
def aminmax(g, self, dim=None, keepdim=False):
    """aminmax(Tensor self, *, int? dim=None, bool keepdim=False) -> (Tensor min, Tensor max)"""
    keep = bool(sh._get_const(keepdim, "b", "keepdim"))
    axes = axes_of(dim, self.rank)
    return reduce(g, "ReduceMin", self, axes, keep), reduce(g, "ReduceMax", self, axes, keep)


def _arg(g, op_type: str, self, dim, keepdim) -> Value:
    keep = bool(sh._get_const(keepdim, "b", "keepdim")) if keepdim is not None else False
    if sh.is_none(dim):
        # over the flattened input; keepdim keeps every dim as 1
        flat = g.op("Reshape", self, g.constant([-1], torch.int64))
        index = arg_reduce(g, op_type, flat, 0, False)
        if keep and self.rank:
            return g.op("Reshape", index, g.constant([1] * self.rank, torch.int64))
        return index
    axis = axes_of(dim, self.rank)
    if axis == []:
        return g.constant(0, torch.int64)
    return arg_reduce(g, op_type, self, axis[0], keep)


@symbolic("aten::argmax")
def argmax(g, self, dim=None, keepdim=False):
    """argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor"""
    return _arg(g, "ArgMax", self, dim, keepdim)


@symbolic("aten::argmin")
def argmin(g, self, dim=None, keepdim=False):
    """argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor"""
    return _arg(g, "ArgMin", self, dim, keepdim)


# ---------------------------------------------------------------------------------------------
# all / any


def _logical_reduce(g, op_type: str, self, dim, keepdim) -> Value:
    out_dtype = g.output_dtype() or (torch.uint8 if self.dtype == torch.uint8 else torch.bool)
    truth = onnx_ops.cast(g, onnx_ops.cast(g, self, torch.bool), torch.int32)
    keep = bool(sh._get_const(keepdim, "b", "keepdim")) if keepdim is not None else False
    out = reduce(g, op_type, truth, axes_of(dim, self.rank), keep)
    return onnx_ops.cast(g, onnx_ops.cast(g, out, torch.bool), out_dtype)


@symbolic("aten::all")
def all(g, self, dim=None, keepdim=None):  # noqa: A001
    """all(Tensor self) -> Tensor; all.dim(Tensor self, int dim, bool keepdim=False) -> Tensor;
    all.dims(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor"""
    return _logical_reduce(g, "ReduceMin", self, dim, keepdim)


@symbolic("aten::any")
def any(g, self, dim=None, keepdim=None):  # noqa: A001
    """any(Tensor self) -> Tensor; any.dim(Tensor self, int dim, bool keepdim=False) -> Tensor;
    any.dims(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor"""
    return _logical_reduce(g, "ReduceMax", self, dim, keepdim)


# ---------------------------------------------------------------------------------------------
# std / var


def _std_var_args(self, dim, unbiased_or_correction, keepdim):
    """(axes, correction, keepdim) from std(self, unbiased), std.dim(self, dim, unbiased, keepdim)
    or std.correction(self, dim, *, correction, keepdim)."""
    if keepdim is None and unbiased_or_correction is None:  # std(Tensor self, bool unbiased=True)
        unbiased = True if dim is None else bool(sh._get_const(dim, "b", "unbiased"))
        return None, 1.0 if unbiased else 0.0, False
    keep = bool(sh._get_const(keepdim, "b", "keepdim")) if keepdim is not None else False
    raw = sh.const(unbiased_or_correction, None) if unbiased_or_correction is not None else None
    if isinstance(raw, bool):
        correction = 1.0 if raw else 0.0
    else:
        correction = 1.0 if raw is None else float(raw)
    return axes_of(dim, self.rank), correction, keep


def variance(g, x: Value, axes, correction: float, keepdim: bool) -> Value:
    mean = reduce(g, "ReduceMean", x, axes, True)
    diff = g.op("Sub", x, mean)
    squares = g.op("Mul", diff, diff)
    if correction == 0:
        return reduce(g, "ReduceMean", squares, axes, keepdim)
    total = reduce(g, "ReduceSum", squares, axes, keepdim)
    count = reduced_count(g, x, axes, x.dtype, mean)
    return g.op("Div", total, g.op("Sub", count, g.constant(correction, x.dtype)))


@symbolic("aten::var")
def var(g, self, dim=None, correction=None, keepdim=None):
    """var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor"""
    axes, corr, keep = _std_var_args(self, dim, correction, keepdim)
    return variance(g, self, axes, corr, keep)


@symbolic("aten::std")
def std(g, self, dim=None, correction=None, keepdim=None):
    """std.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor"""
    return g.op("Sqrt", var(g, self, dim, correction, keepdim))


@symbolic("aten::var_mean")
def var_mean(g, self, dim=None, correction=None, keepdim=None):
    """var_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False)
    -> (Tensor, Tensor)"""
    axes, corr, keep = _std_var_args(self, dim, correction, keepdim)
    return variance(g, self, axes, corr, keep), reduce(g, "ReduceMean", self, axes, keep)


@symbolic("aten::std_mean")
def std_mean(g, self, dim=None, correction=None, keepdim=None):
    """std_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False)
    -> (Tensor, Tensor)"""
    variance_, mean_ = var_mean(g, self, dim, correction, keepdim)
    return g.op("Sqrt", variance_), mean_


# ---------------------------------------------------------------------------------------------
# Norms


def vector_norm(g, x: Value, ord: float, axes, keepdim: bool) -> Value:  # noqa: A002
    if ord == 2:
        return reduce(g, "ReduceL2", x, axes, keepdim)
    if ord == 1:
        return reduce(g, "ReduceL1", x, axes, keepdim)
    if ord == math.inf:
        return reduce(g, "ReduceMax", g.op("Abs", x), axes, keepdim)
    if ord == -math.inf:
        return reduce(g, "ReduceMin", g.op("Abs", x), axes, keepdim)
    if ord == 0:
        nonzero = onnx_ops.cast(g, onnx_ops.cast(g, x, torch.bool), x.dtype)
        return reduce(g, "ReduceSum", nonzero, axes, keepdim)
    powered = g.op("Pow", g.op("Abs", x), g.constant(ord, x.dtype))
    return g.op("Pow", reduce(g, "ReduceSum", powered, axes, keepdim), g.constant(1.0 / ord, x.dtype))


def _ord(value, default):
    raw = sh.const(value, None) if value is not None else None
    if raw is None:
        return default
    if isinstance(raw, torch.Tensor):
        raw = raw.item()
    return raw if isinstance(raw, str) else float(raw)


def _castdtype_arg(g, x: Value, dtype) -> Value:
    target = dtype_arg(dtype)
    return onnx_ops.cast(g, x, target) if target is not None else x


@symbolic("aten::linalg_vector_norm")
def linalg_vector_norm(g, self, ord=None, dim=None, keepdim=False, dtype=None):  # noqa: A002
    """linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *,
    ScalarType? dtype=None) -> Tensor"""
    x = _castdtype_arg(g, self, dtype)
    keep = bool(sh._get_const(keepdim, "b", "keepdim"))
    return vector_norm(g, x, _ord(ord, 2.0), axes_of(dim, x.rank), keep)


def matrix_norm(g, x: Value, ord, axes: list[int], keepdim: bool) -> Value:  # noqa: A002
    if ord == "fro":
        return reduce(g, "ReduceL2", x, axes, keepdim)
    if ord in (math.inf, -math.inf, 1.0, -1.0):
        # inf: max over rows of the row sums of |x|; 1: max over columns of the column sums
        summed, extreme = (axes[1], axes[0]) if ord in (math.inf, -math.inf) else (axes[0], axes[1])
        sums = reduce(g, "ReduceSum", g.op("Abs", x), [summed], True)
        out = reduce(g, "ReduceMax" if ord > 0 else "ReduceMin", sums, [extreme], True)
        return out if keepdim else onnx_ops.squeeze(g, out, sorted(axes))
    sh.unimplemented("linalg_matrix_norm", f"ord={ord!r} (needs a singular value decomposition)")


@symbolic("aten::linalg_matrix_norm")
def linalg_matrix_norm(g, self, ord=None, dim=None, keepdim=False, dtype=None):  # noqa: A002
    """linalg_matrix_norm(Tensor self, Scalar ord, int[] dim=[-2,-1], bool keepdim=False, *,
    ScalarType? dtype=None) -> Tensor; linalg_matrix_norm.str_ord(..., str ord='fro', ...)"""
    x = _castdtype_arg(g, self, dtype)
    axes = axes_of(dim, x.rank) if not sh.is_none(dim) else [x.rank - 2, x.rank - 1]
    return matrix_norm(g, x, _ord(ord, "fro"), axes, bool(sh._get_const(keepdim, "b", "keepdim")))


@symbolic("aten::linalg_norm")
def linalg_norm(g, self, ord=None, dim=None, keepdim=False, dtype=None):  # noqa: A002
    """linalg_norm(Tensor self, Scalar? ord=None, int[1]? dim=None, bool keepdim=False, *,
    ScalarType? dtype=None) -> Tensor; linalg_norm.ord_str(..., str ord, ...)"""
    x = _castdtype_arg(g, self, dtype)
    keep = bool(sh._get_const(keepdim, "b", "keepdim"))
    axes = axes_of(dim, x.rank)
    order = _ord(ord, None)
    if order is None:  # 2-norm of the flattened input, or Frobenius over two dims: the same sum
        return vector_norm(g, x, 2.0, axes, keep)
    if axes is None:
        axes = list(range(x.rank))
    if len(axes) == 1 and not isinstance(order, str):
        return vector_norm(g, x, order, axes, keep)
    if len(axes) == 2:
        return matrix_norm(g, x, order, axes, keep)
    sh.value_error(f"linalg_norm: ord={order!r} needs a 1-D or 2-D input or dim", self)


@symbolic("aten::norm")
def norm(g, self, p=None, dim=None, keepdim=None, dtype=None):
    """norm.ScalarOpt_dim_dtype(Tensor self, Scalar? p, int[1] dim, bool keepdim, *, ScalarType dtype);
    norm.ScalarOpt_dim(...); norm.ScalarOpt_dtype(Tensor self, Scalar? p, *, ScalarType dtype); norm.Scalar"""
    if keepdim is None and dim is not None:  # norm.ScalarOpt_dtype
        dim, dtype = None, dim
    x = _castdtype_arg(g, self, dtype)
    keep = bool(sh._get_const(keepdim, "b", "keepdim")) if keepdim is not None else False
    order = _ord(p, 2.0)
    if order == "fro":
        order = 2.0
    if isinstance(order, str):
        sh.unimplemented("norm", f"p={order!r}")
    return vector_norm(g, x, order, axes_of(dim, x.rank), keep)


@symbolic("aten::frobenius_norm")
def frobenius_norm(g, self, dim=None, keepdim=False):
    """frobenius_norm.dim(Tensor self, int[1] dim, bool keepdim=False) -> Tensor"""
    keep = bool(sh._get_const(keepdim, "b", "keepdim"))
    return reduce(g, "ReduceL2", self, axes_of(dim, self.rank), keep)


@symbolic("aten::logsumexp")
def logsumexp(g, self, dim, keepdim=False):
    """logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor"""
    keep = bool(sh._get_const(keepdim, "b", "keepdim"))
    return reduce(g, "ReduceLogSumExp", to_floating(g, self), axes_of(dim, self.rank), keep)


# ---------------------------------------------------------------------------------------------
# Scans without an ONNX op: each output i reduces the inputs j <= i along dim, through a
# triangular mask (n x n work along dim; a runtime size there needs Range, opset 11).


def _prefix_reduce(g, op_type: str, x: Value, dim, neutral: float, name: str) -> Value:
    rank = x.rank
    if rank is None:
        sh.value_error(f"{name}: the input rank must be known", x)
    if rank == 0:
        return x
    axis = axes_of(dim, rank)[0]
    n = sh.sizes(x)[axis]
    # mask[i, j] = j <= i, broadcast against x unsqueezed at ``axis`` (axis: i, axis + 1: j)
    trailing = [1] * (rank - axis - 1)
    if isinstance(n, int):
        mask = g.constant(torch.tril(torch.ones(n, n, dtype=torch.bool)).reshape([n, n] + trailing))
    else:
        OPSET.require(g, "a dim of runtime size", x)
        index = g.op("Range", g.constant(0, torch.int64), onnx_ops.size(g, x, axis), g.constant(1, torch.int64))
        rows, cols = onnx_ops.unsqueeze(g, index, [1]), onnx_ops.unsqueeze(g, index, [0])
        mask = g.op("Not", g.op("Less", rows, cols))
        if trailing:
            mask = onnx_ops.unsqueeze(g, mask, list(range(2, 2 + len(trailing))))
    spread = onnx_ops.unsqueeze(g, x, [axis])
    if neutral == 0:  # a product with the mask works from opset 7 (Where arrives at 9)
        masked = g.op("Mul", spread, onnx_ops.cast(g, mask, x.dtype))
    else:
        OPSET.require(g, "ONNX Where", x)
        masked = g.op("Where", mask, spread, g.constant(neutral, x.dtype))
    return reduce(g, op_type, masked, [axis + 1], False)


@symbolic("aten::cumsum")
def cumsum(g, self, dim, dtype=None):
    """cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor"""
    # CumSum arrives at opset 11; before, sum the masked prefixes (static size along dim).
    out_dtype = g.output_dtype() or dtype_arg(dtype) or sum_dtype(self.dtype)
    return _prefix_reduce(g, "ReduceSum", onnx_ops.cast(g, self, out_dtype), dim, 0, "cumsum")


@symbolic("aten::cumprod")
def cumprod(g, self, dim, dtype=None):
    """cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor"""
    out_dtype = g.output_dtype() or dtype_arg(dtype) or sum_dtype(self.dtype)
    return _prefix_reduce(g, "ReduceProd", onnx_ops.cast(g, self, out_dtype), dim, 1, "cumprod")


@symbolic("aten::logcumsumexp")
def logcumsumexp(g, self, dim):
    """logcumsumexp(Tensor self, int dim) -> Tensor"""
    return _prefix_reduce(g, "ReduceLogSumExp", to_floating(g, self), dim, -math.inf, "logcumsumexp")


# ---------------------------------------------------------------------------------------------
# median / kthvalue through TopK


def kth_smallest(g, x: Value, k, axis: int, keepdim: bool) -> tuple[Value, Value]:
    """The k-th smallest value (k: 1-based int or 0-d int64 value) along ``axis`` and its index."""
    # TopK takes floats only before opset 11: order integers as float64 (exact to 2**53)
    values_in = x if dtypes.is_floating(x.dtype) or OPSET.met(g, "non-float input (TopK)") \
        else onnx_ops.cast(g, x, torch.float64)
    values, indices = onnx_ops.topk(g, values_in, k, axis, largest=False)
    last = g.constant(k - 1, torch.int64) if isinstance(k, int) else g.op("Sub", k, g.constant(1, torch.int64))
    if keepdim:
        last = onnx_ops.unsqueeze(g, last, [0])
    value = g.op("Gather", values, last, axis_i=axis)
    index = g.op("Gather", indices, last, axis_i=axis)
    return onnx_ops.cast(g, value, x.dtype), index


@symbolic("aten::median")
def median(g, self, dim=None, keepdim=None):
    """median(Tensor self) -> Tensor; median.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor, Tensor)"""
    # torch returns the lower median: the ((n - 1) // 2 + 1)-th smallest element.
    if dim is None:
        flat = g.op("Reshape", self, g.constant([-1], torch.int64))
        return kth_smallest(g, flat, _lower_median_k(g, flat, 0), 0, False)[0]
    axis = axes_of(dim, self.rank)
    if axis == []:
        return self, g.constant(0, torch.int64)
    keep = bool(sh._get_const(keepdim, "b", "keepdim"))
    return kth_smallest(g, self, _lower_median_k(g, self, axis[0]), axis[0], keep)


def _lower_median_k(g, x: Value, axis: int):
    n = sh.sizes(x)[axis] if x.shape is not None else None
    if isinstance(n, int):
        return (n - 1) // 2 + 1
    size = onnx_ops.size(g, x, axis)
    return g.op("Add", g.op("Div", g.op("Sub", size, g.constant(1, torch.int64)), g.constant(2, torch.int64)),
                g.constant(1, torch.int64))


@symbolic("aten::kthvalue")
@sh.parse_args("v", "i", "i", "b")
def kthvalue(g, self, k, dim=-1, keepdim=False):
    """kthvalue(Tensor self, int k, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)"""
    axis = axes_of(dim, self.rank)
    if axis == []:
        return self, g.constant(0, torch.int64)
    return kth_smallest(g, self, k, axis[0], keepdim)


# ---------------------------------------------------------------------------------------------
# Opset 11. Reductions at opset 11: CumSum arrives.


@symbolic("aten::cumsum", since=11)
def cumsum_11(g, self, dim, dtype=None):
    """cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor"""
    out_dtype = g.output_dtype() or dtype_arg(dtype) or sum_dtype(self.dtype)
    x = onnx_ops.cast(g, self, out_dtype)
    if self.rank == 0:
        return x
    axis = axes_of(dim, self.rank)[0]
    # CumSum takes float16 from opset 14 and no 8/16-bit integers: compute wider, cast back.
    compute = out_dtype
    if out_dtype in (torch.int8, torch.uint8, torch.int16, torch.bool):
        compute = torch.int64
    elif out_dtype in (torch.float16, torch.bfloat16) and out_dtype not in onnx_input_types("CumSum", g.opset):
        compute = torch.float32  # CumSum takes them from opset 14
    out = g.op("CumSum", onnx_ops.cast(g, x, compute), g.constant(axis, torch.int64))
    return onnx_ops.cast(g, out, out_dtype)


__all__ = ["cumsum"]
