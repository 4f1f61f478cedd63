"""Opset 13.

ONNX 13: Softmax/LogSoftmax/Hardmax normalise along one axis (no more 2-D coercion);
Squeeze/Unsqueeze/ReduceSum/Split take axes or split sizes as inputs; bfloat16 widely typed.

Conversions whose lowering changes at opset 13 register here; everything else falls through
to the newest lower opset (see ``symbolic/registry.py``).
"""

from .registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(13)
