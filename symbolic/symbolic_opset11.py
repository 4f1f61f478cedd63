"""Opset 11.

ONNX 11: Clip takes min/max as inputs; Pad takes pads as an input; DepthToSpace gains CRD mode;
ScatterElements, GatherElements, ScatterND, GatherND, Range, Round, CumSum, Unique, Det,
Sequence ops, Loop/If changes; negative axes are allowed almost everywhere.

Conversions whose lowering changes at opset 11 register here; everything else falls through
to the newest lower opset (see ``symbolic/registry.py``).
"""

from .registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(11)
from .opset11.reduction import *  # noqa: F401,F403
from .opset11.linalg import *  # noqa: F401,F403
from .opset11.embedding import *  # noqa: F401,F403
from .opset11.sequence import *  # noqa: F401,F403
