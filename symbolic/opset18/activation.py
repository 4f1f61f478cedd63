"""Opset 18 activations: ONNX Mish."""

from __future__ import annotations

from ..opset9.activation import float_dtype, unary
from ..registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(18)


@_onnx_symbolic("aten::mish")
def mish(g, self):
    """mish(Tensor self) -> Tensor"""
    return unary(g, "Mish", self, float_dtype(g, self))
