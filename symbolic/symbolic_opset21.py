"""Opset 21.

ONNX 21: int4/uint4 types; QuantizeLinear/DequantizeLinear blocked quantization; GroupNormalization
per-group-channel fix.

Conversions whose lowering changes at opset 21 register here; everything else falls through
to the newest lower opset (see ``symbolic/registry.py``).
"""

from .registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(21)
from .opset21.normalization import *  # noqa: F401,F403
