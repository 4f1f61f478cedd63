"""Opset 23.

ONNX 23: Attention, RMSNormalization, RotaryEmbedding; float4e2m1; Cast/QuantizeLinear updates.

Conversions whose lowering changes at opset 23 register here; everything else falls through
to the newest lower opset (see ``symbolic/registry.py``).
"""

from .registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(23)
from .opset23.transformer import *  # noqa: F401,F403
