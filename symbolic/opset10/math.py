"""Opset 10 arithmetic: ONNX Mod gives fmod and remainder directly."""

from __future__ import annotations

from torchscript_onnx import dtypes

from .. import onnx_ops
from ..opset9.math import as_operand, native_dtype, result_dtype
from ..registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(10)


@_onnx_symbolic("aten::fmod")
def fmod(g, self, other):
    """fmod.Tensor(Tensor self, Tensor other) -> Tensor"""
    dtype = result_dtype(g, self, other)
    native = native_dtype(g, "Mod", dtype)
    out = g.op("Mod", as_operand(g, self, native), as_operand(g, other, native), fmod_i=1)
    return onnx_ops.cast(g, out, dtype)


@_onnx_symbolic("aten::remainder")
def remainder(g, self, other):
    """remainder.Tensor(Tensor self, Tensor other) -> Tensor"""
    dtype = result_dtype(g, self, other)
    native = native_dtype(g, "Mod", dtype)
    a, b = as_operand(g, self, native), as_operand(g, other, native)
    if not dtypes.is_floating(native):
        return onnx_ops.cast(g, g.op("Mod", a, b, fmod_i=0), dtype)  # integer Mod follows the divisor's sign
    # Mod takes floats only with fmod=1 (the dividend's sign): add b where the signs of r and b differ
    r = g.op("Mod", a, b, fmod_i=1)
    differ = g.op("Less", g.op("Mul", r, b), g.constant(0.0, native))
    out = g.op("Add", r, g.op("Mul", g.op("Cast", differ, to_i=dtypes.to_onnx(native)), b))
    return onnx_ops.cast(g, out, dtype)
