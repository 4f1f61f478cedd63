"""Opset 12.

ONNX 12: Dropout takes ratio and training_mode as inputs; Celu, Einsum, GreaterOrEqual,
LessOrEqual, NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss, ArgMax select_last_index.

Conversions whose lowering changes at opset 12 register here; everything else falls through
to the newest lower opset (see ``symbolic/registry.py``).
"""

from .registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(12)
from .opset12.activation import *  # noqa: F401,F403
from .opset12.linalg import *  # noqa: F401,F403
from .opset12.loss import *  # noqa: F401,F403
