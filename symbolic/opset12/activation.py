"""Opset 12 activations: ONNX Celu (float32 only)."""

from __future__ import annotations

import torch

from .. import symbolic_helper as sh
from ..opset9 import activation as opset9
from ..registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(12)


@_onnx_symbolic("aten::celu")
@sh.parse_args("v", "f")
def celu(g, self, alpha=1.0):
    """celu(Tensor self, Scalar alpha=1.0) -> Tensor"""
    if self.dtype != torch.float32:
        return opset9.celu(g, self, alpha)  # ONNX Celu takes float32 only
    return g.op("Celu", self, alpha_f=alpha)
