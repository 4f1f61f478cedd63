"""Opset 18 activations: ONNX Mish."""

from __future__ import annotations

from ..opset9 import activation as opset9
from ..opset9.activation import float_dtype, runtime_supports, unary
from ..registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(18)


@_onnx_symbolic("aten::mish")
def mish(g, self):
    """mish(Tensor self) -> Tensor"""
    dtype = float_dtype(g, self)
    if not runtime_supports(g, "Mish", dtype):
        return opset9.mish(g, self)  # no float64 kernel in onnxruntime
    return unary(g, "Mish", self, dtype)
