"""Opset 20 activations: ONNX Gelu (exact and tanh approximation)."""

from __future__ import annotations

from .. import symbolic_helper as sh
from ..opset9 import activation as opset9
from ..opset9.activation import float_dtype, runtime_supports, unary
from ..registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(20)


@_onnx_symbolic("aten::gelu")
@sh.parse_args("v", "s")
def gelu(g, self, approximate="none"):
    """gelu(Tensor self, *, str approximate='none') -> Tensor"""
    dtype = float_dtype(g, self)
    if not runtime_supports(g, "Gelu", dtype):
        return opset9.gelu(g, self, approximate)  # no float64 kernel in onnxruntime
    return unary(g, "Gelu", self, dtype, approximate_s=approximate)
