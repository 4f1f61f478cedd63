"""Opset 15.

ONNX 15: Shape gains start/end; Bernoulli, CastLike, Optional types, OptionalHasElement.

Conversions whose lowering changes at opset 15 register here; everything else falls through
to the newest lower opset (see ``symbolic/registry.py``).
"""

from .registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(15)
from .opset15.creation import *  # noqa: F401,F403
