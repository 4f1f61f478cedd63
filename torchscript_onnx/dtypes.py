"""One table of element types: torch dtype, ONNX TensorProto type, JIT ScalarType index and name.

Values in the builder carry a ``torch.dtype``; these tables translate at the edges (JIT constants
hold ScalarType indices, ONNX wants TensorProto codes, legacy symbolics compare scalar names).
"""

from __future__ import annotations

import torch
from onnx import TensorProto

# (torch dtype, ONNX type, ScalarType index, legacy scalar name)
_TABLE = (
    (torch.uint8, TensorProto.UINT8, 0, "Byte"),
    (torch.int8, TensorProto.INT8, 1, "Char"),
    (torch.int16, TensorProto.INT16, 2, "Short"),
    (torch.int32, TensorProto.INT32, 3, "Int"),
    (torch.int64, TensorProto.INT64, 4, "Long"),
    (torch.float16, TensorProto.FLOAT16, 5, "Half"),
    (torch.float32, TensorProto.FLOAT, 6, "Float"),
    (torch.float64, TensorProto.DOUBLE, 7, "Double"),
    (torch.complex64, TensorProto.COMPLEX64, 9, "ComplexFloat"),
    (torch.complex128, TensorProto.COMPLEX128, 10, "ComplexDouble"),
    (torch.bool, TensorProto.BOOL, 11, "Bool"),
    (torch.qint8, TensorProto.INT8, 12, "QInt8"),
    (torch.quint8, TensorProto.UINT8, 13, "QUInt8"),
    (torch.qint32, TensorProto.INT32, 14, "QInt32"),
    (torch.bfloat16, TensorProto.BFLOAT16, 15, "BFloat16"),
    (torch.float8_e5m2, TensorProto.FLOAT8E5M2, 23, "Float8_e5m2"),
    (torch.float8_e4m3fn, TensorProto.FLOAT8E4M3FN, 24, "Float8_e4m3fn"),
    (torch.uint16, TensorProto.UINT16, 27, "UInt16"),
    (torch.uint32, TensorProto.UINT32, 28, "UInt32"),
    (torch.uint64, TensorProto.UINT64, 29, "UInt64"),
)

TORCH_TO_ONNX = {t: o for t, o, _, _ in _TABLE}
ONNX_TO_TORCH = {}
for _t, _o, _, _ in _TABLE:
    ONNX_TO_TORCH.setdefault(_o, _t)  # quantized types map back to their plain storage type
SCALAR_TYPE_TO_TORCH = {i: t for t, _, i, _ in _TABLE}
TORCH_TO_SCALAR_TYPE = {t: i for t, _, i, _ in _TABLE}
TORCH_TO_SCALAR_NAME = {t: n for t, _, _, n in _TABLE}
SCALAR_NAME_TO_TORCH = {n: t for t, _, _, n in _TABLE}

FLOATING = frozenset({torch.float16, torch.float32, torch.float64, torch.bfloat16})
INTEGRAL = frozenset({torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64})


def to_onnx(dtype: torch.dtype) -> int:
    try:
        return TORCH_TO_ONNX[dtype]
    except KeyError:
        raise TypeError(f"dtype {dtype} has no ONNX element type") from None


def from_scalar_type(index: int) -> torch.dtype:
    try:
        return SCALAR_TYPE_TO_TORCH[index]
    except KeyError:
        raise TypeError(f"ScalarType {index} has no ONNX element type") from None


def is_floating(dtype: torch.dtype | None) -> bool:
    return dtype in FLOATING
