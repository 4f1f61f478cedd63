"""The dtype rules symbolics share: which element types an ONNX op takes at an opset and
onnxruntime implements (``runtime_supports``, ``native_dtype``), the dtype torch gives a result
(``result_dtype``, ``float_dtype``), operands made of that dtype (``as_operand``, ``to_floating``),
and dtype arguments read from the graph (``dtype_arg``). No conversions are registered here."""

from __future__ import annotations

import functools

import onnx.defs
import torch

from torchscript_onnx.builder import dtypes, onnx_ops
from torchscript_onnx.builder.ir import Value

from .. import symbolic_helper as sh


_ONNX_TYPE_NAMES = {
    "tensor(bool)": torch.bool, "tensor(uint8)": torch.uint8, "tensor(int8)": torch.int8,
    "tensor(int16)": torch.int16, "tensor(int32)": torch.int32, "tensor(int64)": torch.int64,
    "tensor(uint16)": torch.uint16, "tensor(uint32)": torch.uint32, "tensor(uint64)": torch.uint64,
    "tensor(float16)": torch.float16, "tensor(bfloat16)": torch.bfloat16,
    "tensor(float)": torch.float32, "tensor(double)": torch.float64,
}
# Wider types that hold every value of a type exactly (int64 in float64 only up to 2**53).
_WIDER = {
    torch.bool: (torch.int32, torch.int64, torch.float32, torch.float64),
    torch.uint8: (torch.int32, torch.int64, torch.float32, torch.float64),
    torch.int8: (torch.int32, torch.int64, torch.float32, torch.float64),
    torch.int16: (torch.int32, torch.int64, torch.float32, torch.float64),
    torch.uint16: (torch.int32, torch.int64, torch.float32, torch.float64),
    torch.int32: (torch.int64, torch.float64),
    torch.uint32: (torch.int64, torch.float64),
    torch.int64: (torch.float64,),
    torch.uint64: (torch.float64,),
    torch.float16: (torch.float32, torch.float64),
    torch.bfloat16: (torch.float32, torch.float64),
    torch.float32: (torch.float64,),
}


@functools.lru_cache(maxsize=None)
def onnx_input_types(op_type: str, opset: int, index: int = 0) -> frozenset:
    """The torch dtypes ONNX ``op_type`` takes for input ``index`` at ``opset``, from its schema
    (none when the op comes at a later opset)."""
    try:
        schema = onnx.defs.get_schema(op_type, opset)
    except onnx.defs.SchemaError:
        return frozenset()
    formal = schema.inputs[min(index, len(schema.inputs) - 1)]
    for constraint in schema.type_constraints:
        if constraint.type_param_str == formal.type_str:
            return frozenset(_ONNX_TYPE_NAMES[t] for t in constraint.allowed_type_strs if t in _ONNX_TYPE_NAMES)
    return frozenset([_ONNX_TYPE_NAMES[formal.type_str]] if formal.type_str in _ONNX_TYPE_NAMES else [])


# Types the schema lists but onnxruntime's CPU kernels lack: (first opset, last opset, types).
# ``native_dtype`` widens around them when a wider type holds the values; float16 needs no entry
# (onnxruntime computes float16 nodes in float32 by itself). Symbolics decompose float64 ops
# that have no kernel into ops that have one, where the decomposition is exact.
_NO_DOUBLE = ((7, 99, frozenset({torch.float64})),)
RUNTIME_GAPS = {
    **{op: _NO_DOUBLE for op in ("LeakyRelu", "Elu", "Selu", "HardSigmoid", "HardSwish", "Softplus", "Softsign",
                                 "PRelu", "Mish", "Gelu", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh",
                                 "Asinh", "Acosh", "Atanh", "Erf", "InstanceNormalization")},
    "Clip": ((7, 11, frozenset({torch.float64})), (12, 99, frozenset({torch.int16, torch.uint16}))),
    "Max": ((7, 7, frozenset({torch.float64})), (12, 99, frozenset({torch.int16, torch.uint16}))),
    "Min": ((7, 7, frozenset({torch.float64})), (12, 99, frozenset({torch.int16, torch.uint16}))),
    "Where": ((9, 99, frozenset({torch.bool, torch.int16, torch.uint16, torch.uint64})),),
    "Relu": ((14, 99, frozenset({torch.int16, torch.int64})),),
    "BitShift": ((11, 99, frozenset({torch.uint16})),),
}


def runtime_supports(g, op_type: str, dtype: torch.dtype | None, index: int = 0) -> bool:
    """Whether ONNX ``op_type`` takes ``dtype`` at the target opset and onnxruntime implements it."""
    if dtype not in onnx_input_types(op_type, g.opset, index):
        return False
    return not any(lo <= g.opset <= hi and dtype in gap for lo, hi, gap in RUNTIME_GAPS.get(op_type, ()))


def native_dtype(g, op_type: str, dtype: torch.dtype | None, index: int = 0) -> torch.dtype | None:
    """``dtype`` if ONNX ``op_type`` takes it at the target opset, else the narrowest wider type it takes."""
    if dtype is None or runtime_supports(g, op_type, dtype, index):
        return dtype
    for wider in _WIDER.get(dtype, ()):
        if runtime_supports(g, op_type, wider, index):
            return wider
    spec = onnx_input_types(op_type, g.opset, index)
    for candidate in (dtype, *_WIDER.get(dtype, ())):
        if candidate in spec:
            return candidate  # valid ONNX; only onnxruntime lacks the kernel
    sh.value_error(f"ONNX {op_type} at opset {g.opset} takes no tensor of {dtype} or a type that holds it")


def result_dtype(g, *operands) -> torch.dtype | None:
    """The dtype torch gives the op's result: from the trace when recorded, else by promotion."""
    return g.output_dtype() or sh.promote_types(*operands)


def float_dtype(g, self) -> torch.dtype:
    """The result dtype of a floating-point function of ``self`` (integers compute in float32)."""
    dtype = g.output_dtype()
    if dtypes.is_floating(dtype):
        return dtype
    return self.dtype if dtypes.is_floating(sh.dtype(self)) else torch.float32


def as_operand(g, value, dtype: torch.dtype | None) -> Value:
    """``value`` (a tensor value or Python number) as a graph operand of ``dtype``."""
    if not isinstance(value, Value) or (value.is_const and not value.in_graph and not value.is_param):
        raw = sh.const(value)
        if isinstance(raw, torch.Tensor) and raw.numel() == 1 and raw.dim() == 0:
            raw = raw.item()
        return g.constant(raw, dtype)
    if dtype is None or value.dtype == dtype:
        return value
    return onnx_ops.cast(g, value, dtype)


def dtype_arg(dtype) -> torch.dtype | None:
    """A ``ScalarType?`` argument (an int code, a torch.dtype, or None) as a torch dtype or None."""
    raw = sh.const(dtype, None) if dtype is not None else None
    if raw is None or isinstance(raw, torch.dtype):
        return raw
    if isinstance(raw, bool) or not isinstance(raw, (int, torch.Tensor)):
        return None
    return dtypes.from_scalar_type(int(raw))


def to_floating(g, x: Value) -> Value:
    """Integer and bool inputs to float functions compute in float32, as torch does."""
    if x.dtype is not None and not dtypes.is_floating(x.dtype):
        return onnx_ops.cast(g, x, torch.float32)
    return x
