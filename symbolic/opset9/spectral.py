"""Window functions: a length known at export time gives a constant (any opset); a runtime
length (a size in a scripted graph or under dynamic axes) is computed from a runtime range as a
sum of cosines (hamming, blackman) or a triangle (bartlett), opset 9 on. (Opset 17 has ONNX
BlackmanWindow, symbolic/opset17/spectral.py; ONNX HammingWindow uses alpha = 25/46 where torch
uses 0.54, so it is not used.) resolve_conj/resolve_neg are identities: the converter
materialises conjugation and negation. Importing this module registers the complex-tensor
conversions of ``complex.py``."""

from __future__ import annotations

import math

import torch

from torchscript_onnx import dtypes

from .. import onnx_ops
from . import complex as _complex  # noqa: F401 - registers the complex:: conversions (complex tensors)
from .. import symbolic_helper as sh
from ..registry import onnx_symbolic
from .creation import _scalar, arange_between, creation_dtype

_onnx_symbolic = onnx_symbolic(9)


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
    if g.opset < 9:
        sh.needs_opset(9, "a window of runtime length", window_length)
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


@_onnx_symbolic("aten::hamming_window")
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


@_onnx_symbolic("aten::blackman_window")
def blackman_window(g, window_length, *args):
    """blackman_window(int window_length, *, ScalarType? dtype=None, ...) -> Tensor;
    blackman_window.periodic(int window_length, bool periodic, *, ScalarType? dtype=None, ...) -> Tensor"""
    periodic, dtype = window_args(args)
    out_dtype = creation_dtype(g, dtype)
    n = _static_length(window_length)
    if n is not None:
        return g.constant(torch.blackman_window(n, periodic, dtype=out_dtype))
    return _runtime_window(g, window_length, periodic, out_dtype, _cosine_sum(g, [0.42, 0.5, 0.08]))


@_onnx_symbolic("aten::bartlett_window")
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


@_onnx_symbolic("aten::resolve_conj")
def resolve_conj(g, self):
    """resolve_conj(Tensor(a) self) -> Tensor(a)"""
    return self


@_onnx_symbolic("aten::resolve_neg")
def resolve_neg(g, self):
    """resolve_neg(Tensor(a) self) -> Tensor(a)"""
    return self


# the identity on a complex value's (..., 2) layout too
_onnx_symbolic("complex::resolve_conj")(resolve_conj)
_onnx_symbolic("complex::resolve_neg")(resolve_neg)
