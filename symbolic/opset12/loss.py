"""Losses at opset 12: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss for class-index
targets; label smoothing and probability targets stay decompositions."""

from __future__ import annotations

from .. import symbolic_helper as sh
from ..opset9 import loss as loss9
from ..registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(12)


def _native(self, target) -> bool:
    return self.rank is not None and self.rank >= 2 and target.dtype is not None and not target.dtype.is_floating_point


def _inputs(self, target, weight):
    return [self, target] + ([] if sh.is_none(weight) else [weight])


@_onnx_symbolic("aten::nll_loss")
def nll_loss(g, self, target, weight, reduction, ignore_index):
    """nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100)
    -> Tensor"""
    if not _native(self, target):
        return loss9.nll_decomposed(g, self, target, weight, reduction, ignore_index)
    return g.op("NegativeLogLikelihoodLoss", *_inputs(self, target, weight),
                reduction_s=loss9.reduction_name(reduction),
                ignore_index_i=sh._get_const(ignore_index, "i", "ignore_index"))


@_onnx_symbolic("aten::cross_entropy_loss")
def cross_entropy_loss(g, self, target, weight, reduction, ignore_index, label_smoothing):
    """cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean,
    SymInt ignore_index=-100, float label_smoothing=0.0) -> Tensor"""
    if not _native(self, target) or sh._get_const(label_smoothing, "f", "label_smoothing") != 0:
        return loss9.cross_entropy_decomposed(g, self, target, weight, reduction, ignore_index, label_smoothing)
    return g.op("SoftmaxCrossEntropyLoss", *_inputs(self, target, weight),
                reduction_s=loss9.reduction_name(reduction),
                ignore_index_i=sh._get_const(ignore_index, "i", "ignore_index"))
