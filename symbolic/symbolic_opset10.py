"""Opset 10.

ONNX 10: Slice takes starts/ends/axes/steps as inputs; MaxPool/AveragePool gain ceil_mode and
MaxPool dilations; TopK takes k as an input; Resize, Mod, ThresholdedRelu, QuantizeLinear/
DequantizeLinear, IsInf, ReverseSequence, RoiAlign, NonMaxSuppression appear; Upsample is deprecated.

Conversions whose lowering changes at opset 10 register here; everything else falls through
to the newest lower opset (see ``symbolic/registry.py``).
"""

from .registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(10)
from .opset10.math import *  # noqa: F401,F403
