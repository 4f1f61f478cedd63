"""Opset 14.

ONNX 14: Trilu, HardSwish, BatchNormalization training_mode, Reshape allowzero, CumSum types,
GRU/LSTM/RNN layout.

Conversions whose lowering changes at opset 14 register here; everything else falls through
to the newest lower opset (see ``symbolic/registry.py``).
"""

from .registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(14)
from .opset14.activation import *  # noqa: F401,F403
