"""Window functions: a length known at export time gives a constant (any opset); a runtime
length (a size in a scripted graph or under dynamic axes) is computed from a runtime range as a
sum of cosines (hamming, blackman) or a triangle (bartlett), opset 9 on. (Opset 17 has ONNX
BlackmanWindow and STFT/DFT, used by the versions since 17 below; ONNX HammingWindow uses alpha = 25/46 where torch
uses 0.54, so it is not used.) resolve_conj/resolve_neg are identities: the converter
materialises conjugation and negation. Importing this module registers the complex-tensor
conversions of ``complex.py``.

The versions for higher opsets follow, each registered with ``since=N``: opset 17."""

from __future__ import annotations

import math

import torch

from torchscript_onnx.builder import dtypes, onnx_ops

from .. import symbolic_helper as sh
from ..registry import declare_opset_requirements, symbolic
from . import complex as complex_ops
from .creation import _scalar, arange_between, creation_dtype

# The conditions under which a conversion here needs more than opset 7 (OPSET.require states
# them) -> the lowest opset that meets each; a registration at 9 serves 7 and 8 where ONNX allows.
OPSET = declare_opset_requirements({}, unlisted={
    "a window of runtime length": 9,
})


def window_args(args) -> tuple[bool, object]:
    """(periodic, dtype) from the arguments after window_length (the last four are the options)."""
    extra, dtype = args[:-4], args[-4]
    periodic = True if not extra else bool(sh.const(extra[0]))
    return periodic, dtype


def _static_length(window_length) -> int | None:
    n = sh.const(window_length, None)
    if isinstance(n, torch.Tensor) and n.numel() == 1:
        n = int(n.item())
    return n if isinstance(n, int) else None


def _runtime_window(g, window_length, periodic: bool, out_dtype: torch.dtype, shape):
    """``shape(x)`` over x = i / N for i < n, N = n when periodic else n - 1 (at least 1);
    a length-1 window is [1], as in torch."""
    OPSET.require(g, "a window of runtime length", window_length)
    compute = out_dtype if dtypes.is_floating(out_dtype) else torch.float32
    index = arange_between(g, 0, window_length, 1, compute)
    length = _scalar(g, window_length, compute)
    span = length if periodic else g.op("Max", g.op("Sub", length, g.constant(1.0, compute)),
                                         g.constant(1.0, compute))
    window = shape(g.op("Div", index, span), compute)
    single = g.op("Equal", _scalar(g, window_length, torch.int64), g.constant(1, torch.int64))
    return onnx_ops.cast(g, g.op("Where", single, g.constant(1.0, compute), window), out_dtype)


def _cosine_sum(g, coefs):
    """sum_k (-1)^k a_k cos(2 pi k x)"""
    def shape(x, compute):
        out = g.constant(coefs[0], compute)
        for k, a in enumerate(coefs[1:], start=1):
            term = g.op("Mul", g.constant(a, compute),
                        g.op("Cos", g.op("Mul", x, g.constant(2 * math.pi * k, compute))))
            out = g.op("Sub" if k % 2 else "Add", out, term)
        return out
    return shape


@symbolic("aten::hamming_window")
def hamming_window(g, window_length, *args):
    """hamming_window(int window_length, *, ScalarType? dtype=None, ...) -> Tensor; also the
    .periodic, .periodic_alpha and .periodic_alpha_beta overloads"""
    periodic, dtype = window_args(args)
    coefs = [float(sh.const(c)) for c in args[1:-4]]
    out_dtype = creation_dtype(g, dtype)
    n = _static_length(window_length)
    if n is not None:
        return g.constant(torch.hamming_window(n, periodic, *coefs, dtype=out_dtype))
    alpha, beta = (coefs + [0.54, 0.46][len(coefs):])[:2]
    return _runtime_window(g, window_length, periodic, out_dtype, _cosine_sum(g, [alpha, beta]))


@symbolic("aten::blackman_window")
def blackman_window(g, window_length, *args):
    """blackman_window(int window_length, *, ScalarType? dtype=None, ...) -> Tensor;
    blackman_window.periodic(int window_length, bool periodic, *, ScalarType? dtype=None, ...) -> Tensor"""
    periodic, dtype = window_args(args)
    out_dtype = creation_dtype(g, dtype)
    n = _static_length(window_length)
    if n is not None:
        return g.constant(torch.blackman_window(n, periodic, dtype=out_dtype))
    return _runtime_window(g, window_length, periodic, out_dtype, _cosine_sum(g, [0.42, 0.5, 0.08]))


@symbolic("aten::bartlett_window")
def bartlett_window(g, window_length, *args):
    """bartlett_window(int window_length, *, ScalarType? dtype=None, ...) -> Tensor;
    bartlett_window.periodic(int window_length, bool periodic, *, ScalarType? dtype=None, ...) -> Tensor"""
    periodic, dtype = window_args(args)
    out_dtype = creation_dtype(g, dtype)
    n = _static_length(window_length)
    if n is not None:
        return g.constant(torch.bartlett_window(n, periodic, dtype=out_dtype))

    def triangle(x, compute):  # 1 - |2x - 1|
        return g.op("Sub", g.constant(1.0, compute),
                    g.op("Abs", g.op("Sub", g.op("Mul", x, g.constant(2.0, compute)), g.constant(1.0, compute))))

    return _runtime_window(g, window_length, periodic, out_dtype, triangle)


@symbolic("aten::resolve_conj")
def resolve_conj(g, self):
    """resolve_conj(Tensor(a) self) -> Tensor(a)"""
    return self


@symbolic("aten::resolve_neg")
def resolve_neg(g, self):
    """resolve_neg(Tensor(a) self) -> Tensor(a)"""
    return self


# the identity on a complex value's (..., 2) layout too
symbolic("complex::resolve_conj")(resolve_conj)
symbolic("complex::resolve_neg")(resolve_neg)


# ---------------------------------------------------------------------------------------------
# Opset 17. Spectral ops at opset 17: stft as ONNX STFT, fft_* as ONNX DFT, windows as *Window ops.
# 
# Complex tensors have no ONNX type. Inside the converter a complex tensor is a REAL tensor with a
# trailing dim of 2 (real, imaginary), which is what DFT and STFT produce and what
# ``torch.view_as_real`` returns, so ``aten::view_as_real`` is the identity on it. The converter
# sends ops with a complex input to their ``complex::`` conversion: the fft ops below (which read
# that layout themselves) and abs, angle, real, imag, arithmetic in ``complex.py``;
# other consumers and complex graph outputs are refused with a clear error. DFT takes ``axis`` as an attribute at 17-19 and as an input from 20.
# The one-sided inverse (irfft) is native to DFT-20 (onesided=1, inverse=1); at 17-19 it is the real
# part of a full inverse DFT of the weighted one-sided spectrum (see ``_irfft``).


def is_complex_input(g, k: int) -> bool:
    """Whether input ``k`` of the node being converted is complex (by its traced type)."""
    return complex_ops.is_complex_input(g, k)


def _dft(g, x, length, axis: int, inverse: bool = False, onesided: bool = False):
    """ONNX DFT over ``axis`` of x (trailing dim 1 = real, 2 = complex)."""
    dft_length = g.constant(int(length), torch.int64) if isinstance(length, int) else length
    return onnx_ops.dft(g, x, dft_length, axis, inverse, onesided)


def _scale(g, x, factor: float):
    return x if factor == 1.0 else g.op("Mul", x, g.constant(factor, x.dtype or torch.float32))


def _norm_factor(norm, n: int, inverse: bool) -> float:
    """torch's norm as a factor on ONNX DFT (forward unscaled, inverse scaled by 1/n)."""
    norm = norm or "backward"
    if norm == "ortho":
        return math.sqrt(n) / 1.0 if inverse else 1.0 / math.sqrt(n)
    if norm == "forward":
        return float(n) if inverse else 1.0 / n
    return 1.0


def _fft(g, self, n, dim, norm, op: str, inverse: bool, onesided: bool, complex_input: bool):
    rank = sh.rank(self)
    if rank is None:
        sh.value_error(f"{op}: the input rank must be known", self)
    signal_rank = rank - 1 if complex_input else rank
    axis = sh.const(dim) % signal_rank
    x = self if complex_input else onnx_ops.unsqueeze(g, self, [rank])
    size = sh.const(n, None)
    if size is None:
        size = sh.sizes(self)[axis] if sh.is_static(self, axis) else None
    if size is None:
        sh.value_error(f"{op}: the signal length must be static", self)
    size = int(size)
    current = sh.sizes(self)[axis]
    if not isinstance(current, int) or size < current:
        x = onnx_ops.slice(g, x, [axis], [0], [size])
    out = _dft(g, x, size, axis, inverse=inverse, onesided=onesided)
    return _scale(g, out, _norm_factor(sh.const(norm, None), size, inverse))


@symbolic("aten::fft_rfft", since=17)
def fft_rfft(g, self, n=None, dim=-1, norm=None):
    """fft_rfft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor"""
    return _fft(g, self, n, dim, norm, "fft_rfft", False, True, False)


@symbolic("aten::fft_fft", since=17)
def fft_fft(g, self, n=None, dim=-1, norm=None):
    """fft_fft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor"""
    return _fft(g, self, n, dim, norm, "fft_fft", False, False, is_complex_input(g, 0))


@symbolic("aten::fft_ifft", since=17)
def fft_ifft(g, self, n=None, dim=-1, norm=None):
    """fft_ifft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor"""
    return _fft(g, self, n, dim, norm, "fft_ifft", True, False, is_complex_input(g, 0))


def _fft2(g, self, s, dim, norm, op: str, real: bool, inverse: bool = False):
    dims = sh.const(dim)
    sizes = sh.const(s, None) or [None] * len(dims)
    if len(dims) != 2:
        sh.unimplemented(op, "only 2 dims")
    complex_input = not real and is_complex_input(g, 0)
    rank = sh.rank(self) - (1 if complex_input else 0)
    axes = [d % rank for d in dims]
    # the last dim first (one-sided for rfft2), then the other over the complex result
    out = _fft(g, self, sizes[1], axes[1], norm, op, inverse, real, complex_input)
    return _fft(g, out, sizes[0], axes[0], norm, op, inverse, False, True)


@symbolic("aten::fft_rfft2", since=17)
def fft_rfft2(g, self, s=None, dim=(-2, -1), norm=None):
    """fft_rfft2(Tensor self, SymInt[1]? s=None, int[1] dim=[-2,-1], str? norm=None) -> Tensor"""
    return _fft2(g, self, s, dim, norm, "fft_rfft2", real=True)


@symbolic("aten::fft_fft2", since=17)
def fft_fft2(g, self, s=None, dim=(-2, -1), norm=None):
    """fft_fft2(Tensor self, SymInt[1]? s=None, int[1] dim=[-2,-1], str? norm=None) -> Tensor"""
    return _fft2(g, self, s, dim, norm, "fft_fft2", real=False)


def _conj(g, x):
    """Complex conjugate of a (..., 2) value."""
    return g.op("Mul", x, g.constant(torch.tensor([1.0, -1.0], dtype=x.dtype or torch.float32)))


def _swap_norm(norm):
    """hfft/ihfft are irfft/rfft of the conjugate with the roles of forward and backward swapped."""
    return {"forward": "backward", "ortho": "ortho"}.get(sh.const(norm, None) or "backward", "forward")


def _irfft(g, self, n, dim, norm, op: str, complex_input: bool):
    """One-sided spectrum (..., m[, 2]) over ``dim`` -> real signal of length n (default 2 * (m - 1))."""
    rank = sh.rank(self)
    if rank is None:
        sh.value_error(f"{op}: the input rank must be known", self)
    if not complex_input:  # a real spectrum: imaginary parts 0
        self = onnx_ops.pad(g, onnx_ops.unsqueeze(g, self, [rank]), [0] * (rank + 1) + [0] * rank + [1])
        rank += 1
    axis = sh.const(dim) % (rank - 1)
    m = sh.sizes(self)[axis]
    if not isinstance(m, int):
        sh.value_error(f"{op}: the number of frequency bins must be static", self)
    size = sh.const(n, None)
    size = 2 * (m - 1) if size is None else int(size)
    if size < 1:
        sh.value_error(f"{op}: invalid number of data points ({size})", self)
    # torch trims or zero-pads the spectrum to n // 2 + 1 bins
    bins = size // 2 + 1
    x = self
    if m > bins:
        x = onnx_ops.slice(g, x, [axis], [0], [bins])
    elif m < bins:
        pads = [0] * (2 * rank)
        pads[rank + axis] = bins - m
        x = onnx_ops.pad(g, x, pads)
    if g.opset >= 20:  # DFT-20 defines onesided inverse: complex one-sided input -> real signal
        out = _dft(g, x, size, axis, inverse=True, onesided=True)
    else:
        # the real part of a full inverse DFT of the spectrum with bins 1 .. ceil(n/2) - 1 doubled
        # (they stand for themselves and their conjugate mirror) and the rest zero-padded; DC and
        # Nyquist count once, and taking the real part drops their imaginary parts as torch does
        weights = torch.full((bins,) + (1,) * (rank - 1 - axis), 2.0, dtype=x.dtype or torch.float32)
        weights[0] = 1.0
        if size % 2 == 0:
            weights[-1] = 1.0
        out = _dft(g, g.op("Mul", x, g.constant(weights)), size, axis, inverse=True)
    out = g.op("Gather", out, g.constant(0, torch.int64), axis_i=rank - 1)
    return _scale(g, out, _norm_factor(sh.const(norm, None), size, True))


@symbolic("aten::fft_irfft", since=17)
def fft_irfft(g, self, n=None, dim=-1, norm=None):
    """fft_irfft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor"""
    return _irfft(g, self, n, dim, norm, "fft_irfft", is_complex_input(g, 0))


def _irfftn(g, self, s, dim, norm, op: str):
    complex_input = is_complex_input(g, 0)
    rank = sh.rank(self) - (1 if complex_input else 0)
    dims = sh.const(dim, None)
    sizes = sh.const(s, None)
    if dims is None:
        dims = list(range(rank)) if sizes is None else list(range(rank - len(sizes), rank))
    if sizes is None:
        sizes = [None] * len(dims)
    if len(sizes) != len(dims):
        sh.value_error(f"{op}: s and dim must have the same length", self)
    # torch: complex inverse DFTs over all dims but the last, then the one-sided inverse over the last
    x = self
    for size, axis in zip(sizes[:-1], dims[:-1]):
        x = _fft(g, x, size, axis % rank, norm, op, True, False, complex_input)
        complex_input = True
    return _irfft(g, x, sizes[-1], dims[-1] % rank, norm, op, complex_input)


@symbolic("aten::fft_irfft2", since=17)
def fft_irfft2(g, self, s=None, dim=(-2, -1), norm=None):
    """fft_irfft2(Tensor self, SymInt[1]? s=None, int[1] dim=[-2,-1], str? norm=None) -> Tensor"""
    return _irfftn(g, self, s, dim, norm, "fft_irfft2")


@symbolic("aten::fft_irfftn", since=17)
def fft_irfftn(g, self, s=None, dim=None, norm=None):
    """fft_irfftn(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor"""
    return _irfftn(g, self, s, dim, norm, "fft_irfftn")


@symbolic("aten::fft_hfft", since=17)
def fft_hfft(g, self, n=None, dim=-1, norm=None):
    """fft_hfft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor"""
    complex_input = is_complex_input(g, 0)
    x = _conj(g, self) if complex_input else self
    return _irfft(g, x, n, dim, _swap_norm(norm), "fft_hfft", complex_input)


@symbolic("aten::fft_ihfft", since=17)
def fft_ihfft(g, self, n=None, dim=-1, norm=None):
    """fft_ihfft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor"""
    return _conj(g, _fft(g, self, n, dim, _swap_norm(norm), "fft_ihfft", False, True, False))


@symbolic("aten::view_as_real", since=17)
def view_as_real(g, self):
    """view_as_real(Tensor(a) self) -> Tensor(a)"""
    return self  # a complex value already is (..., 2) real inside the converter (module docstring)


@symbolic("aten::view_as_complex", since=17)
def view_as_complex(g, self):
    """view_as_complex(Tensor(a) self) -> Tensor(a)"""
    return self  # (..., 2) real already is the converter's complex layout (module docstring)


@symbolic("aten::_conj", since=17)
def _conj_(g, self):
    """_conj(Tensor(a) self) -> Tensor(a)"""
    if not is_complex_input(g, 0):
        return self
    return _conj(g, self)


@symbolic("aten::conj_physical", since=17)
def conj_physical(g, self):
    """conj_physical(Tensor self) -> Tensor"""
    return _conj_(g, self)


@symbolic("aten::stft", since=17)
def stft(g, self, n_fft, hop_length=None, win_length=None, window=None, normalized=False, onesided=None,
         return_complex=None, align_to_window=None):
    """stft(Tensor self, int n_fft, int? hop_length=None, int? win_length=None, Tensor? window=None, bool normalized=False, bool? onesided=None, bool? return_complex=None, bool? align_to_window=None) -> Tensor"""
    n_fft = int(sh.const(n_fft))
    hop = sh.const(hop_length, None) or n_fft // 4
    win = sh.const(win_length, None) or n_fft
    if sh.const(align_to_window, None):
        sh.unimplemented("stft", "align_to_window=True")
    rank = sh.rank(self)
    if rank not in (1, 2):
        sh.value_error("stft: the input must be 1-D or 2-D", self)
    onesided = True if sh.const(onesided, None) is None else bool(sh.const(onesided))
    signal = onnx_ops.unsqueeze(g, self, [0, 2] if rank == 1 else [2])
    dtype = self.dtype or torch.float32
    if sh.is_none(window):
        window = g.constant(torch.ones(win, dtype=dtype), dtype)
    if win < n_fft:  # torch centres a shorter window inside n_fft
        left = (n_fft - win) // 2
        window = onnx_ops.pad(g, window, [left, n_fft - win - left], "constant", 0.0)
    out = g.op("STFT", signal, g.constant(hop, torch.int64), window, g.constant(n_fft, torch.int64),
               onesided_i=int(onesided))
    out = g.op("Transpose", out, perm_i=[0, 2, 1, 3])  # ONNX [batch, frames, bins, 2] -> torch's order
    if rank == 1:
        out = onnx_ops.squeeze(g, out, [0])
    if sh.const(normalized, None):
        out = _scale(g, out, 1.0 / math.sqrt(n_fft))
    return out


@symbolic("aten::blackman_window", since=17)
def blackman_window_17(g, window_length, *args):
    """blackman_window(int window_length, *, ScalarType? dtype=None, ...) -> Tensor;
    blackman_window.periodic(int window_length, bool periodic, *, ScalarType? dtype=None, ...) -> Tensor"""
    periodic, dtype = window_args(args)
    if isinstance(sh.const(window_length, None), int):
        return blackman_window(g, window_length, *args)
    size = onnx_ops.cast(g, window_length, torch.int64)
    out = g.op("BlackmanWindow", size, periodic_i=int(periodic), output_datatype_i=1)
    # torch's length-1 window is [1]; ONNX's is [0] (periodic) or [nan] (symmetric: 0 / 0)
    single = g.op("Equal", size, g.constant(1, torch.int64))
    out = g.op("Where", single, g.constant(1.0, torch.float32), out)
    return onnx_ops.cast(g, out, creation_dtype(g, dtype))


# ops whose conversion above reads a complex input's (..., 2) layout itself
for _name, _fn in [("fft_fft", fft_fft), ("fft_ifft", fft_ifft), ("fft_fft2", fft_fft2), ("fft_irfft", fft_irfft),
                   ("fft_irfft2", fft_irfft2), ("fft_irfftn", fft_irfftn), ("fft_hfft", fft_hfft),
                   ("_conj", _conj_), ("conj_physical", conj_physical)]:
    symbolic(f"complex::{_name}", since=17)(_fn)
