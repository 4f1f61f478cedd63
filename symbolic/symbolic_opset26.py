"""Opset 26.

ONNX 26: BitCast, CumProd and refinements; onnxruntime 1.31 runs every op defined here.

Conversions whose lowering changes at opset 26 register here; everything else falls through
to the newest lower opset (see ``symbolic/registry.py``).
"""

from .registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(26)
