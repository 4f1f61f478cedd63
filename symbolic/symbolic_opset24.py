"""Opset 24.

ONNX 24: TensorScatter, Swish, TopK/Squeeze/Unsqueeze typing; Attention with KV-cache inputs.

Conversions whose lowering changes at opset 24 register here; everything else falls through
to the newest lower opset (see ``symbolic/registry.py``).
"""

from .registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(24)
