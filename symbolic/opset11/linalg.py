"""Linear algebra at opset 11: Det arrives (det, logdet, slogdet)."""

from __future__ import annotations

from .. import symbolic_helper as sh
from ..opset9.reduction import float_input
from ..registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(11)


def _det(g, self):
    if self.rank is not None and self.rank < 2:
        sh.value_error("det: the input must have at least 2 dims", self)
    return g.op("Det", float_input(g, self))


@_onnx_symbolic("aten::linalg_det")
def linalg_det(g, A):  # noqa: N803 - ATen parameter name
    """linalg_det(Tensor A) -> Tensor"""
    return _det(g, A)


@_onnx_symbolic("aten::det")
def det(g, self):
    """det(Tensor self) -> Tensor"""
    return _det(g, self)


@_onnx_symbolic("aten::logdet")
def logdet(g, self):
    """logdet(Tensor self) -> Tensor"""
    # log of a negative determinant is NaN in both torch and ONNX
    return g.op("Log", _det(g, self))


@_onnx_symbolic("aten::linalg_slogdet")
def linalg_slogdet(g, A):  # noqa: N803
    """linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet)"""
    value = _det(g, A)
    return g.op("Sign", value), g.op("Log", g.op("Abs", value))


@_onnx_symbolic("aten::slogdet")
def slogdet(g, self):
    """slogdet(Tensor self) -> (Tensor sign, Tensor logabsdet)"""
    return linalg_slogdet(g, self)
