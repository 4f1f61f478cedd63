"""Trigonometric and hyperbolic functions at opset 9 (ONNX has Sin/Cos/Tan/Asin/Acos/Atan from 7 and
the hyperbolic ones from 9; torch computes integer inputs in float). Typing as in math.py."""

from __future__ import annotations

import math

from torchscript_onnx.builder import dtypes, onnx_ops

from ..registry import symbolic
from .math import _float_unary, compare, unary, where
from .operand_types import as_operand, float_dtype, native_dtype, runtime_supports


@symbolic("aten::sin")
def sin(g, self):
    """sin(Tensor self) -> Tensor"""
    return _float_unary(g, "Sin", self)


@symbolic("aten::cos")
def cos(g, self):
    """cos(Tensor self) -> Tensor"""
    return _float_unary(g, "Cos", self)


@symbolic("aten::tan")
def tan(g, self):
    """tan(Tensor self) -> Tensor"""
    dtype = float_dtype(g, self)
    if runtime_supports(g, "Tan", dtype):
        return unary(g, "Tan", self, dtype)
    x = as_operand(g, self, dtype)  # onnxruntime has Sin and Cos for float64, not Tan
    return g.op("Div", g.op("Sin", x), g.op("Cos", x))


@symbolic("aten::asin")
def asin(g, self):
    """asin(Tensor self) -> Tensor"""
    return _float_unary(g, "Asin", self)


@symbolic("aten::acos")
def acos(g, self):
    """acos(Tensor self) -> Tensor"""
    return _float_unary(g, "Acos", self)


@symbolic("aten::atan")
def atan(g, self):
    """atan(Tensor self) -> Tensor"""
    return _float_unary(g, "Atan", self)


@symbolic("aten::tanh")
def tanh(g, self):
    """tanh(Tensor self) -> Tensor"""
    return _float_unary(g, "Tanh", self)


def _exp_pair(g, self, dtype):
    x = as_operand(g, self, native_dtype(g, "Exp", dtype))
    return x, g.op("Exp", x), g.op("Exp", g.op("Neg", x))


@symbolic("aten::sinh")
def sinh(g, self):
    """sinh(Tensor self) -> Tensor"""
    dtype = float_dtype(g, self)
    if runtime_supports(g, "Sinh", dtype):
        return unary(g, "Sinh", self, dtype)
    _, up, down = _exp_pair(g, self, dtype)  # Sinh arrived in opset 9 (and has no float64 kernel)
    return onnx_ops.cast(g, g.op("Mul", g.op("Sub", up, down), g.constant(0.5, up.dtype)), dtype)


@symbolic("aten::cosh")
def cosh(g, self):
    """cosh(Tensor self) -> Tensor"""
    dtype = float_dtype(g, self)
    if runtime_supports(g, "Cosh", dtype):
        return unary(g, "Cosh", self, dtype)
    _, up, down = _exp_pair(g, self, dtype)
    return onnx_ops.cast(g, g.op("Mul", g.op("Add", up, down), g.constant(0.5, up.dtype)), dtype)


@symbolic("aten::asinh")
def asinh(g, self):
    """asinh(Tensor self) -> Tensor"""
    dtype = float_dtype(g, self)
    if runtime_supports(g, "Asinh", dtype):
        return unary(g, "Asinh", self, dtype)
    # log(x + sqrt(x^2 + 1)), mirrored for negative x to keep precision
    x = as_operand(g, self, native_dtype(g, "Log", dtype))
    ax = g.op("Abs", x)
    root = g.op("Sqrt", g.op("Add", g.op("Mul", ax, ax), g.constant(1.0, x.dtype)))
    magnitude = g.op("Log", g.op("Add", ax, root))
    negative = g.op("Cast", g.op("Less", x, g.constant(0.0, x.dtype)), to_i=dtypes.to_onnx(x.dtype))
    sign = g.op("Sub", g.constant(1.0, x.dtype), g.op("Mul", negative, g.constant(2.0, x.dtype)))
    return onnx_ops.cast(g, g.op("Mul", magnitude, sign), dtype)


@symbolic("aten::acosh")
def acosh(g, self):
    """acosh(Tensor self) -> Tensor"""
    dtype = float_dtype(g, self)
    if runtime_supports(g, "Acosh", dtype):
        return unary(g, "Acosh", self, dtype)
    x = as_operand(g, self, native_dtype(g, "Log", dtype))  # log(x + sqrt(x^2 - 1))
    root = g.op("Sqrt", g.op("Sub", g.op("Mul", x, x), g.constant(1.0, x.dtype)))
    return onnx_ops.cast(g, g.op("Log", g.op("Add", x, root)), dtype)


@symbolic("aten::atanh")
def atanh(g, self):
    """atanh(Tensor self) -> Tensor"""
    dtype = float_dtype(g, self)
    if runtime_supports(g, "Atanh", dtype):
        return unary(g, "Atanh", self, dtype)
    x = as_operand(g, self, native_dtype(g, "Log", dtype))  # log((1 + x) / (1 - x)) / 2
    one = g.constant(1.0, x.dtype)
    ratio = g.op("Div", g.op("Add", one, x), g.op("Sub", one, x))
    return onnx_ops.cast(g, g.op("Mul", g.op("Log", ratio), g.constant(0.5, x.dtype)), dtype)


@symbolic("aten::atan2")
def atan2(g, self, other):
    """atan2(Tensor self, Tensor other) -> Tensor"""
    dtype = float_dtype(g, self)
    y, x = as_operand(g, self, dtype), as_operand(g, other, dtype)
    angle = g.op("Atan", g.op("Div", y, x))
    zero, pi = g.constant(0.0, dtype), g.constant(math.pi, dtype)
    # atan(y / x) is off by +-pi in the left half-plane; with x == 0 the quotient is +-inf (+-pi/2)
    left = where(g, g.op("Less", y, zero), g.op("Sub", angle, pi), g.op("Add", angle, pi))
    out = where(g, g.op("Less", x, zero), left, angle)
    # atan2(0, 0) is 0 (and pi for x == -0, which a comparison cannot see)
    both_zero = g.op("And", compare(g, "Equal", x, zero), compare(g, "Equal", y, zero))
    return where(g, both_zero, y, out)
