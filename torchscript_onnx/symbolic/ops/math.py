"""Elementwise arithmetic and math functions at opset 9 (the base most later opsets fall back to).

Typing follows torch: the result dtype is the one the trace recorded (``g.output_dtype()``), Python
scalars take the tensor's dtype. ONNX ops accept fewer element types than torch (Add at opset 7
has no int8, Floor takes only floats, Max takes ints only from opset 12): ``native_dtype`` reads
the ONNX schema of the target opset and picks the narrowest type that holds the values exactly;
``unary`` and ``binary`` compute in it and cast back.

The versions for higher opsets follow, each registered with ``since=N``: opset 10."""

from __future__ import annotations

import builtins
import math

import torch

from torchscript_onnx.builder import dtypes, onnx_ops
from torchscript_onnx.builder.ir import Value

from .. import symbolic_helper as sh
from ..registry import declare_opset_requirements, symbolic
from .operand_types import (
    as_operand, float_dtype, native_dtype, onnx_input_types, result_dtype, runtime_supports,
)

# The conditions under which a conversion here needs more than opset 7 (OPSET.require states
# them) -> the lowest opset that meets each; a registration at 9 serves 7 and 8 where ONNX allows.
OPSET = declare_opset_requirements({}, unlisted={
    "aten::erf (ONNX Erf)": 9,
    "aten::erfinv (it uses ONNX Erf and Where)": 9,
    "this conversion (it uses ONNX Where)": 9,
})


def unary(g, op_type: str, self, dtype: torch.dtype | None = None, **attrs) -> Value:
    """``op_type`` on ``self`` as ``dtype`` (default: the traced result dtype), computed in a type ONNX takes."""
    dtype = dtype or g.output_dtype() or sh.scalar_type_of(self)
    native = native_dtype(g, op_type, dtype)
    out = g.op(op_type, as_operand(g, self, native), **attrs)
    return onnx_ops.cast(g, out, dtype)


def binary(g, op_type: str, self, other, compute_dtype: torch.dtype | None = None) -> Value:
    """``op_type`` on two operands brought to one dtype (torch's promotion); the result has that dtype."""
    dtype = compute_dtype or result_dtype(g, self, other)
    native = native_dtype(g, op_type, dtype)
    out = g.op(op_type, as_operand(g, self, native), as_operand(g, other, native))
    return onnx_ops.cast(g, out, dtype)


def _float_unary(g, op_type: str, self) -> Value:
    """A floating-point function: integer and bool inputs compute in float32, as torch does."""
    return unary(g, op_type, self, float_dtype(g, self))


def _is_integral(v) -> bool:
    dtype = sh.scalar_type_of(v)
    return dtype is not None and not dtypes.is_floating(dtype)


# ---------------------------------------------------------------------------------------------
# Comparison helpers (the aten ops live in logical.py)

_INF = float("inf")


def compare(g, op_type: str, self, other) -> Value:
    """Equal/Less/Greater/LessOrEqual/GreaterOrEqual after torch's promotion, at any opset."""
    dtype = sh.promote_types(self, other)
    if op_type in ("LessOrEqual", "GreaterOrEqual") and not onnx_ops.has_op(g, op_type):
        strict = compare(g, op_type.replace("OrEqual", ""), self, other)
        return g.op("Or", strict, compare(g, "Equal", self, other))
    if op_type == "Equal" and dtypes.is_floating(dtype) and torch.float32 not in onnx_input_types("Equal", g.opset):
        return _float_equal(g, self, other, dtype)
    native = native_dtype(g, op_type, dtype)
    return g.op(op_type, as_operand(g, self, native), as_operand(g, other, native))


def _float_equal(g, self, other, dtype) -> Value:
    # Equal takes floats from opset 11: a == b is neither a < b nor a > b, and no NaN (a + b is
    # NaN when either is; inf + -inf is NaN too, but then a < b or a > b already holds).
    native = native_dtype(g, "Less", dtype)
    a, b = as_operand(g, self, native), as_operand(g, other, native)
    ordered = g.op("Or", g.op("Less", a, b), g.op("Greater", a, b))
    return g.op("Not", g.op("Or", ordered, isnan(g, g.op("Add", a, b))))


def isnan(g, x: Value) -> Value:
    """Elementwise NaN test; integers are never NaN."""
    if not dtypes.is_floating(x.dtype):
        return compare(g, "Less", x, x)  # all False, with x's shape
    if not onnx_ops.has_op(g, "IsNaN"):
        # NaN is the only value neither below +inf nor above -inf (IsNaN arrived in opset 9).
        finite_or_inf = g.op("Or", g.op("Less", x, g.constant(_INF, x.dtype)),
                             g.op("Greater", x, g.constant(-_INF, x.dtype)))
        return g.op("Not", finite_or_inf)
    return g.op("IsNaN", as_operand(g, x, native_dtype(g, "IsNaN", x.dtype)))


def where(g, condition: Value, self: Value, other: Value) -> Value:
    """ONNX Where (opset 9+) for internal use by decompositions."""
    OPSET.require(g, "this conversion (it uses ONNX Where)")
    return g.op("Where", condition, self, other)


# ---------------------------------------------------------------------------------------------
# Arithmetic


def _scaled(g, other, alpha, dtype):
    factor = sh.const(alpha, 1) if alpha is not None else 1
    if sh.is_none(alpha) or factor == 1:
        return other
    return binary(g, "Mul", other, g.constant(factor, dtype), dtype)


def _list_items(v):
    """The items of a list operand (scripted ``list + list``), or None for tensors and numbers."""
    if sh.is_packed_list(v):
        return sh.unpack_list(v)
    raw = sh.const(v, None)
    return list(raw) if isinstance(raw, (list, tuple)) else None


@symbolic("aten::add")
def add(g, self, other, alpha=None):
    """add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"""
    left, right = _list_items(self), _list_items(other)
    if left is not None and right is not None:
        return left + right  # add.t(t[] a, t[] b) -> t[]: concatenation
    dtype = result_dtype(g, self, other)
    return binary(g, "Add", self, _scaled(g, other, alpha, dtype), dtype)


@symbolic("aten::sub")
def sub(g, self, other, alpha=None):
    """sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"""
    dtype = result_dtype(g, self, other)
    return binary(g, "Sub", self, _scaled(g, other, alpha, dtype), dtype)


@symbolic("aten::rsub")
def rsub(g, self, other, alpha=None):
    """rsub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"""
    return sub(g, other, self, alpha)


@symbolic("aten::mul")
def mul(g, self, other):
    """mul.Tensor(Tensor self, Tensor other) -> Tensor"""
    if result_dtype(g, self, other) == torch.bool:
        return g.op("And", as_operand(g, self, torch.bool), as_operand(g, other, torch.bool))
    return binary(g, "Mul", self, other)


@symbolic("aten::square")
def square(g, self):
    """square(Tensor self) -> Tensor"""
    dtype = result_dtype(g, self)
    x = as_operand(g, self, dtype)
    return binary(g, "Mul", x, x, dtype)


@symbolic("aten::div")
def div(g, self, other, rounding_mode=None):
    """div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor"""
    mode = sh.const(rounding_mode, None) if rounding_mode is not None else None
    dtype = result_dtype(g, self, other)
    if mode is None:
        # true division: integer inputs divide in torch's default dtype (the trace's, else the one set now)
        if not dtypes.is_floating(dtype):
            traced = g.output_dtype()
            dtype = traced if traced is not None and dtypes.is_floating(traced) else torch.get_default_dtype()
        return binary(g, "Div", self, other, dtype)
    if dtypes.is_floating(dtype):
        quotient = binary(g, "Div", self, other, dtype)
        return unary(g, "Floor", quotient, dtype) if mode == "floor" else trunc_float(g, quotient)
    if mode == "trunc":
        return binary(g, "Div", self, other, dtype)  # ONNX integer Div truncates
    native = native_dtype(g, "Div", dtype)
    quotient = floor_divide_int(g, as_operand(g, self, native), as_operand(g, other, native))
    return onnx_ops.cast(g, quotient, dtype)


@symbolic("aten::true_divide")
def true_divide(g, self, other):
    """true_divide.Tensor(Tensor self, Tensor other) -> Tensor"""
    return div(g, self, other)


@symbolic("aten::floor_divide")
def floor_divide(g, self, other):
    """floor_divide(Tensor self, Tensor other) -> Tensor"""
    return div(g, self, other, "floor")


@symbolic("aten::_floor_divide")
def _floor_divide(g, self, other):
    """_floor_divide(Tensor self, Tensor other) -> Tensor"""
    return div(g, self, other, "floor")


@symbolic("aten::floordiv")
def floordiv(g, self, other):
    """floordiv.int(int a, int b) -> int"""
    a, b = sh.const(self, None), sh.const(other, None)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b != 0:
        return a // b  # Python numbers known at export time (scripted shape arithmetic)
    return div(g, self, other, "floor")


def trunc_float(g, x: Value) -> Value:
    """Round toward zero (ONNX has no Trunc)."""
    if onnx_ops.has_op(g, "Sign"):
        return g.op("Mul", g.op("Floor", g.op("Abs", x)), g.op("Sign", x))
    # no Sign before opset 9: floor, plus 1 for negative non-integers
    floor = g.op("Floor", x)
    zero = g.constant(0, x.dtype)
    fix = g.op("And", g.op("Less", x, zero), g.op("Greater", x, floor))
    return g.op("Add", floor, g.op("Cast", fix, to_i=dtypes.to_onnx(x.dtype)))


def _is_size(value: Value) -> bool:
    """A runtime tensor size (``x.size(d)``, ``numel``): never negative."""
    node = value.producer
    if node is not None and node.op_type == "Gather":
        node = node.inputs[0].producer
    return node is not None and node.op_type in ("Shape", "Size")


def floor_divide_int(g, a: Value, b: Value) -> Value:
    """Integer floor division from truncating Div: subtract 1 where signs differ and a remainder exists."""
    quotient = g.op("Div", a, b)
    divisor = sh.const(b, None)
    if isinstance(divisor, torch.Tensor):
        divisor = divisor.item() if divisor.numel() == 1 else None
    if _is_size(a) and isinstance(divisor, int) and divisor > 0:
        return quotient  # size // k: both non-negative, so truncation is floor (shape arithmetic)
    remainder = g.op("Sub", a, g.op("Mul", quotient, b))
    zero = g.constant(0, a.dtype)
    signs_differ = g.op("Xor", compare(g, "Less", a, zero), compare(g, "Less", b, zero))
    has_remainder = g.op("Not", compare(g, "Equal", remainder, zero))
    fix = g.op("Cast", g.op("And", signs_differ, has_remainder), to_i=dtypes.to_onnx(a.dtype))
    return g.op("Sub", quotient, fix)


@symbolic("aten::remainder")
def remainder(g, self, other):
    """remainder.Tensor(Tensor self, Tensor other) -> Tensor"""
    # torch's remainder takes the sign of the divisor: a - floor(a / b) * b
    dtype = result_dtype(g, self, other)
    native = native_dtype(g, "Div", dtype)
    a, b = as_operand(g, self, native), as_operand(g, other, native)
    if dtypes.is_floating(native):
        quotient = g.op("Floor", g.op("Div", a, b))
    else:
        quotient = floor_divide_int(g, a, b)
    return onnx_ops.cast(g, g.op("Sub", a, g.op("Mul", quotient, b)), dtype)


@symbolic("aten::fmod")
def fmod(g, self, other):
    """fmod.Tensor(Tensor self, Tensor other) -> Tensor"""
    # the C fmod takes the sign of the dividend: a - trunc(a / b) * b
    dtype = result_dtype(g, self, other)
    native = native_dtype(g, "Div", dtype)
    a, b = as_operand(g, self, native), as_operand(g, other, native)
    quotient = g.op("Div", a, b)
    if dtypes.is_floating(native):
        quotient = trunc_float(g, quotient)
    return onnx_ops.cast(g, g.op("Sub", a, g.op("Mul", quotient, b)), dtype)


@symbolic("aten::neg")
def neg(g, self):
    """neg(Tensor self) -> Tensor"""
    return unary(g, "Neg", self)


@symbolic("aten::abs")
def abs(g, self):  # noqa: A001 - named after the aten op
    """abs(Tensor self) -> Tensor"""
    return unary(g, "Abs", self)


@symbolic("aten::sign")
def sign(g, self):
    """sign(Tensor self) -> Tensor"""
    dtype = g.output_dtype() or self.dtype
    if dtype == torch.bool:
        return self
    if onnx_ops.has_op(g, "Sign"):
        return unary(g, "Sign", self, dtype)
    # Sign arrived in opset 9: (x > 0) - (x < 0)
    native = native_dtype(g, "Sub", dtype)
    zero = g.constant(0, dtype)
    positive = g.op("Cast", compare(g, "Greater", self, zero), to_i=dtypes.to_onnx(native))
    negative = g.op("Cast", compare(g, "Less", self, zero), to_i=dtypes.to_onnx(native))
    return onnx_ops.cast(g, g.op("Sub", positive, negative), dtype)


@symbolic("aten::addcmul")
def addcmul(g, self, tensor1, tensor2, value=1):
    """addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor"""
    dtype = result_dtype(g, self, tensor1, tensor2)
    product = binary(g, "Mul", tensor1, tensor2, dtype)
    return binary(g, "Add", self, _scaled(g, product, value, dtype), dtype)


@symbolic("aten::addcdiv")
def addcdiv(g, self, tensor1, tensor2, value=1):
    """addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor"""
    dtype = result_dtype(g, self, tensor1, tensor2)
    quotient = binary(g, "Div", tensor1, tensor2, dtype)
    return binary(g, "Add", self, _scaled(g, quotient, value, dtype), dtype)


@symbolic("aten::lerp")
def lerp(g, self, end, weight):
    """lerp.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor"""
    dtype = result_dtype(g, self, end, weight)
    start, end, w = (as_operand(g, v, dtype) for v in (self, end, weight))
    diff = g.op("Sub", end, start)
    # torch interpolates from the nearer end: start + w * diff for |w| < 0.5, else end - (1 - w) * diff
    low = g.op("Add", start, g.op("Mul", w, diff))
    high = g.op("Sub", end, g.op("Mul", g.op("Sub", g.constant(1.0, dtype), w), diff))
    known = sh.const(weight, None)
    if isinstance(known, (int, float)) or (isinstance(known, torch.Tensor) and known.numel() == 1):
        return low if builtins.abs(float(known)) < 0.5 else high
    return where(g, g.op("Less", g.op("Abs", w), g.constant(0.5, dtype)), low, high)


@symbolic("aten::logaddexp")
def logaddexp(g, self, other):
    """logaddexp(Tensor self, Tensor other) -> Tensor"""
    dtype = result_dtype(g, self, other)
    a, b = as_operand(g, self, dtype), as_operand(g, other, dtype)
    larger = max_or_min(g, a, b, "Max")
    gap = g.op("Neg", g.op("Abs", g.op("Sub", a, b)))
    return g.op("Add", larger, g.op("Log", g.op("Add", g.op("Exp", gap), g.constant(1.0, dtype))))


@symbolic("aten::xlogy")
def xlogy(g, self, other):
    """xlogy.Tensor(Tensor self, Tensor other) -> Tensor"""
    dtype = float_dtype(g, self)
    x, y = as_operand(g, self, dtype), as_operand(g, other, dtype)
    product = g.op("Mul", x, g.op("Log", y))
    # 0 where x == 0, unless y is NaN
    zero = g.constant(0.0, dtype)
    x_is_zero = g.op("And", compare(g, "Equal", x, zero), g.op("Not", isnan(g, y)))
    return where(g, x_is_zero, zero, product)


# ---------------------------------------------------------------------------------------------
# Powers, exponentials and logarithms


@symbolic("aten::pow")
def pow(g, self, exponent):  # noqa: A001 - named after the aten op
    """pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor"""
    dtype = result_dtype(g, self, exponent)
    power = _bound(exponent)
    if isinstance(power, int) and not isinstance(power, bool) and 1 <= power <= 4 and not dtypes.is_floating(dtype):
        # small integer powers of integers multiply exactly (ONNX Pow takes ints only from opset 12)
        base = as_operand(g, self, dtype)
        out = base
        for _ in range(power - 1):
            out = binary(g, "Mul", out, base, dtype)
        return out
    # Pow before opset 12 takes one float type for base and exponent; later ones take int bases
    native = native_dtype(g, "Pow", dtype)
    out = g.op("Pow", as_operand(g, self, native), as_operand(g, exponent, native))
    if dtypes.is_floating(native) and not dtypes.is_floating(dtype):
        out = _round_half_even(g, out)  # a float power of integers may land just below the integer
    return onnx_ops.cast(g, out, dtype)


@symbolic("aten::float_power")
def float_power(g, self, exponent):
    """float_power.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor"""
    return binary(g, "Pow", self, exponent, torch.float64)


@symbolic("aten::reciprocal")
def reciprocal(g, self):
    """reciprocal(Tensor self) -> Tensor"""
    return _float_unary(g, "Reciprocal", self)


@symbolic("aten::sqrt")
def sqrt(g, self):
    """sqrt(Tensor self) -> Tensor"""
    return _float_unary(g, "Sqrt", self)


@symbolic("aten::rsqrt")
def rsqrt(g, self):
    """rsqrt(Tensor self) -> Tensor"""
    dtype = float_dtype(g, self)
    # 1 / sqrt(x) as Div, not Reciprocal: onnxruntime fuses RMS norms (x * rsqrt(mean(x^2) + eps)) into
    # SimplifiedLayerNormalization only in that form
    return binary(g, "Div", 1.0, unary(g, "Sqrt", self, dtype), dtype)


@symbolic("aten::exp")
def exp(g, self):
    """exp(Tensor self) -> Tensor"""
    return _float_unary(g, "Exp", self)


@symbolic("aten::exp2")
def exp2(g, self):
    """exp2(Tensor self) -> Tensor"""
    dtype = float_dtype(g, self)
    return binary(g, "Pow", g.constant(2.0, dtype), self, dtype)


@symbolic("aten::expm1")
def expm1(g, self):
    """expm1(Tensor self) -> Tensor"""
    dtype = float_dtype(g, self)
    return binary(g, "Sub", unary(g, "Exp", self, dtype), g.constant(1.0, dtype), dtype)


@symbolic("aten::log")
def log(g, self):
    """log(Tensor self) -> Tensor"""
    return _float_unary(g, "Log", self)


@symbolic("aten::log1p")
def log1p(g, self):
    """log1p(Tensor self) -> Tensor"""
    dtype = float_dtype(g, self)
    return unary(g, "Log", binary(g, "Add", self, g.constant(1.0, dtype), dtype), dtype)


def _log_base(g, self, base: float) -> Value:
    dtype = float_dtype(g, self)
    return binary(g, "Div", unary(g, "Log", self, dtype), g.constant(math.log(base), dtype), dtype)


@symbolic("aten::log2")
def log2(g, self):
    """log2(Tensor self) -> Tensor"""
    return _log_base(g, self, 2.0)


@symbolic("aten::log10")
def log10(g, self):
    """log10(Tensor self) -> Tensor"""
    return _log_base(g, self, 10.0)


@symbolic("aten::erf")
def erf(g, self):
    """erf(Tensor self) -> Tensor"""
    OPSET.require(g, "aten::erf (ONNX Erf)")
    return _float_unary(g, "Erf", self)


# Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011), single precision.
_ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                   -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


@symbolic("aten::erfinv")
def erfinv(g, self):
    """erfinv(Tensor self) -> Tensor"""
    # No ONNX op: Giles' polynomial approximation, refined by one Newton step on erf.
    OPSET.require(g, "aten::erfinv (it uses ONNX Erf and Where)")
    dtype = float_dtype(g, self)
    x = as_operand(g, self, dtype)
    one = g.constant(1.0, dtype)
    w = g.op("Neg", g.op("Log", g.op("Mul", g.op("Sub", one, x), g.op("Add", one, x))))

    def poly(t, coefficients):
        p = g.constant(coefficients[0], dtype)
        for c in coefficients[1:]:
            p = g.op("Add", g.op("Mul", p, t), g.constant(c, dtype))
        return p

    central = poly(g.op("Sub", w, g.constant(2.5, dtype)), _ERFINV_CENTRAL)
    tail = poly(g.op("Sub", g.op("Sqrt", w), g.constant(3.0, dtype)), _ERFINV_TAIL)
    # erfinv(x) / x is positive; Abs also fixes the sign the tail polynomial gets at |x| == 1 (w == inf)
    y = g.op("Mul", g.op("Abs", g.op("Where", g.op("Less", w, g.constant(5.0, dtype)), central, tail)), x)
    # Newton: y -= (erf(y) - x) / (2 / sqrt(pi) * exp(-y^2)); skipped where y is infinite (|x| == 1)
    slope = g.op("Mul", g.constant(2.0 / math.sqrt(math.pi), dtype), g.op("Exp", g.op("Neg", g.op("Mul", y, y))))
    step = g.op("Div", g.op("Sub", g.op("Erf", y), x), slope)
    finite = g.op("Less", g.op("Abs", y), g.constant(_INF, dtype))
    return g.op("Where", finite, g.op("Sub", y, step), y)


@symbolic("aten::positive")
def positive(g, self):
    """positive(Tensor(a) self) -> Tensor(a)"""
    return self


@symbolic("aten::sgn")
def sgn(g, self):
    """sgn(Tensor self) -> Tensor"""
    return sign(g, self)


@symbolic("aten::copysign")
def copysign(g, self, other):
    """copysign.Tensor(Tensor self, Tensor other) -> Tensor"""
    dtype = float_dtype(g, self)
    magnitude = g.op("Abs", as_operand(g, self, dtype))
    y = as_operand(g, other, dtype)
    # the sign bit of y: y < 0, or y == -0 (1 / -0 is -inf); a NaN y counts as positive
    zero = g.constant(0.0, dtype)
    negative = g.op("Or", g.op("Less", y, zero), g.op("Less", g.op("Div", g.constant(1.0, dtype), y), zero))
    return where(g, negative, g.op("Neg", magnitude), magnitude)


@symbolic("aten::heaviside")
def heaviside(g, self, values):
    """heaviside(Tensor self, Tensor values) -> Tensor"""
    dtype = result_dtype(g, self, values)
    x = as_operand(g, self, dtype)
    zero = g.constant(0, dtype)
    step = onnx_ops.cast(g, compare(g, "Greater", x, zero), dtype)
    return where(g, compare(g, "Equal", x, zero), as_operand(g, values, dtype), step)


@symbolic("aten::hypot")
def hypot(g, self, other):
    """hypot(Tensor self, Tensor other) -> Tensor"""
    dtype = result_dtype(g, self, other)
    a, b = as_operand(g, self, dtype), as_operand(g, other, dtype)
    return g.op("Sqrt", g.op("Add", g.op("Mul", a, a), g.op("Mul", b, b)))


@symbolic("aten::logaddexp2")
def logaddexp2(g, self, other):
    """logaddexp2(Tensor self, Tensor other) -> Tensor"""
    dtype = result_dtype(g, self, other)
    a, b = as_operand(g, self, dtype), as_operand(g, other, dtype)
    larger = max_or_min(g, a, b, "Max")
    gap = g.op("Neg", g.op("Abs", g.op("Sub", a, b)))
    ln2 = g.constant(math.log(2.0), dtype)
    sum_of_powers = g.op("Add", g.op("Exp", g.op("Mul", gap, ln2)), g.constant(1.0, dtype))
    return g.op("Add", larger, g.op("Div", g.op("Log", sum_of_powers), ln2))


@symbolic("aten::deg2rad")
def deg2rad(g, self):
    """deg2rad(Tensor self) -> Tensor"""
    dtype = float_dtype(g, self)
    return binary(g, "Mul", self, g.constant(math.pi / 180.0, dtype), dtype)


@symbolic("aten::rad2deg")
def rad2deg(g, self):
    """rad2deg(Tensor self) -> Tensor"""
    dtype = float_dtype(g, self)
    return binary(g, "Mul", self, g.constant(180.0 / math.pi, dtype), dtype)


@symbolic("aten::sinc")
def sinc(g, self):
    """sinc(Tensor self) -> Tensor"""
    dtype = float_dtype(g, self)
    x = g.op("Mul", as_operand(g, self, dtype), g.constant(math.pi, dtype))
    zero = g.constant(0.0, dtype)
    return where(g, compare(g, "Equal", x, zero), g.constant(1.0, dtype), g.op("Div", g.op("Sin", x), x))


# ---------------------------------------------------------------------------------------------
# Helpers of pow and logaddexp that rounding.py (round, clamp) shares


def _round_half_even(g, x: Value) -> Value:
    """Round to nearest, ties to even (torch.round), on a float value."""
    if onnx_ops.has_op(g, "Round"):
        return g.op("Round", x)
    # Round arrived in opset 11: floor(x) plus 1 above the half, and at the half when floor(x) is odd
    floor = g.op("Floor", x)
    fraction = g.op("Sub", x, floor)
    half = g.constant(0.5, x.dtype)
    at_half = g.op("Not", g.op("Or", g.op("Less", fraction, half), g.op("Greater", fraction, half)))
    halved = g.op("Mul", floor, half)
    odd = g.op("Greater", g.op("Sub", halved, g.op("Floor", halved)), g.constant(0.25, x.dtype))
    up = g.op("Or", g.op("Greater", fraction, half), g.op("And", at_half, odd))
    return g.op("Add", floor, g.op("Cast", up, to_i=dtypes.to_onnx(x.dtype)))


def _bound(value):
    raw = sh.const(value, sh.UNKNOWN)
    if isinstance(raw, torch.Tensor) and raw.numel() == 1:
        return raw.item()
    return raw


def max_or_min(g, a: Value, b: Value, op_type: str = "Max") -> Value:
    """Elementwise Max (or Min) of two values of one dtype, exact for integers at every opset."""
    native = native_dtype(g, op_type, a.dtype)
    if runtime_supports(g, op_type, native) and (dtypes.is_floating(a.dtype) or not dtypes.is_floating(native)) \
            or torch.int64 in onnx_input_types(op_type, g.opset):  # Max/Min take integers from 12
        return onnx_ops.cast(g, g.op(op_type, as_operand(g, a, native), as_operand(g, b, native)), a.dtype)
    # integers (and float64 at opset 7) before opset 12: a + (b - a) * (a < b)
    take_b = compare(g, "Less" if op_type == "Max" else "Greater", a, b)
    arith = native_dtype(g, "Mul", a.dtype)
    x, y = as_operand(g, a, arith), as_operand(g, b, arith)
    step = g.op("Mul", g.op("Sub", y, x), g.op("Cast", take_b, to_i=dtypes.to_onnx(arith)))
    return onnx_ops.cast(g, g.op("Add", x, step), a.dtype)


# ---------------------------------------------------------------------------------------------
# Opset 10. Arithmetic: ONNX Mod gives fmod and remainder directly.


@symbolic("aten::fmod", since=10)
def fmod_10(g, self, other):
    """fmod.Tensor(Tensor self, Tensor other) -> Tensor"""
    dtype = result_dtype(g, self, other)
    native = native_dtype(g, "Mod", dtype)
    out = g.op("Mod", as_operand(g, self, native), as_operand(g, other, native), fmod_i=1)
    return onnx_ops.cast(g, out, dtype)


@symbolic("aten::remainder", since=10)
def remainder_10(g, self, other):
    """remainder.Tensor(Tensor self, Tensor other) -> Tensor"""
    dtype = result_dtype(g, self, other)
    native = native_dtype(g, "Mod", dtype)
    a, b = as_operand(g, self, native), as_operand(g, other, native)
    if not dtypes.is_floating(native):
        return onnx_ops.cast(g, g.op("Mod", a, b, fmod_i=0), dtype)  # integer Mod follows the divisor's sign
    # Mod takes floats only with fmod_10=1 (the dividend's sign): add b where the signs of r and b differ
    r = g.op("Mod", a, b, fmod_i=1)
    differ = g.op("Less", g.op("Mul", r, b), g.constant(0.0, native))
    out = g.op("Add", r, g.op("Mul", g.op("Cast", differ, to_i=dtypes.to_onnx(native)), b))
    return onnx_ops.cast(g, out, dtype)
