"""Opset 14 activations: ONNX HardSwish."""

from __future__ import annotations

from ..opset9.activation import float_dtype, unary
from ..registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(14)


@_onnx_symbolic("aten::hardswish")
def hardswish(g, self):
    """hardswish(Tensor self) -> Tensor"""
    return unary(g, "HardSwish", self, float_dtype(g, self))
