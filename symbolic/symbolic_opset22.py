"""Opset 22.

ONNX 22: bfloat16 for most float ops (activations, pooling, conv, RNNs).

Conversions whose lowering changes at opset 22 register here; everything else falls through
to the newest lower opset (see ``symbolic/registry.py``).
"""

from .registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(22)
