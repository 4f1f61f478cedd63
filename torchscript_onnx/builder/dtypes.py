"""One table of element types: torch dtype, ONNX TensorProto type, JIT ScalarType index and name.

Values in the builder carry a ``torch.dtype``; these tables translate at the edges (JIT constants
hold ScalarType indices, ONNX wants TensorProto codes, legacy symbolics compare scalar names),
and ``tensor_bytes`` gives a tensor's bytes as ONNX stores them for its type.
"""

from __future__ import annotations

import enum

import torch
from onnx import TensorProto

from .errors import OnnxExporterError
from .lazy import LazyTensor

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
# a quantized tensor's integer values: the type ONNX (and legacy, at the graph's boundary) holds them in
QUANTIZED_STORAGE = {torch.quint8: torch.uint8, torch.qint8: torch.int8, torch.qint32: torch.int32}


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


# -- the legacy enums: what custom symbolics import as torch.onnx.JitScalarType / TensorProtoDataType --

# ONNX's element types by name (TensorProto.DataType), as torch._C._onnx exposes them.
TensorProtoDataType = enum.IntEnum("TensorProtoDataType", dict(TensorProto.DataType.items()), module=__name__)

# (member, JIT scalar name, C++ type name, torch dtype) in the legacy exporter's numbering, which
# follows c10's ScalarType up to BFloat16 and then counts on for the float8 types.
_JIT_SCALAR_TYPES = (
    ("UINT8", "Byte", "uint8_t", torch.uint8),
    ("INT8", "Char", "int8_t", torch.int8),
    ("INT16", "Short", "int16_t", torch.int16),
    ("INT", "Int", "int", torch.int32),
    ("INT64", "Long", "int64_t", torch.int64),
    ("HALF", "Half", "half", torch.float16),
    ("FLOAT", "Float", "float", torch.float32),
    ("DOUBLE", "Double", "double", torch.float64),
    ("COMPLEX32", "ComplexHalf", "complex32", torch.complex32),
    ("COMPLEX64", "ComplexFloat", "complex64", torch.complex64),
    ("COMPLEX128", "ComplexDouble", "complex128", torch.complex128),
    ("BOOL", "Bool", "bool", torch.bool),
    ("QINT8", "QInt8", "qint8", torch.qint8),
    ("QUINT8", "QUInt8", "quint8", torch.quint8),
    ("QINT32", "QInt32", "qint32", torch.qint32),
    ("BFLOAT16", "BFloat16", "bfloat16", torch.bfloat16),
    ("FLOAT8E5M2", "Float8E5M2", "float8_e5m2", torch.float8_e5m2),
    ("FLOAT8E4M3FN", "Float8E4M3FN", "float8_e4m3fn", torch.float8_e4m3fn),
    ("FLOAT8E5M2FNUZ", "Float8E5M2FNUZ", "float8_e5m2fnuz", torch.float8_e5m2fnuz),
    ("FLOAT8E4M3FNUZ", "Float8E4M3FNUZ", "float8_e4m3fnuz", torch.float8_e4m3fnuz),
    ("UNDEFINED", "Undefined", None, None),
)
_ONNX_OF_FLOAT8FNUZ = {torch.float8_e5m2fnuz: TensorProto.FLOAT8E5M2FNUZ,
                       torch.float8_e4m3fnuz: TensorProto.FLOAT8E4M3FNUZ}


class JitScalarType(enum.IntEnum):
    """A tensor's element type as the legacy exporter's symbolics name it (``torch.onnx.JitScalarType``):
    ``JitScalarType.from_value(x).onnx_type()``, ``JitScalarType.FLOAT.dtype()``, ``.scalar_name()``."""

    UINT8 = 0
    INT8 = 1
    INT16 = 2
    INT = 3
    INT64 = 4
    HALF = 5
    FLOAT = 6
    DOUBLE = 7
    COMPLEX32 = 8
    COMPLEX64 = 9
    COMPLEX128 = 10
    BOOL = 11
    QINT8 = 12
    QUINT8 = 13
    QINT32 = 14
    BFLOAT16 = 15
    FLOAT8E5M2 = 16
    FLOAT8E4M3FN = 17
    FLOAT8E5M2FNUZ = 18
    FLOAT8E4M3FNUZ = 19
    UNDEFINED = 20

    @classmethod
    def from_dtype(cls, dtype: torch.dtype | None) -> JitScalarType:
        member = _JIT_BY_DTYPE.get(dtype) if dtype is not None else None
        if member is None:
            raise OnnxExporterError(f"Unknown dtype: {dtype}")
        return member

    @classmethod
    def from_onnx_type(cls, onnx_type) -> JitScalarType:
        member = _JIT_BY_ONNX.get(int(onnx_type)) if isinstance(onnx_type, int) else None
        if member is None:
            raise OnnxExporterError(f"Unknown onnx_type: {onnx_type}")
        return member

    @classmethod
    def _from_name(cls, name: str | None) -> JitScalarType:
        member = _JIT_BY_NAME.get(name) if name is not None else None
        if member is None:
            raise OnnxExporterError(f"Unknown torch or scalar type: {name!r}")
        return member

    @classmethod
    def from_value(cls, value, default: JitScalarType | None = None) -> JitScalarType:
        """The element type of a tensor, a graph value (ours or a ``torch._C.Value``), or ``default``
        when it has none (None, a None constant, a value of unknown type)."""
        if isinstance(value, torch.Tensor):
            return cls.from_dtype(value.dtype)
        dtype = _element_dtype(value)
        if dtype is not None and dtype in _JIT_BY_DTYPE:
            return _JIT_BY_DTYPE[dtype]
        if default is None:
            raise OnnxExporterError(f"cannot tell the scalar type of {value!r}, and no default was given")
        if not isinstance(default, JitScalarType):
            raise OnnxExporterError("default value must be a JitScalarType object.")
        return default

    def scalar_name(self) -> str:
        return _JIT_SCALAR_TYPES[self][1]

    def torch_name(self) -> str:
        name = _JIT_SCALAR_TYPES[self][2]
        if name is None:
            raise OnnxExporterError(f"{self} has no torch type name")
        return name

    def dtype(self) -> torch.dtype:
        dtype = _JIT_SCALAR_TYPES[self][3]
        if dtype is None:
            raise OnnxExporterError(f"{self} has no torch dtype")
        return dtype

    def onnx_type(self) -> TensorProtoDataType:
        onnx_type = _onnx_type_of(self)
        if onnx_type is None:
            raise OnnxExporterError(f"Scalar type {self} cannot be converted to ONNX")
        return TensorProtoDataType(onnx_type)

    def onnx_compatible(self) -> bool:
        return self not in (JitScalarType.UNDEFINED, JitScalarType.COMPLEX32) and _onnx_type_of(self) is not None


def _onnx_type_of(member: JitScalarType) -> int | None:
    dtype = _JIT_SCALAR_TYPES[member][3]
    if member in (JitScalarType.UNDEFINED, JitScalarType.COMPLEX32):  # legacy's answer for both
        return TensorProto.UNDEFINED
    return TORCH_TO_ONNX.get(dtype, _ONNX_OF_FLOAT8FNUZ.get(dtype))


def _element_dtype(value) -> torch.dtype | None:
    """The element dtype of a builder value, or of a ``torch._C.Value`` (a tensor, a list or an
    optional of tensors); None if unknown or a None constant."""
    dtype = getattr(value, "dtype", None)
    if isinstance(dtype, torch.dtype):
        return dtype
    if not isinstance(value, torch._C.Value) or value.node().mustBeNone():
        return None
    jit_type = value.type()
    if isinstance(jit_type, (torch._C.ListType, torch._C.OptionalType)):
        jit_type = jit_type.getElementType()
    return jit_type.dtype() if isinstance(jit_type, torch._C.TensorType) else None


_JIT_BY_DTYPE = {row[3]: JitScalarType(k) for k, row in enumerate(_JIT_SCALAR_TYPES) if row[3] is not None}
# by the legacy scalar name, the C++ type name, and the scalar name torch._C's types give (Float8_e5m2)
_JIT_BY_NAME = {name: JitScalarType(k) for k, row in enumerate(_JIT_SCALAR_TYPES) for name in row[1:3] if name}
_JIT_BY_NAME.update((TORCH_TO_SCALAR_NAME[dtype], member) for dtype, member in _JIT_BY_DTYPE.items()
                    if dtype in TORCH_TO_SCALAR_NAME)
_JIT_BY_ONNX: dict[int, JitScalarType] = {}
for _member in JitScalarType:
    _onnx = _onnx_type_of(_member)
    if _onnx is not None:  # the plain type for INT8/UINT8/INT32, not the quantized one sharing it
        _JIT_BY_ONNX.setdefault(_onnx, _member)


def tensor_bytes(tensor: torch.Tensor) -> memoryview:
    """The tensor's little-endian bytes as ONNX stores them (raw data), without a copy when it is
    contiguous on the CPU: the serializer writes these, the optimizer compares tensors by them."""
    if isinstance(tensor, LazyTensor):  # whole; initializers stream theirs in chunks instead
        tensor = tensor.materialize()
    tensor = tensor.detach()
    if tensor.is_quantized:
        tensor = tensor.int_repr()
    tensor = tensor.cpu().contiguous()
    if tensor.dtype == torch.bfloat16:
        tensor = tensor.view(torch.int16)
    elif tensor.dtype in (torch.float8_e5m2, torch.float8_e4m3fn):
        tensor = tensor.view(torch.uint8)
    if tensor.numel() == 0:  # memoryview cannot cast a view with a zero in its shape
        return memoryview(b"")
    return memoryview(tensor.numpy()).cast("B")
