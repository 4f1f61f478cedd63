"""Activation functions at opset 9, lowered to ONNX activations or short decompositions.

Later ONNX opsets added native forms (Celu 12, HardSwish 14, Mish 18, Gelu 20): those versions
follow at the end of the file, each registered with ``since=N``."""

from __future__ import annotations

import math

import torch

from torchscript_onnx.builder import dtypes, onnx_ops
from torchscript_onnx.builder.ir import Value

from .. import symbolic_helper as sh
from ..registry import declare_opset_requirements, symbolic
from .math import compare, unary
from .operand_types import as_operand, float_dtype, native_dtype, runtime_supports
from .rounding import clamp

# The conditions under which a conversion here needs more than opset 7 (OPSET.require states
# them) -> the lowest opset that meets each; a registration at 9 serves 7 and 8 where ONNX allows.
OPSET = declare_opset_requirements({}, unlisted={
    "aten::elu with input_scale != 1 (it uses ONNX Where)": 9,
    "aten::gelu with approximate='none' (it uses ONNX Erf)": 9,
    "aten::hardshrink (ONNX Shrink)": 9,
    "aten::rrelu in training mode (it uses ONNX Where)": 9,
    "aten::softplus with threshold < 20 (it uses ONNX Where)": 9,
    "aten::softshrink (ONNX Shrink)": 9,
    "aten::threshold (it uses ONNX Where)": 9,
})


def float_input(g, self) -> Value:
    """``self`` as the float type the activation computes in (the traced result dtype)."""
    return as_operand(g, self, native_dtype(g, "Relu", float_dtype(g, self)))


def as_result(g, value: Value, self) -> Value:
    """``value`` cast back to the traced result dtype (float16 and bfloat16 compute in float32)."""
    return onnx_ops.cast(g, value, float_dtype(g, self))


# onnxruntime lacks float64 kernels for most ONNX activations (see operand_types.RUNTIME_GAPS): these
# exact decompositions use Relu, Exp and Log, which it has.


def _leaky(g, x: Value, slope) -> Value:
    """relu(x) - slope * relu(-x), with ``slope`` a number or a value broadcasting against x."""
    slope = slope if isinstance(slope, Value) else g.constant(slope, x.dtype)
    return g.op("Sub", g.op("Relu", x), g.op("Mul", slope, g.op("Relu", g.op("Neg", x))))


def _elu(g, x: Value, alpha: float) -> Value:
    """relu(x) + alpha * (exp(-relu(-x)) - 1)."""
    negative = g.op("Sub", g.op("Exp", g.op("Neg", g.op("Relu", g.op("Neg", x)))), g.constant(1.0, x.dtype))
    return g.op("Add", g.op("Relu", x), g.op("Mul", negative, g.constant(alpha, x.dtype)))


def _softplus(g, x: Value) -> Value:
    """relu(x) + log(1 + exp(-|x|)), stable for large |x|."""
    tail = g.op("Log", g.op("Add", g.op("Exp", g.op("Neg", g.op("Abs", x))), g.constant(1.0, x.dtype)))
    return g.op("Add", g.op("Relu", x), tail)


def _hardsigmoid(g, x: Value) -> Value:
    """clamp(x / 6 + 1/2, 0, 1) as relu(y) - relu(y - 1)."""
    if runtime_supports(g, "HardSigmoid", x.dtype):
        return g.op("HardSigmoid", x, alpha_f=1.0 / 6, beta_f=0.5)
    y = g.op("Add", g.op("Mul", x, g.constant(1.0 / 6, x.dtype)), g.constant(0.5, x.dtype))
    return g.op("Sub", g.op("Relu", y), g.op("Relu", g.op("Sub", y, g.constant(1.0, x.dtype))))


@symbolic("aten::relu")
def relu(g, self):
    """relu(Tensor self) -> Tensor"""
    if not dtypes.is_floating(g.output_dtype() or self.dtype):
        return clamp(g, self, 0, None)  # Relu takes integers only from opset 14, and not int64 in onnxruntime
    return unary(g, "Relu", self)


@symbolic("aten::relu6")
def relu6(g, self):
    """relu6(Tensor self) -> Tensor"""
    return clamp(g, self, 0, 6)


@symbolic("aten::hardtanh")
def hardtanh(g, self, min_val=-1.0, max_val=1.0):
    """hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor"""
    return clamp(g, self, min_val, max_val)


@symbolic("aten::leaky_relu")
@sh.parse_args("v", "f")
def leaky_relu(g, self, negative_slope=0.01):
    """leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor"""
    x = float_input(g, self)
    if not runtime_supports(g, "LeakyRelu", x.dtype):
        return as_result(g, _leaky(g, x, negative_slope), self)
    return unary(g, "LeakyRelu", self, alpha_f=negative_slope)


@symbolic("aten::rrelu")
@sh.parse_args("v", "f", "f", "b", "none")
def rrelu(g, self, lower=0.125, upper=0.3333333333333333, training=False, generator=None):
    """rrelu(Tensor self, Scalar lower=0.125, Scalar upper=0.333, bool training=False, Generator? generator=None) -> Tensor"""
    if not training:
        return leaky_relu(g, self, (lower + upper) / 2)
    # training: a slope drawn uniformly per element for the negative part
    OPSET.require(g, "aten::rrelu in training mode (it uses ONNX Where)")
    x = float_input(g, self)
    slope = g.op("RandomUniformLike", x, low_f=lower, high_f=upper)
    negative = g.op("Less", x, g.constant(0.0, x.dtype))
    return as_result(g, g.op("Where", negative, g.op("Mul", x, slope), x), self)


@symbolic("aten::sigmoid")
def sigmoid(g, self):
    """sigmoid(Tensor self) -> Tensor"""
    return unary(g, "Sigmoid", self, float_dtype(g, self))


@symbolic("aten::log_sigmoid")
def log_sigmoid(g, self):
    """log_sigmoid(Tensor self) -> Tensor"""
    # -softplus(-x) stays finite where log(sigmoid(x)) underflows to log(0)
    x = float_input(g, self)
    softplus_of = (lambda v: g.op("Softplus", v)) if runtime_supports(g, "Softplus", x.dtype) else (lambda v: _softplus(g, v))
    return as_result(g, g.op("Neg", softplus_of(g.op("Neg", x))), self)


@symbolic("aten::softplus")
@sh.parse_args("v", "f", "f")
def softplus(g, self, beta=1.0, threshold=20.0):
    """softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor"""
    x = float_input(g, self)
    scaled = x if beta == 1.0 else g.op("Mul", x, g.constant(beta, x.dtype))
    out = g.op("Softplus", scaled) if runtime_supports(g, "Softplus", x.dtype) else _softplus(g, scaled)
    if beta != 1.0:
        out = g.op("Div", out, g.constant(beta, x.dtype))
    # torch returns x where beta * x > threshold; above 20 softplus(x) equals x in float32 anyway
    if threshold < 20.0:
        OPSET.require(g, "aten::softplus with threshold < 20 (it uses ONNX Where)")
        out = g.op("Where", g.op("Greater", scaled, g.constant(threshold, x.dtype)), x, out)
    return as_result(g, out, self)


@symbolic("aten::hardsigmoid")
def hardsigmoid(g, self):
    """hardsigmoid(Tensor self) -> Tensor"""
    return as_result(g, _hardsigmoid(g, float_input(g, self)), self)


@symbolic("aten::hardswish")
def hardswish(g, self):
    """hardswish(Tensor self) -> Tensor"""
    x = float_input(g, self)
    return as_result(g, g.op("Mul", x, _hardsigmoid(g, x)), self)


@symbolic("aten::elu")
@sh.parse_args("v", "f", "f", "f")
def elu(g, self, alpha=1.0, scale=1.0, input_scale=1.0):
    """elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor"""
    x = float_input(g, self)
    if input_scale == 1.0:
        out = g.op("Elu", x, alpha_f=alpha) if runtime_supports(g, "Elu", x.dtype) else _elu(g, x, alpha)
    else:
        # input_scale applies to the negative part only: x > 0 ? x : alpha * (exp(x * input_scale) - 1)
        OPSET.require(g, "aten::elu with input_scale != 1 (it uses ONNX Where)")
        negative = g.op("Mul", g.op("Sub", g.op("Exp", g.op("Mul", x, g.constant(input_scale, x.dtype))),
                                    g.constant(1.0, x.dtype)), g.constant(alpha, x.dtype))
        out = g.op("Where", g.op("Greater", x, g.constant(0.0, x.dtype)), x, negative)
    if scale != 1.0:
        out = g.op("Mul", out, g.constant(scale, x.dtype))
    return as_result(g, out, self)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


@symbolic("aten::selu")
def selu(g, self):
    """selu(Tensor self) -> Tensor"""
    x = float_input(g, self)
    if runtime_supports(g, "Selu", x.dtype):
        return as_result(g, g.op("Selu", x), self)
    return as_result(g, g.op("Mul", _elu(g, x, _SELU_ALPHA), g.constant(_SELU_SCALE, x.dtype)), self)


@symbolic("aten::celu")
@sh.parse_args("v", "f")
def celu(g, self, alpha=1.0):
    """celu(Tensor self, Scalar alpha=1.0) -> Tensor"""
    # Celu arrived in opset 12 (float32 only): celu(x) = alpha * elu(x / alpha)
    x = float_input(g, self)
    scaled = g.op("Div", x, g.constant(alpha, x.dtype))
    if x.dtype == torch.float32:
        return as_result(g, g.op("Mul", g.op("Elu", scaled, alpha_f=1.0), g.constant(alpha, x.dtype)), self)
    # onnxruntime has Elu for float32 only: relu(x) - relu(alpha * (1 - exp(x / alpha)))
    negative = g.op("Mul", g.op("Sub", g.constant(1.0, x.dtype), g.op("Exp", scaled)), g.constant(alpha, x.dtype))
    return as_result(g, g.op("Sub", g.op("Relu", x), g.op("Relu", negative)), self)


@symbolic("aten::gelu")
@sh.parse_args("v", "s")
def gelu(g, self, approximate="none"):
    """gelu(Tensor self, *, str approximate='none') -> Tensor"""
    x = float_input(g, self)
    half = g.constant(0.5, x.dtype)
    if approximate == "tanh":
        # 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), x^3 as Pow: the form onnxruntime fuses to FastGelu
        cube = g.op("Pow", x, g.constant(3.0, x.dtype))
        inner = g.op("Add", x, g.op("Mul", cube, g.constant(0.044715, x.dtype)))
        inner = g.op("Mul", inner, g.constant(math.sqrt(2.0 / math.pi), x.dtype))
        gate = g.op("Add", g.op("Tanh", inner), g.constant(1.0, x.dtype))
    else:
        OPSET.require(g, "aten::gelu with approximate='none' (it uses ONNX Erf)")
        erf = g.op("Erf", g.op("Div", x, g.constant(math.sqrt(2.0), x.dtype)))
        gate = g.op("Add", erf, g.constant(1.0, x.dtype))
    return as_result(g, g.op("Mul", g.op("Mul", x, half), gate), self)


@symbolic("aten::silu")
def silu(g, self):
    """silu(Tensor self) -> Tensor"""
    x = float_input(g, self)
    return as_result(g, g.op("Mul", x, g.op("Sigmoid", x)), self)


@symbolic("aten::mish")
def mish(g, self):
    """mish(Tensor self) -> Tensor"""
    x = float_input(g, self)
    soft = g.op("Softplus", x) if runtime_supports(g, "Softplus", x.dtype) else _softplus(g, x)
    return as_result(g, g.op("Mul", x, g.op("Tanh", soft)), self)


@symbolic("aten::prelu")
def prelu(g, self, weight):
    """prelu(Tensor self, Tensor weight) -> Tensor"""
    # torch applies the weight along dim 1; ONNX broadcasts from the right: make it [C, 1, ..., 1]
    rank, weight_rank = sh.rank(self), sh.rank(weight)
    if rank is None:
        sh.value_error("aten::prelu: the input rank must be known", self)
    if rank >= 3 and weight_rank == 1 and sh.sizes(weight) != [1]:
        weight = onnx_ops.unsqueeze(g, weight, list(range(1, rank - 1)))
    elif weight_rank == 1 and sh.sizes(weight) == [1]:
        weight = onnx_ops.squeeze(g, weight, [0]) if rank == 0 else weight
    x = float_input(g, self)
    weight = as_operand(g, weight, x.dtype)
    if not runtime_supports(g, "PRelu", x.dtype):
        return as_result(g, _leaky(g, x, weight), self)
    return as_result(g, g.op("PRelu", x, weight), self)


@symbolic("aten::threshold")
def threshold(g, self, threshold, value):
    """threshold(Tensor self, Scalar threshold, Scalar value) -> Tensor"""
    OPSET.require(g, "aten::threshold (it uses ONNX Where)")
    dtype = g.output_dtype() or self.dtype
    x = as_operand(g, self, dtype)
    # compare in the promoted type: an integer tensor against a float threshold compares as floats
    return g.op("Where", compare(g, "Greater", x, threshold), x, as_operand(g, value, dtype))


@symbolic("aten::hardshrink")
@sh.parse_args("v", "f")
def hardshrink(g, self, lambd=0.5):
    """hardshrink(Tensor self, Scalar lambd=0.5) -> Tensor"""
    OPSET.require(g, "aten::hardshrink (ONNX Shrink)")
    return unary(g, "Shrink", self, float_dtype(g, self), bias_f=0.0, lambd_f=lambd)


@symbolic("aten::softshrink")
@sh.parse_args("v", "f")
def softshrink(g, self, lambd=0.5):
    """softshrink(Tensor self, Scalar lambd=0.5) -> Tensor"""
    OPSET.require(g, "aten::softshrink (ONNX Shrink)")
    return unary(g, "Shrink", self, float_dtype(g, self), bias_f=lambd, lambd_f=lambd)


@symbolic("aten::tanhshrink")
def tanhshrink(g, self):
    """tanhshrink(Tensor self) -> Tensor"""
    x = float_input(g, self)
    return as_result(g, g.op("Sub", x, g.op("Tanh", x)), self)


@symbolic("aten::logit")
@sh.parse_args("v", "none")
def logit(g, self, eps=None):
    """logit(Tensor self, float? eps=None) -> Tensor"""
    x = float_input(g, self)
    eps = sh.const(eps, None) if not sh.is_none(eps) else None
    if eps is not None:
        x = onnx_ops.clip(g, x, float(eps), 1.0 - float(eps))
    odds = g.op("Div", x, g.op("Sub", g.constant(1.0, x.dtype), x))
    return as_result(g, g.op("Log", odds), self)


# ---------------------------------------------------------------------------------------------
# Softmax


def _softmax(g, op_type: str, self: Value, dim: int, dtype) -> Value:
    if not sh.is_none(dtype) and dtype is not None:
        self = onnx_ops.cast(g, self, dtypes.from_scalar_type(sh.const(dtype)))
    rank = self.rank
    if rank is None:
        sh.value_error(f"aten::{op_type.lower()}: the input rank must be known", self)
    if rank == 0:
        # torch treats a 0-d input as one element: softmax 1, log_softmax 0
        one = onnx_ops.unsqueeze(g, self, [0])
        return onnx_ops.squeeze(g, g.op(op_type, one, axis_i=0), [0])
    dim = dim + rank if dim < 0 else dim
    if g.opset >= 13 or dim == rank - 1:
        return g.op(op_type, self, axis_i=dim)
    # Before opset 13 the op flattens to 2-D at ``axis``: move ``dim`` last, normalise, move back.
    perm = list(range(rank))
    perm[dim], perm[-1] = perm[-1], perm[dim]
    moved = g.op("Transpose", self, perm_i=perm)
    return g.op("Transpose", g.op(op_type, moved, axis_i=rank - 1), perm_i=perm)


@symbolic("aten::softmax")
@sh.parse_args("v", "i", "none")
def softmax(g, self, dim, dtype=None):
    """softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor"""
    return _softmax(g, "Softmax", self, dim, dtype)


@symbolic("aten::log_softmax")
@sh.parse_args("v", "i", "none")
def log_softmax(g, self, dim, dtype=None):
    """log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor"""
    return _softmax(g, "LogSoftmax", self, dim, dtype)


@symbolic("aten::_softmax")
@sh.parse_args("v", "i", "b")
def _softmax_internal(g, self, dim, half_to_float):
    """_softmax(Tensor self, int dim, bool half_to_float) -> Tensor"""
    return _softmax(g, "Softmax", self, dim, None)


@symbolic("aten::_log_softmax")
@sh.parse_args("v", "i", "b")
def _log_softmax(g, self, dim, half_to_float):
    """_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor"""
    return _softmax(g, "LogSoftmax", self, dim, None)


@symbolic("aten::glu")
def glu(g, self, dim=-1):
    """glu(Tensor self, int dim=-1) -> Tensor"""
    dim = sh._get_const(dim, "i", "dim")
    if self.rank is None or not sh.is_static(self, dim % self.rank):
        sh.value_error("aten::glu: the halved dim must be static", self)
    half = sh.sizes(self)[dim % self.rank] // 2
    first, second = onnx_ops.split(g, self, [half, half], dim % self.rank)
    return g.op("Mul", first, g.op("Sigmoid", second))


# ---------------------------------------------------------------------------------------------
# Opset 12. Activations: ONNX Celu (float32 only).


@symbolic("aten::celu", since=12)
@sh.parse_args("v", "f")
def celu_12(g, self, alpha=1.0):
    """celu(Tensor self, Scalar alpha=1.0) -> Tensor"""
    if self.dtype != torch.float32:
        return celu(g, self, alpha)  # ONNX Celu takes float32 only
    return g.op("Celu", self, alpha_f=alpha)


# ---------------------------------------------------------------------------------------------
# Opset 14. Activations: ONNX HardSwish.


@symbolic("aten::hardswish", since=14)
def hardswish_14(g, self):
    """hardswish(Tensor self) -> Tensor"""
    dtype = float_dtype(g, self)
    if not runtime_supports(g, "HardSwish", dtype):
        return hardswish(g, self)  # no float64 kernel in onnxruntime
    return unary(g, "HardSwish", self, dtype)


# ---------------------------------------------------------------------------------------------
# Opset 18. Activations: ONNX Mish.


@symbolic("aten::mish", since=18)
def mish_18(g, self):
    """mish(Tensor self) -> Tensor"""
    dtype = float_dtype(g, self)
    if not runtime_supports(g, "Mish", dtype):
        return mish(g, self)  # no float64 kernel in onnxruntime
    return unary(g, "Mish", self, dtype)


# ---------------------------------------------------------------------------------------------
# Opset 20. Activations: ONNX Gelu (exact and tanh approximation).


@symbolic("aten::gelu", since=20)
@sh.parse_args("v", "s")
def gelu_20(g, self, approximate="none"):
    """gelu(Tensor self, *, str approximate='none') -> Tensor"""
    dtype = float_dtype(g, self)
    if not runtime_supports(g, "Gelu", dtype):
        return gelu(g, self, approximate)  # no float64 kernel in onnxruntime
    return unary(g, "Gelu", self, dtype, approximate_s=approximate)
