"""Opset 17.

ONNX 17: LayerNormalization, DFT, STFT, window functions, MelWeightMatrix, SequenceMap.

Conversions whose lowering changes at opset 17 register here; everything else falls through
to the newest lower opset (see ``symbolic/registry.py``).
"""

from .registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(17)
from .opset17.transformer import *  # noqa: F401,F403
from .opset17.spectral import *  # noqa: F401,F403
