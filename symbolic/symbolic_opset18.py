"""Opset 18.

ONNX 18: the remaining Reduce* ops take axes as an input; Split gains num_outputs; Pad gains
axes; Resize gains antialias, axes and keep_aspect_ratio_policy; BitwiseAnd/Or/Xor/Not, Col2Im,
GroupNormalization, Mish typed, ScatterND max/min.

Conversions whose lowering changes at opset 18 register here; everything else falls through
to the newest lower opset (see ``symbolic/registry.py``).
"""

from .registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(18)
from .opset18.activation import *  # noqa: F401,F403
from .opset18.rearrange import *  # noqa: F401,F403
