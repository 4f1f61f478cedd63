"""Complex tensors in real arithmetic.

ONNX has no complex type. Inside the converter a complex tensor is a REAL tensor with a trailing
dim of 2 (real part, imaginary part): the layout ONNX DFT and STFT produce and
``torch.view_as_real`` returns. The graph's inputs and outputs stay real. The converter sends an
aten op with a complex input (by its traced type) to its ``complex::`` conversion here, which
works on that layout; an op without one is refused with a clear error, as is a complex graph
output. So ``torch.fft.rfft(x).abs()``, ``torch.stft(...).abs()``, ``.angle()``, ``.real``,
``.imag`` and arithmetic between them convert.

A complex tensor's *logical* rank is its layout's rank minus one: dims a torch op names are
normalised against it (``dim=-1`` is the last logical dim, not the (real, imag) pair).

``aten::real``/``aten::imag``/``aten::angle`` of a real tensor are registered here too."""

from __future__ import annotations

import math

import torch

from torchscript_onnx.builder import onnx_ops

from .. import symbolic_helper as sh
from ..registry import declare_opset_requirements, symbolic
from .operand_types import float_dtype
from .trigonometry import atan2

# The conditions under which a conversion here needs more than opset 7 (OPSET.require states
# them) -> the lowest opset that meets each; a registration at 9 serves 7 and 8 where ONNX allows.
OPSET = declare_opset_requirements({}, unlisted={
    "ONNX Where and IsNaN": 9,
})


__all__: list[str] = []  # not part of the legacy symbolic_opset9 surface


def is_complex_input(g, k: int) -> bool:
    """Whether input ``k`` of the node being converted is a complex tensor (by its traced type)."""
    jit_type = g.original_node.inputsAt(k).type()
    return isinstance(jit_type, torch._C.TensorType) and (jit_type.scalarType() or "").startswith("Complex")


def _last_axis(x) -> int:
    rank = sh.rank(x)
    return -1 if rank is None else rank - 1


def part(g, x, k: int):
    """The real (k=0) or imaginary (k=1) part of a complex (..., 2) value."""
    return g.op("Gather", x, g.constant(k, torch.int64), axis_i=_last_axis(x))


def pack(g, real, imag):
    """The complex (..., 2) value of two real tensors of one shape."""
    rank = sh.rank(real)
    if rank is None:
        sh.value_error("a complex result needs its rank known", real)
    return g.op("Concat", onnx_ops.unsqueeze(g, real, [rank]), onnx_ops.unsqueeze(g, imag, [rank]), axis_i=rank)


def as_complex(g, value, k: int, dtype: torch.dtype):
    """Input ``k`` of the node as a complex (..., 2) value of ``dtype``: a complex input as it is,
    a real tensor or number with imaginary part 0, a Python complex number as its two parts."""
    if is_complex_input(g, k):
        return value
    raw = sh.const(value, None)
    if isinstance(raw, (bool, int, float, complex)) or isinstance(raw, torch.Tensor) and raw.dim() == 0 \
            and not value.in_graph:
        number = complex(raw.item() if isinstance(raw, torch.Tensor) else raw)
        return g.constant(torch.tensor([number.real, number.imag], dtype=dtype))
    real = onnx_ops.cast(g, value, dtype)
    return g.op("Mul", onnx_ops.unsqueeze(g, real, [sh.rank(real)]), g.constant(torch.tensor([1.0, 0.0], dtype=dtype)))


def _real_operand(g, value, dtype: torch.dtype):
    """A real tensor or number that scales a complex (..., 2) value: broadcast over the pair."""
    raw = sh.const(value, None)
    if isinstance(raw, (bool, int, float)) or isinstance(raw, torch.Tensor) and raw.dim() == 0 \
            and not value.in_graph:
        return g.constant(float(raw.item() if isinstance(raw, torch.Tensor) else raw), dtype)
    real = onnx_ops.cast(g, value, dtype)
    return onnx_ops.unsqueeze(g, real, [sh.rank(real)])


def _is_real_number(g, value, k: int) -> bool:
    """Input k is real (a real tensor or a non-complex number)."""
    return not is_complex_input(g, k) and not isinstance(sh.const(value, None), complex)


def _complex_mul(g, x, y):
    a, b, c, d = part(g, x, 0), part(g, x, 1), part(g, y, 0), part(g, y, 1)
    return pack(g, g.op("Sub", g.op("Mul", a, c), g.op("Mul", b, d)), g.op("Add", g.op("Mul", a, d), g.op("Mul", b, c)))


def _conj(g, x):
    return g.op("Mul", x, g.constant(torch.tensor([1.0, -1.0], dtype=x.dtype or torch.float32)))


def _abs_squared(g, x):
    return onnx_ops.reduce(g, "ReduceSumSquare", x, [_last_axis(x)], keepdims=False)


def _complex_dtype_of(g, *values) -> torch.dtype:
    """The parts' dtype: that of a complex input (float64 for complex128, else float32)."""
    for k, value in enumerate(values):
        if is_complex_input(g, k) and value.dtype in (torch.float32, torch.float64):
            return value.dtype
    return torch.float32


# -- complex-valued inputs ------------------------------------------------------------------------


@symbolic("complex::abs")
def complex_abs(g, self):
    """abs(Tensor self) -> Tensor, of a complex tensor: sqrt(re^2 + im^2)"""
    return onnx_ops.reduce(g, "ReduceL2", self, [_last_axis(self)], keepdims=False)


@symbolic("complex::angle")
def complex_angle(g, self):
    """angle(Tensor self) -> Tensor, of a complex tensor: atan2(im, re)"""
    return atan2(g, part(g, self, 1), part(g, self, 0))


@symbolic("complex::real")
def complex_real(g, self):
    """real(Tensor(a) self) -> Tensor(a), of a complex tensor"""
    return part(g, self, 0)


@symbolic("complex::imag")
def complex_imag(g, self):
    """imag(Tensor(a) self) -> Tensor(a), of a complex tensor"""
    return part(g, self, 1)


@symbolic("complex::view_as_real")
def complex_view_as_real(g, self):
    """view_as_real(Tensor(a) self) -> Tensor(a): the converter's layout already"""
    return self


@symbolic("complex::neg")
def complex_neg(g, self):
    """neg(Tensor self) -> Tensor, of a complex tensor"""
    return g.op("Neg", self)


@symbolic("complex::conj")
def complex_conj(g, self):
    """conj(Tensor(a) self) -> Tensor(a), of a complex tensor"""
    return _conj(g, self)


def _alpha(alpha) -> float:
    scale = 1.0 if alpha is None or sh.is_none(alpha) else sh.const(alpha)
    if isinstance(scale, complex):
        sh.unimplemented("add/sub", "a complex alpha")
    return float(scale)


def _add(g, self, other, alpha, op: str):
    dtype = _complex_dtype_of(g, self, other)
    x, y = as_complex(g, self, 0, dtype), as_complex(g, other, 1, dtype)
    scale = _alpha(alpha)
    return g.op(op, x, y if scale == 1 else g.op("Mul", y, g.constant(scale, dtype)))


@symbolic("complex::add")
def complex_add(g, self, other, alpha=None):
    """add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor, a complex operand"""
    return _add(g, self, other, alpha, "Add")


@symbolic("complex::sub")
def complex_sub(g, self, other, alpha=None):
    """sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor, a complex operand"""
    return _add(g, self, other, alpha, "Sub")


@symbolic("complex::rsub")
def complex_rsub(g, self, other, alpha=None):
    """rsub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor: other - alpha * self"""
    dtype = _complex_dtype_of(g, self, other)
    scale = _alpha(alpha)
    x, y = as_complex(g, self, 0, dtype), as_complex(g, other, 1, dtype)
    return g.op("Sub", y, x if scale == 1 else g.op("Mul", x, g.constant(scale, dtype)))


@symbolic("complex::mul")
def complex_mul(g, self, other):
    """mul.Tensor(Tensor self, Tensor other) -> Tensor, a complex operand"""
    dtype = _complex_dtype_of(g, self, other)
    if _is_real_number(g, other, 1):
        return g.op("Mul", self, _real_operand(g, other, dtype))
    if _is_real_number(g, self, 0):
        return g.op("Mul", other, _real_operand(g, self, dtype))
    return _complex_mul(g, as_complex(g, self, 0, dtype), as_complex(g, other, 1, dtype))


@symbolic("complex::div")
def complex_div(g, self, other, rounding_mode=None):
    """div.Tensor(Tensor self, Tensor other) -> Tensor, a complex operand"""
    if rounding_mode is not None and not sh.is_none(rounding_mode):
        sh.unimplemented("div", "rounding_mode on complex tensors")
    dtype = _complex_dtype_of(g, self, other)
    if _is_real_number(g, other, 1):
        return g.op("Div", self, _real_operand(g, other, dtype))
    x, y = as_complex(g, self, 0, dtype), as_complex(g, other, 1, dtype)
    # x / y = x * conj(y) / |y|^2
    numerator = _complex_mul(g, x, _conj(g, y))
    return g.op("Div", numerator, onnx_ops.unsqueeze(g, _abs_squared(g, y), [sh.rank(y) - 1]))


def _logical_dim(value, dim) -> int:
    """A torch dim of a complex tensor as an axis of its (..., 2) layout (never the pair)."""
    rank = sh.rank(value)
    if rank is None:
        sh.value_error("an op on a complex tensor needs its rank known", value)
    return sh.const(dim) % (rank - 1)


def _as_real_op(g, name: str, self, dim: int, *args):
    """The real conversion of ``name`` at this opset with the dim normalised: the (real, imag)
    pair rides along as a last dim the op does not touch."""
    from torchscript_onnx.builder.ir import Value

    from .. import registry

    return registry.lookup(name, g.opset)(g, self, Value("", const=dim), *args)


@symbolic("complex::slice")
def complex_slice(g, self, dim=0, start=None, end=None, step=1):
    """slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)"""
    return _as_real_op(g, "aten::slice", self, _logical_dim(self, dim), start, end, step)


@symbolic("complex::select")
def complex_select(g, self, dim, index):
    """select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)"""
    return _as_real_op(g, "aten::select", self, _logical_dim(self, dim), index)


@symbolic("complex::transpose")
def complex_transpose(g, self, dim0, dim1):
    """transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)"""
    a, b = _logical_dim(self, dim0), _logical_dim(self, dim1)
    perm = list(range(sh.rank(self)))
    perm[a], perm[b] = perm[b], perm[a]
    return g.op("Transpose", self, perm_i=perm)


# -- real inputs ----------------------------------------------------------------------------------


@symbolic("aten::real")
def real(g, self):
    """real(Tensor(a) self) -> Tensor(a); of a real tensor, the tensor itself"""
    return self


@symbolic("aten::imag")
def imag(g, self):
    """imag(Tensor(a) self) -> Tensor(a); torch refuses it on real tensors"""
    sh.value_error("imag is not implemented for tensors with non-complex dtypes", self)


@symbolic("aten::angle")
def angle(g, self):
    """angle(Tensor self) -> Tensor; of a real tensor: pi where negative, else 0 (NaN stays NaN)"""
    OPSET.require(g, "ONNX Where and IsNaN", self)
    dtype = float_dtype(g, self)
    x = onnx_ops.cast(g, self, dtype)
    zero = g.constant(0.0, dtype)
    out = g.op("Where", g.op("Less", x, zero), g.constant(math.pi, dtype), zero)
    return g.op("Where", g.op("IsNaN", x), x, out)  # NaN in, NaN out
