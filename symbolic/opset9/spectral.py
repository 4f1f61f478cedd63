"""Window functions of a length known at export time, as constants (any opset). A runtime length
needs ONNX BlackmanWindow (opset 17; symbolic/opset17/spectral.py); ONNX HammingWindow uses
alpha = 25/46 where torch uses 0.54, so a runtime-length hamming window is refused.
resolve_conj/resolve_neg are identities: the converter materialises conjugation and negation."""

from __future__ import annotations

import torch

from .. import symbolic_helper as sh
from ..registry import onnx_symbolic
from .creation import creation_dtype

_onnx_symbolic = onnx_symbolic(9)


def window_args(args) -> tuple[bool, object]:
    """(periodic, dtype) from the arguments after window_length (the last four are the options)."""
    extra, dtype = args[:-4], args[-4]
    periodic = True if not extra else bool(sh.const(extra[0]))
    return periodic, dtype


def _static_length(window_length, op: str, opset: int | None = None) -> int:
    n = sh.const(window_length, None)
    if not isinstance(n, int):
        hint = f": pass opset_version={opset}" if opset else ""
        sh.unimplemented(op, f"a window length known only at run time{hint}")
    return n


@_onnx_symbolic("aten::hamming_window")
def hamming_window(g, window_length, *args):
    """hamming_window(int window_length, *, ScalarType? dtype=None, ...) -> Tensor; also the
    .periodic, .periodic_alpha and .periodic_alpha_beta overloads"""
    periodic, dtype = window_args(args)
    coefs = [float(sh.const(c)) for c in args[1:-4]]
    n = _static_length(window_length, "hamming_window")
    return g.constant(torch.hamming_window(n, periodic, *coefs, dtype=creation_dtype(g, dtype)))


@_onnx_symbolic("aten::blackman_window")
def blackman_window(g, window_length, *args):
    """blackman_window(int window_length, *, ScalarType? dtype=None, ...) -> Tensor;
    blackman_window.periodic(int window_length, bool periodic, *, ScalarType? dtype=None, ...) -> Tensor"""
    periodic, dtype = window_args(args)
    n = _static_length(window_length, "blackman_window", 17)
    return g.constant(torch.blackman_window(n, periodic, dtype=creation_dtype(g, dtype)))


def _resolve(g, op: str, self):
    from ..opset17 import spectral as opset17

    if opset17.is_complex_input(g, 0):  # complex values exist from opset 17 (fft ops) only
        opset17.check_complex_uses(g, op)
    return self


@_onnx_symbolic("aten::resolve_conj")
def resolve_conj(g, self):
    """resolve_conj(Tensor(a) self) -> Tensor(a)"""
    return _resolve(g, "resolve_conj", self)


@_onnx_symbolic("aten::resolve_neg")
def resolve_neg(g, self):
    """resolve_neg(Tensor(a) self) -> Tensor(a)"""
    return _resolve(g, "resolve_neg", self)
