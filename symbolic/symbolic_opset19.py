"""Opset 19.

ONNX 19: float8 types; AveragePool dilations; DeformConv; Equal on strings; Cast saturate.

Conversions whose lowering changes at opset 19 register here; everything else falls through
to the newest lower opset (see ``symbolic/registry.py``).
"""

from .registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(19)
