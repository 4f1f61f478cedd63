"""Opset 25.

ONNX 25: further type extensions (int2/uint2) across shape and cast ops.

Conversions whose lowering changes at opset 25 register here; everything else falls through
to the newest lower opset (see ``symbolic/registry.py``).
"""

from .registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(25)
