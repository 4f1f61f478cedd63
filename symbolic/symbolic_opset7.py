"""Opset 7.

ONNX 7 brought multidirectional broadcasting to the arithmetic ops, BatchNormalization without
`spatial`-dependent outputs, Dropout without `is_test`, and Gemm-7, whose C input is required.

Conversions whose lowering changes at opset 7 register here; everything else falls through
to the newest lower opset (see ``symbolic/registry.py``).
"""

from .registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(7)
