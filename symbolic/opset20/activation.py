"""Opset 20 activations: ONNX Gelu (exact and tanh approximation)."""

from __future__ import annotations

from .. import symbolic_helper as sh
from ..opset9.activation import float_dtype, unary
from ..registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(20)


@_onnx_symbolic("aten::gelu")
@sh.parse_args("v", "s")
def gelu(g, self, approximate="none"):
    """gelu(Tensor self, *, str approximate='none') -> Tensor"""
    return unary(g, "Gelu", self, float_dtype(g, self), approximate_s=approximate)
