"""Rounding (floor, ceil, trunc, round with decimals, frac) and clamping at opset 9. ONNX Floor/Ceil/Round
take floats only and Max/Min take ints only from opset 12: integers pass through or compute in a
type the target opset has, as in math.py."""

from __future__ import annotations

from torchscript_onnx.builder import onnx_ops

from .. import symbolic_helper as sh
from ..registry import symbolic
from .math import _bound, _is_integral, _round_half_even, max_or_min, trunc_float, unary
from .operand_types import as_operand, native_dtype, result_dtype, runtime_supports
import builtins


# ---------------------------------------------------------------------------------------------
# Rounding

@symbolic("aten::floor")
def floor(g, self):
    """floor(Tensor self) -> Tensor"""
    return self if _is_integral(self) else unary(g, "Floor", self)


@symbolic("aten::ceil")
def ceil(g, self):
    """ceil(Tensor self) -> Tensor"""
    return self if _is_integral(self) else unary(g, "Ceil", self)


@symbolic("aten::trunc")
def trunc(g, self):
    """trunc(Tensor self) -> Tensor"""
    if _is_integral(self):
        return self
    native = native_dtype(g, "Floor", self.dtype)
    return onnx_ops.cast(g, trunc_float(g, as_operand(g, self, native)), self.dtype)


@symbolic("aten::fix")
def fix(g, self):
    """fix(Tensor self) -> Tensor"""
    return trunc(g, self)


@symbolic("aten::frac")
def frac(g, self):
    """frac(Tensor self) -> Tensor"""
    native = native_dtype(g, "Floor", self.dtype)
    x = as_operand(g, self, native)
    return onnx_ops.cast(g, g.op("Sub", x, trunc_float(g, x)), self.dtype)


@symbolic("aten::round")
def round(g, self, decimals=None):  # noqa: A001 - named after the aten op
    """round.decimals(Tensor self, *, int decimals) -> Tensor"""
    if _is_integral(self):
        return self
    digits = sh._get_const(decimals, "i", "decimals") if not sh.is_none(decimals) else 0
    native = native_dtype(g, "Round" if onnx_ops.has_op(g, "Round") else "Floor", self.dtype)
    x = as_operand(g, self, native)
    if digits == 0:
        return onnx_ops.cast(g, _round_half_even(g, x), self.dtype)
    # as torch does: scale by 10**|decimals|, round, scale back
    scale = g.constant(10.0 ** builtins.abs(digits), native)
    scaled = g.op("Mul" if digits > 0 else "Div", x, scale)
    rounded = _round_half_even(g, scaled)
    return onnx_ops.cast(g, g.op("Div" if digits > 0 else "Mul", rounded, scale), self.dtype)


# ---------------------------------------------------------------------------------------------
# Clamping


@symbolic("aten::clamp")
def clamp(g, self, min=None, max=None):  # noqa: A002 - ATen parameter names
    """clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor"""
    dtype = result_dtype(g, self, min, max)
    low, high = _bound(min), _bound(max)
    if isinstance(low, (int, float, type(None))) and isinstance(high, (int, float, type(None))):
        native = native_dtype(g, "Clip", dtype)
        if runtime_supports(g, "Clip", native):
            clipped = onnx_ops.clip(g, as_operand(g, self, native), low, high)
            return onnx_ops.cast(g, clipped, dtype)
    # tensor bounds: Max and Min broadcast
    out = as_operand(g, self, dtype)
    if not sh.is_none(min):
        out = max_or_min(g, out, as_operand(g, min, dtype), "Max")
    if not sh.is_none(max):
        out = max_or_min(g, out, as_operand(g, max, dtype), "Min")
    return out


@symbolic("aten::clip")
def clip(g, self, min=None, max=None):  # noqa: A002
    """clip(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor"""
    return clamp(g, self, min, max)


@symbolic("aten::clamp_min")
def clamp_min(g, self, min):  # noqa: A002
    """clamp_min(Tensor self, Scalar min) -> Tensor"""
    return clamp(g, self, min, None)


@symbolic("aten::clamp_max")
def clamp_max(g, self, max):  # noqa: A002
    """clamp_max(Tensor self, Scalar max) -> Tensor"""
    return clamp(g, self, None, max)
