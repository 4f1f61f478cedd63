"""Elementwise arithmetic and activations at opset 9 (the base most later opsets fall back to)."""

from __future__ import annotations

import torch

from torchscript_onnx import dtypes
from torchscript_onnx.ir import Value

from .. import onnx_ops
from .. import symbolic_helper as sh
from ..registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(9)


def result_dtype(g, *operands) -> torch.dtype | None:
    """The dtype torch gives the op's result: from the trace when recorded, else by promotion."""
    return g.output_dtype() or sh.promote_types(*operands)


def as_operand(g, value, dtype: torch.dtype | None) -> Value:
    """``value`` (a tensor value or Python number) as a graph operand of ``dtype``."""
    if not isinstance(value, Value) or (value.is_const and not value.in_graph and not value.is_param):
        raw = sh.const(value)
        if isinstance(raw, torch.Tensor) and raw.numel() == 1 and raw.dim() == 0:
            raw = raw.item()
        return g.constant(raw, dtype)
    if dtype is None or value.dtype == dtype:
        return value
    return onnx_ops.cast(g, value, dtype)


def binary(g, op_type: str, self, other, compute_dtype: torch.dtype | None = None):
    """``op_type`` on two operands brought to one dtype (torch's promotion)."""
    dtype = compute_dtype or result_dtype(g, self, other)
    return g.op(op_type, as_operand(g, self, dtype), as_operand(g, other, dtype))


def _scaled(g, other, alpha, dtype):
    factor = sh.const(alpha, 1) if alpha is not None else 1
    if sh.is_none(alpha) or factor == 1:
        return other
    return g.op("Mul", as_operand(g, other, dtype), g.constant(factor, dtype))


@_onnx_symbolic("aten::add")
def add(g, self, other, alpha=None):
    """add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"""
    dtype = result_dtype(g, self, other)
    return binary(g, "Add", self, _scaled(g, other, alpha, dtype), dtype)


@_onnx_symbolic("aten::sub")
def sub(g, self, other, alpha=None):
    """sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"""
    dtype = result_dtype(g, self, other)
    return binary(g, "Sub", self, _scaled(g, other, alpha, dtype), dtype)


@_onnx_symbolic("aten::rsub")
def rsub(g, self, other, alpha=None):
    """rsub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"""
    return sub(g, other, self, alpha)


@_onnx_symbolic("aten::mul")
def mul(g, self, other):
    """mul.Tensor(Tensor self, Tensor other) -> Tensor"""
    if self.dtype == torch.bool and sh.scalar_type_of(other) == torch.bool:
        return g.op("And", self, as_operand(g, other, torch.bool))
    return binary(g, "Mul", self, other)


@_onnx_symbolic("aten::div")
def div(g, self, other, rounding_mode=None):
    """div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor"""
    mode = sh.const(rounding_mode, None) if rounding_mode is not None else None
    dtype = result_dtype(g, self, other)
    if mode is None:
        # true division: integer inputs divide as floats
        compute = dtype if dtypes.is_floating(dtype) else torch.float32
        return binary(g, "Div", self, other, compute)
    if dtypes.is_floating(dtype):
        quotient = binary(g, "Div", self, other, dtype)
        return g.op("Floor", quotient) if mode == "floor" else _trunc(g, quotient)
    if mode == "trunc":
        return binary(g, "Div", self, other, dtype)  # ONNX integer Div truncates
    return _floor_divide_int(g, as_operand(g, self, dtype), as_operand(g, other, dtype))


def _trunc(g, x: Value) -> Value:
    """Round toward zero: floor(|x|) * sign(x) (ONNX has no Trunc)."""
    return g.op("Mul", g.op("Floor", g.op("Abs", x)), g.op("Sign", x))


def _floor_divide_int(g, a: Value, b: Value) -> Value:
    """Integer floor division from truncating Div: subtract 1 where signs differ and a remainder exists."""
    quotient = g.op("Div", a, b)
    remainder = g.op("Sub", a, g.op("Mul", quotient, b))
    zero = g.constant(0, a.dtype)
    signs_differ = g.op("Xor", g.op("Less", a, zero), g.op("Less", b, zero))
    has_remainder = g.op("Not", g.op("Equal", remainder, zero))
    fix = g.op("Cast", g.op("And", signs_differ, has_remainder), to_i=dtypes.to_onnx(a.dtype))
    return g.op("Sub", quotient, fix)


@_onnx_symbolic("aten::neg")
def neg(g, self):
    """neg(Tensor self) -> Tensor"""
    return g.op("Neg", self)


def _float_input(g, self: Value) -> Value:
    """Integer inputs to float functions compute in float32, as torch does."""
    if self.dtype is not None and not dtypes.is_floating(self.dtype):
        return onnx_ops.cast(g, self, torch.float32)
    return self


@_onnx_symbolic("aten::relu")
def relu(g, self):
    """relu(Tensor self) -> Tensor"""
    return g.op("Relu", self)


@_onnx_symbolic("aten::sigmoid")
def sigmoid(g, self):
    """sigmoid(Tensor self) -> Tensor"""
    return g.op("Sigmoid", _float_input(g, self))


@_onnx_symbolic("aten::tanh")
def tanh(g, self):
    """tanh(Tensor self) -> Tensor"""
    return g.op("Tanh", _float_input(g, self))


@_onnx_symbolic("aten::exp")
def exp(g, self):
    """exp(Tensor self) -> Tensor"""
    return g.op("Exp", _float_input(g, self))


@_onnx_symbolic("aten::log")
def log(g, self):
    """log(Tensor self) -> Tensor"""
    return g.op("Log", _float_input(g, self))


@_onnx_symbolic("aten::sqrt")
def sqrt(g, self):
    """sqrt(Tensor self) -> Tensor"""
    return g.op("Sqrt", _float_input(g, self))


@_onnx_symbolic("aten::abs")
def abs(g, self):  # noqa: A001 - named after the aten op
    """abs(Tensor self) -> Tensor"""
    return g.op("Abs", self)


@_onnx_symbolic("aten::leaky_relu")
@sh.parse_args("v", "f")
def leaky_relu(g, self, negative_slope=0.01):
    """leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor"""
    return g.op("LeakyRelu", self, alpha_f=negative_slope)


@_onnx_symbolic("aten::hardtanh")
@sh.parse_args("v", "f", "f")
def hardtanh(g, self, min_val=-1.0, max_val=1.0):
    """hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor"""
    return onnx_ops.clip(g, self, min_val, max_val)


@_onnx_symbolic("aten::relu6")
def relu6(g, self):
    """relu6(Tensor self) -> Tensor"""
    return onnx_ops.clip(g, self, 0.0, 6.0)


@_onnx_symbolic("aten::clamp")
def clamp(g, self, min=None, max=None):  # noqa: A002 - ATen parameter names
    """clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor"""
    low, high = sh.const(min, sh.UNKNOWN), sh.const(max, sh.UNKNOWN)
    if low is not sh.UNKNOWN and high is not sh.UNKNOWN:
        low = None if low is None else float(low.item() if isinstance(low, torch.Tensor) else low)
        high = None if high is None else float(high.item() if isinstance(high, torch.Tensor) else high)
        if g.opset < 11 or dtypes.is_floating(self.dtype):
            return onnx_ops.clip(g, self, low, high)
    # tensor bounds, or integer inputs: Max/Min broadcast and accept every numeric type
    out = self
    if not sh.is_none(min):
        out = g.op("Max", out, as_operand(g, min, self.dtype))
    if not sh.is_none(max):
        out = g.op("Min", out, as_operand(g, max, self.dtype))
    return out


@_onnx_symbolic("aten::clamp_min")
def clamp_min(g, self, min):  # noqa: A002
    """clamp_min(Tensor self, Scalar min) -> Tensor"""
    return clamp(g, self, min, None)


@_onnx_symbolic("aten::clamp_max")
def clamp_max(g, self, max):  # noqa: A002
    """clamp_max(Tensor self, Scalar max) -> Tensor"""
    return clamp(g, self, None, max)


def _softmax(g, op_type: str, self: Value, dim: int, dtype) -> Value:
    if not sh.is_none(dtype) and dtype is not None:
        self = onnx_ops.cast(g, self, dtypes.from_scalar_type(sh.const(dtype)))
    rank = self.rank
    if rank is None:
        sh.value_error(f"aten::{op_type.lower()}: the input rank must be known", self)
    dim = dim + rank if dim < 0 else dim
    if g.opset >= 13 or dim == rank - 1:
        return g.op(op_type, self, axis_i=dim)
    # Before opset 13 the op flattens to 2-D at ``axis``: move ``dim`` last, normalise, move back.
    perm = list(range(rank))
    perm[dim], perm[-1] = perm[-1], perm[dim]
    moved = g.op("Transpose", self, perm_i=perm)
    return g.op("Transpose", g.op(op_type, moved, axis_i=rank - 1), perm_i=perm)


@_onnx_symbolic("aten::softmax")
@sh.parse_args("v", "i", "none")
def softmax(g, self, dim, dtype=None):
    """softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor"""
    return _softmax(g, "Softmax", self, dim, dtype)


@_onnx_symbolic("aten::log_softmax")
@sh.parse_args("v", "i", "none")
def log_softmax(g, self, dim, dtype=None):
    """log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor"""
    return _softmax(g, "LogSoftmax", self, dim, dtype)


@_onnx_symbolic("aten::_softmax")
@sh.parse_args("v", "i", "b")
def _softmax_internal(g, self, dim, half_to_float):
    """_softmax(Tensor self, int dim, bool half_to_float) -> Tensor"""
    return _softmax(g, "Softmax", self, dim, None)


@_onnx_symbolic("aten::_log_softmax")
@sh.parse_args("v", "i", "b")
def _log_softmax(g, self, dim, half_to_float):
    """_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor"""
    return _softmax(g, "LogSoftmax", self, dim, None)
