"""Opset 20.

ONNX 20: Gelu, AffineGrid, ConstantOfShape/IsNaN/IsInf on float8, ImageDecoder,
RegexFullMatch, StringConcat, StringSplit.

Conversions whose lowering changes at opset 20 register here; everything else falls through
to the newest lower opset (see ``symbolic/registry.py``).
"""

from .registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(20)
from .opset20.activation import *  # noqa: F401,F403
from .opset20.rearrange import *  # noqa: F401,F403
