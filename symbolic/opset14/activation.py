"""Opset 14 activations: ONNX HardSwish."""

from __future__ import annotations

from ..opset9 import activation as opset9
from ..opset9.activation import float_dtype, runtime_supports, unary
from ..registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(14)


@_onnx_symbolic("aten::hardswish")
def hardswish(g, self):
    """hardswish(Tensor self) -> Tensor"""
    dtype = float_dtype(g, self)
    if not runtime_supports(g, "HardSwish", dtype):
        return opset9.hardswish(g, self)  # no float64 kernel in onnxruntime
    return unary(g, "HardSwish", self, dtype)
