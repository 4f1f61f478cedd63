"""Opset 8.

ONNX 8 added Expand, Max/Min/Mean/Sum broadcasting, and MaxPool's second (indices) output.

Conversions whose lowering changes at opset 8 register here; everything else falls through
to the newest lower opset (see ``symbolic/registry.py``).
"""

from .registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(8)
