"""Opset 16.

ONNX 16: GridSample, ScatterElements/ScatterND reduction, LeakyRelu/PRelu bfloat16, Where bfloat16.

Conversions whose lowering changes at opset 16 register here; everything else falls through
to the newest lower opset (see ``symbolic/registry.py``).
"""

from .registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(16)
from .opset16.rearrange import *  # noqa: F401,F403
