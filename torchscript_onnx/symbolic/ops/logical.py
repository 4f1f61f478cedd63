"""Comparisons, logical and bitwise ops, where, and the NaN/inf tests at opset 9.

ONNX comparisons take floats for Equal only from opset 11 and have LessOrEqual only from 12;
``math.compare`` hides both. Bitwise ops on integers (BitwiseAnd ...) arrived in opset 18: below
it they work on bool only, except ``~x`` which is exact as ``-x - 1``."""

from __future__ import annotations

import operator

import torch

from torchscript_onnx.builder import dtypes, onnx_ops
from torchscript_onnx.builder.ir import Value

from .. import symbolic_helper as sh
from ..registry import declare_opset_requirements, symbolic
from .math import compare, floor_divide_int, isnan as isnan_value
from .operand_types import as_operand, native_dtype


# When an op here needs a higher opset than it is registered at: the condition (the reason its
# conversion states with OPSET.require) -> the lowest opset that converts it (docs/supported_ops.md).
OPSET = declare_opset_requirements({
    ("aten::bitwise_and", "aten::__and__", "aten::__iand__"): {"integer inputs (ONNX BitwiseAnd)": 18},
    ("aten::bitwise_or", "aten::__or__", "aten::__ior__"): {"integer inputs (ONNX BitwiseOr)": 18},
    ("aten::bitwise_xor", "aten::__xor__", "aten::__ixor__"): {"integer inputs (ONNX BitwiseXor)": 18},
}, unlisted={
    "aten::nan_to_num (it uses ONNX Where)": 9,
    "aten::where (ONNX NonZero)": 9,
    "aten::where (ONNX Where)": 9,
})

_INF = float("inf")


# ---------------------------------------------------------------------------------------------
# Comparisons


_PYTHON_COMPARISONS = {
    "Equal": operator.eq, "Less": operator.lt, "LessOrEqual": operator.le,
    "Greater": operator.gt, "GreaterOrEqual": operator.ge,
}


def _python_operand(v):
    """The Python value of a non-tensor constant (scripted code compares ints, strings, None), else UNKNOWN."""
    if sh.is_none(v):
        return None
    raw = sh.const(v)
    return sh.UNKNOWN if isinstance(raw, torch.Tensor) else raw


def _compare(g, op_type: str, self, other):
    a, b = _python_operand(self), _python_operand(other)
    if a is not sh.UNKNOWN and b is not sh.UNKNOWN:
        return _PYTHON_COMPARISONS[op_type](a, b)
    return compare(g, op_type, self, other)


@symbolic("aten::eq")
def eq(g, self, other):
    """eq.Tensor(Tensor self, Tensor other) -> Tensor"""
    return _compare(g, "Equal", self, other)


@symbolic("aten::ne")
def ne(g, self, other):
    """ne.Tensor(Tensor self, Tensor other) -> Tensor"""
    equal = _compare(g, "Equal", self, other)
    return (not equal) if isinstance(equal, bool) else g.op("Not", equal)


@symbolic("aten::lt")
def lt(g, self, other):
    """lt.Tensor(Tensor self, Tensor other) -> Tensor"""
    return _compare(g, "Less", self, other)


@symbolic("aten::le")
def le(g, self, other):
    """le.Tensor(Tensor self, Tensor other) -> Tensor"""
    return _compare(g, "LessOrEqual", self, other)


@symbolic("aten::gt")
def gt(g, self, other):
    """gt.Tensor(Tensor self, Tensor other) -> Tensor"""
    return _compare(g, "Greater", self, other)


@symbolic("aten::ge")
def ge(g, self, other):
    """ge.Tensor(Tensor self, Tensor other) -> Tensor"""
    return _compare(g, "GreaterOrEqual", self, other)


# ---------------------------------------------------------------------------------------------
# Logical


def _truth(g, value) -> Value:
    """torch's truth value of a tensor: nonzero (NaN counts as true)."""
    value = as_operand(g, value, sh.scalar_type_of(value))
    if value.dtype == torch.bool:
        return value
    return g.op("Cast", value, to_i=dtypes.to_onnx(torch.bool))


def _logical(g, op_type: str, self, other) -> Value:
    out = g.op(op_type, _truth(g, self), _truth(g, other))
    return onnx_ops.cast(g, out, g.output_dtype() or torch.bool)


@symbolic("aten::logical_and")
def logical_and(g, self, other):
    """logical_and(Tensor self, Tensor other) -> Tensor"""
    return _logical(g, "And", self, other)


@symbolic("aten::logical_or")
def logical_or(g, self, other):
    """logical_or(Tensor self, Tensor other) -> Tensor"""
    return _logical(g, "Or", self, other)


@symbolic("aten::logical_xor")
def logical_xor(g, self, other):
    """logical_xor(Tensor self, Tensor other) -> Tensor"""
    return _logical(g, "Xor", self, other)


@symbolic("aten::logical_not")
def logical_not(g, self):
    """logical_not(Tensor self) -> Tensor"""
    return onnx_ops.cast(g, g.op("Not", _truth(g, self)), g.output_dtype() or torch.bool)


# ---------------------------------------------------------------------------------------------
# Bitwise


def bitwise(g, op_type: str, self, other) -> Value:
    """And/Or/Xor on bools; BitwiseAnd/Or/Xor on integers, which ONNX has from opset 18."""
    dtype = g.output_dtype() or sh.promote_types(self, other)
    if dtype == torch.bool:
        return g.op(op_type, as_operand(g, self, dtype), as_operand(g, other, dtype))
    if dtypes.is_floating(dtype):
        sh.value_error(f"bitwise {op_type.lower()} is not defined for {dtype}")
    OPSET.require(g, "integer inputs (ONNX BitwiseAnd)" if op_type == "And" else
                  "integer inputs (ONNX BitwiseOr)" if op_type == "Or" else "integer inputs (ONNX BitwiseXor)")
    return g.op(f"Bitwise{op_type}", as_operand(g, self, dtype), as_operand(g, other, dtype))


@symbolic("aten::bitwise_and")
def bitwise_and(g, self, other):
    """bitwise_and.Tensor(Tensor self, Tensor other) -> Tensor"""
    return bitwise(g, "And", self, other)


@symbolic("aten::bitwise_or")
def bitwise_or(g, self, other):
    """bitwise_or.Tensor(Tensor self, Tensor other) -> Tensor"""
    return bitwise(g, "Or", self, other)


@symbolic("aten::bitwise_xor")
def bitwise_xor(g, self, other):
    """bitwise_xor.Tensor(Tensor self, Tensor other) -> Tensor"""
    return bitwise(g, "Xor", self, other)


@symbolic("aten::__and__")
def __and__(g, self, other):
    """__and__.Tensor(Tensor self, Tensor other) -> Tensor"""
    return bitwise(g, "And", self, other)


@symbolic("aten::__or__")
def __or__(g, self, other):
    """__or__.Tensor(Tensor self, Tensor other) -> Tensor"""
    return bitwise(g, "Or", self, other)


@symbolic("aten::__xor__")
def __xor__(g, self, other):
    """__xor__.Tensor(Tensor self, Tensor other) -> Tensor"""
    return bitwise(g, "Xor", self, other)


@symbolic("aten::__iand__")
def __iand__(g, self, other):
    """__iand__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)"""
    return bitwise(g, "And", self, other)


@symbolic("aten::__ior__")
def __ior__(g, self, other):
    """__ior__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)"""
    return bitwise(g, "Or", self, other)


@symbolic("aten::__ixor__")
def __ixor__(g, self, other):
    """__ixor__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)"""
    return bitwise(g, "Xor", self, other)


@symbolic("aten::bitwise_not")
def bitwise_not(g, self):
    """bitwise_not(Tensor self) -> Tensor"""
    dtype = self.dtype
    if dtype == torch.bool:
        return g.op("Not", self)
    if dtypes.is_floating(dtype):
        sh.value_error(f"bitwise not is not defined for {dtype}")
    if onnx_ops.has_op(g, "BitwiseNot"):
        return g.op("BitwiseNot", self)
    # two's complement: ~x == -x - 1 for signed integers, 255 - x for uint8
    native = native_dtype(g, "Sub", dtype)
    x = as_operand(g, self, native)
    if dtype == torch.uint8:
        out = g.op("Sub", g.constant(255, native), x)
    else:
        out = g.op("Sub", g.op("Neg", x), g.constant(1, native))
    return onnx_ops.cast(g, out, dtype)


def _power_of_two(g, amount, dtype: torch.dtype) -> Value:
    """2 ** amount as ``dtype`` (exact: computed as a constant, or by Pow in float64 then cast)."""
    known = sh.const(amount, None)
    if isinstance(known, torch.Tensor) and known.numel() == 1:
        known = known.item()
    if isinstance(known, int):
        return g.constant(1 << known, dtype)
    exponent = as_operand(g, amount, native_dtype(g, "Pow", torch.float64))
    power = g.op("Pow", g.constant(2.0, exponent.dtype), exponent)
    return onnx_ops.cast(g, power, dtype)


def shift(g, self, other, left: bool) -> Value:
    """x << n is x * 2**n; x >> n is floor(x / 2**n) (arithmetic shift). Integers only."""
    dtype = g.output_dtype() or sh.promote_types(self, other)
    if dtype is None or dtypes.is_floating(dtype) or dtype == torch.bool:
        sh.value_error(f"bit shifts are defined for integer tensors, not {dtype}")
    if g.opset >= 11 and dtype == torch.uint8:
        # BitShift takes unsigned types only
        direction = "LEFT" if left else "RIGHT"
        return g.op("BitShift", as_operand(g, self, dtype), as_operand(g, other, dtype), direction_s=direction)
    native = native_dtype(g, "Mul", dtype)
    x = as_operand(g, self, native)
    power = _power_of_two(g, other, native)
    if left:
        out = g.op("Mul", x, power)
    else:
        out = floor_divide_int(g, x, power) if dtype != torch.uint8 else g.op("Div", x, power)
    return onnx_ops.cast(g, out, dtype)


@symbolic("aten::bitwise_left_shift")
def bitwise_left_shift(g, self, other):
    """bitwise_left_shift.Tensor(Tensor self, Tensor other) -> Tensor"""
    return shift(g, self, other, left=True)


@symbolic("aten::bitwise_right_shift")
def bitwise_right_shift(g, self, other):
    """bitwise_right_shift.Tensor(Tensor self, Tensor other) -> Tensor"""
    return shift(g, self, other, left=False)


@symbolic("aten::__lshift__")
def __lshift__(g, self, other):
    """__lshift__.Tensor(Tensor self, Tensor other) -> Tensor"""
    return shift(g, self, other, left=True)


@symbolic("aten::__rshift__")
def __rshift__(g, self, other):
    """__rshift__.Tensor(Tensor self, Tensor other) -> Tensor"""
    return shift(g, self, other, left=False)


@symbolic("aten::__ilshift__")
def __ilshift__(g, self, other):
    """__ilshift__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)"""
    return shift(g, self, other, left=True)


@symbolic("aten::__irshift__")
def __irshift__(g, self, other):
    """__irshift__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)"""
    return shift(g, self, other, left=False)


# ---------------------------------------------------------------------------------------------
# where, NaN and infinity


@symbolic("aten::where")
def where(g, condition, self=None, other=None):
    """where.self(Tensor condition, Tensor self, Tensor other) -> Tensor"""
    if self is None:
        return _where_indices(g, condition)
    OPSET.require(g, "aten::where (ONNX Where)")
    dtype = g.output_dtype() or sh.promote_types(self, other)
    native = native_dtype(g, "Where", dtype, 1)
    out = g.op("Where", _truth(g, condition), as_operand(g, self, native), as_operand(g, other, native))
    return onnx_ops.cast(g, out, dtype)


def _where_indices(g, condition) -> tuple:
    """where(Tensor condition) -> Tensor[]: the indices of the true elements, one 1-D tensor per dim."""
    OPSET.require(g, "aten::where (ONNX NonZero)")
    rank = sh.rank(condition)
    if rank is None:
        sh.value_error("aten::where: the condition rank must be known", condition)
    indices = g.op("NonZero", _truth(g, condition))  # [rank, n]
    return tuple(g.op("Gather", indices, g.constant(k, torch.int64), axis_i=0) for k in range(rank))


@symbolic("aten::isnan")
def isnan(g, self):
    """isnan(Tensor self) -> Tensor"""
    return isnan_value(g, self)


def _max_finite(dtype: torch.dtype) -> float:
    return torch.finfo(dtype).max


def isinf_value(g, x: Value, positive: bool = True, negative: bool = True) -> Value:
    """Elementwise infinity test; integers are never infinite."""
    if not dtypes.is_floating(x.dtype):
        return compare(g, "Less", x, x)  # all False, with x's shape
    if onnx_ops.has_op(g, "IsInf"):
        native = native_dtype(g, "IsInf", x.dtype)
        return g.op("IsInf", as_operand(g, x, native), detect_positive_i=int(positive),
                    detect_negative_i=int(negative))
    # IsInf arrived in opset 10: beyond the largest finite value (NaN compares false)
    big = _max_finite(x.dtype)
    if positive and negative:
        return g.op("Greater", g.op("Abs", x), g.constant(big, x.dtype))
    if positive:
        return g.op("Greater", x, g.constant(big, x.dtype))
    return g.op("Less", x, g.constant(-big, x.dtype))


@symbolic("aten::isinf")
def isinf(g, self):
    """isinf(Tensor self) -> Tensor"""
    return isinf_value(g, self)


@symbolic("aten::isposinf")
def isposinf(g, self):
    """isposinf(Tensor self) -> Tensor"""
    return isinf_value(g, self, negative=False)


@symbolic("aten::isneginf")
def isneginf(g, self):
    """isneginf(Tensor self) -> Tensor"""
    return isinf_value(g, self, positive=False)


@symbolic("aten::isfinite")
def isfinite(g, self):
    """isfinite(Tensor self) -> Tensor"""
    if not dtypes.is_floating(self.dtype):
        return g.op("Not", compare(g, "Less", self, self))  # all True, with self's shape
    # |x| < inf is false for infinities and NaN
    return g.op("Less", g.op("Abs", self), g.constant(_INF, self.dtype))


@symbolic("aten::nan_to_num")
def nan_to_num(g, self, nan=None, posinf=None, neginf=None):
    """nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor"""
    if not dtypes.is_floating(self.dtype):
        return self
    OPSET.require(g, "aten::nan_to_num (it uses ONNX Where)")
    dtype = self.dtype
    big = _max_finite(dtype)
    fills = [sh.const(v, None) if not sh.is_none(v) else None for v in (nan, posinf, neginf)]
    nan_fill = 0.0 if fills[0] is None else float(fills[0])
    pos_fill = big if fills[1] is None else float(fills[1])
    neg_fill = -big if fills[2] is None else float(fills[2])
    out = g.op("Where", isnan_value(g, self), g.constant(nan_fill, dtype), self)
    out = g.op("Where", isinf_value(g, self, negative=False), g.constant(pos_fill, dtype), out)
    return g.op("Where", isinf_value(g, self, positive=False), g.constant(neg_fill, dtype), out)
