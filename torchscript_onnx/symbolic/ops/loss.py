"""Losses at opset 9, as decompositions; from opset 12 as NegativeLogLikelihoodLoss and
SoftmaxCrossEntropyLoss (the versions registered ``since=12``, at the end of the file)."""

from __future__ import annotations

import torch

from torchscript_onnx.builder import onnx_ops

from .. import registry
from .. import symbolic_helper as sh
from ..registry import symbolic


REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}  # at::Reduction


def reduction_name(reduction) -> str:
    return REDUCTIONS[sh._get_const(reduction, "i", "reduction")]


def reduce_loss(g, loss, reduction):
    name = reduction_name(reduction)
    if name == "none":
        return loss
    return onnx_ops.reduce(g, "ReduceMean" if name == "mean" else "ReduceSum", loss, None, False)


def scalar(g, value, like):
    return g.constant(value, like.dtype or torch.float32)


@symbolic("aten::mse_loss")
def mse_loss(g, self, target, reduction=1):
    """mse_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor"""
    diff = g.op("Sub", self, target)
    return reduce_loss(g, g.op("Mul", diff, diff), reduction)


@symbolic("aten::l1_loss")
def l1_loss(g, self, target, reduction=1):
    """l1_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor"""
    return reduce_loss(g, g.op("Abs", g.op("Sub", self, target)), reduction)


@symbolic("aten::smooth_l1_loss")
def smooth_l1_loss(g, self, target, reduction=1, beta=1.0):
    """smooth_l1_loss(Tensor self, Tensor target, int reduction=Mean, float beta=1.0) -> Tensor"""
    beta = sh._get_const(beta, "f", "beta")
    diff = g.op("Abs", g.op("Sub", self, target))
    if beta == 0:
        return reduce_loss(g, diff, reduction)
    quadratic = g.op("Div", g.op("Mul", g.op("Mul", diff, diff), scalar(g, 0.5, self)), scalar(g, beta, self))
    linear = g.op("Sub", diff, scalar(g, 0.5 * beta, self))
    loss = g.op("Where", g.op("Less", diff, scalar(g, beta, self)), quadratic, linear)
    return reduce_loss(g, loss, reduction)


@symbolic("aten::huber_loss")
def huber_loss(g, self, target, reduction=1, delta=1.0):
    """huber_loss(Tensor self, Tensor target, int reduction=Mean, float delta=1.0) -> Tensor"""
    delta = sh._get_const(delta, "f", "delta")
    diff = g.op("Abs", g.op("Sub", self, target))
    quadratic = g.op("Mul", g.op("Mul", diff, diff), scalar(g, 0.5, self))
    linear = g.op("Mul", g.op("Sub", diff, scalar(g, 0.5 * delta, self)), scalar(g, delta, self))
    loss = g.op("Where", g.op("Less", diff, scalar(g, delta, self)), quadratic, linear)
    return reduce_loss(g, loss, reduction)


def _class_axis(input) -> int:
    if input.rank is None:
        sh.value_error("loss: the input rank must be known", input)
    return 1 if input.rank >= 2 else 0


def _num_classes(input, axis: int) -> int:
    classes = sh.sizes(input)[axis]
    if not isinstance(classes, int):
        sh.value_error("loss: the class dim must be static", input)
    return classes


def _class_weights(g, weight, input, axis: int):
    """weight (C,) shaped to broadcast along the class axis of ``input``."""
    shape = [1] * input.rank
    shape[axis] = -1
    return g.op("Reshape", weight, g.constant(shape, torch.int64))


def nll_decomposed(g, input, target, weight, reduction, ignore_index):
    """nll_loss from one-hot targets: -sum_c(onehot * w * input); mean divides by the summed weights
    of the targets that are not ignored, as torch does."""
    axis = _class_axis(input)
    classes = _num_classes(input, axis)
    ignore_index = sh._get_const(ignore_index, "i", "ignore_index")
    kept = g.op("Not", g.op("Equal", target, g.constant(ignore_index, target.dtype)))
    safe_target = g.op("Where", kept, target, g.constant(0, target.dtype))
    onehot = g.op("OneHot", safe_target, g.constant([classes], torch.int64),
                  g.constant([0.0, 1.0], input.dtype), axis_i=axis)
    if not sh.is_none(weight):
        onehot = g.op("Mul", onehot, _class_weights(g, weight, input, axis))
    picked_weight = onnx_ops.reduce(g, "ReduceSum", onehot, [axis], False)
    picked_weight = g.op("Mul", picked_weight, onnx_ops.cast(g, kept, input.dtype))
    picked = onnx_ops.reduce(g, "ReduceSum", g.op("Mul", onehot, input), [axis], False)
    loss = g.op("Neg", g.op("Mul", picked, onnx_ops.cast(g, kept, input.dtype)))
    name = reduction_name(reduction)
    if name == "none":
        return loss
    total = onnx_ops.reduce(g, "ReduceSum", loss, None, False)
    if name == "sum":
        return total
    return g.op("Div", total, onnx_ops.reduce(g, "ReduceSum", picked_weight, None, False))


@symbolic("aten::nll_loss")
def nll_loss(g, self, target, weight, reduction, ignore_index):
    """nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100)
    -> Tensor"""
    return nll_decomposed(g, self, target, weight, reduction, ignore_index)


def _nll_loss_at_opset(g, *args):
    """The aten::nll_loss conversion registered for the target opset (the 2-d and n-d forms
    share it, so a later opset's nll_loss serves them without re-registering them)."""
    return registry.lookup("aten::nll_loss", g.opset)(g, *args)


@symbolic("aten::nll_loss2d")
def nll_loss2d(g, self, target, weight, reduction, ignore_index):
    """nll_loss2d(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean,
    SymInt ignore_index=-100) -> Tensor"""
    return _nll_loss_at_opset(g, self, target, weight, reduction, ignore_index)


@symbolic("aten::nll_loss_nd")
def nll_loss_nd(g, self, target, weight, reduction, ignore_index):
    """nll_loss_nd(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean,
    SymInt ignore_index=-100) -> Tensor"""
    return _nll_loss_at_opset(g, self, target, weight, reduction, ignore_index)


def _log_softmax(g, input, axis: int):
    # LogSoftmax before 13 flattens from its axis on: torch's softmax over the class dim only
    # matches when the class dim is the last one, so it is written out
    shifted = g.op("Sub", input, onnx_ops.reduce(g, "ReduceMax", input, [axis], True))
    return g.op("Sub", shifted, g.op("Log", onnx_ops.reduce(g, "ReduceSum", g.op("Exp", shifted), [axis], True)))


def cross_entropy_decomposed(g, self, target, weight, reduction, ignore_index, label_smoothing):
    axis = _class_axis(self)
    classes = _num_classes(self, axis)
    label_smoothing = sh._get_const(label_smoothing, "f", "label_smoothing")
    log_probs = _log_softmax(g, self, axis)
    weights = None if sh.is_none(weight) else _class_weights(g, weight, self, axis)
    name = reduction_name(reduction)
    if target.dtype is not None and target.dtype.is_floating_point:  # class probabilities
        if label_smoothing > 0:
            target = g.op("Add", g.op("Mul", target, scalar(g, 1 - label_smoothing, self)),
                          scalar(g, label_smoothing / classes, self))
        terms = g.op("Mul", log_probs, target)
        if weights is not None:
            terms = g.op("Mul", terms, weights)
        loss = g.op("Neg", onnx_ops.reduce(g, "ReduceSum", terms, [axis], False))
        if name == "none":
            return loss
        total = onnx_ops.reduce(g, "ReduceSum", loss, None, False)
        if name == "sum":
            return total
        # mean over the batch elements, not the summed weights
        count = onnx_ops.cast(g, _numel(g, loss), self.dtype)
        return g.op("Div", total, count)
    nll = nll_decomposed(g, log_probs, target, weight, reduction, ignore_index)
    if label_smoothing == 0:
        return nll
    ignore_index = sh._get_const(ignore_index, "i", "ignore_index")
    kept = onnx_ops.cast(g, g.op("Not", g.op("Equal", target, g.constant(ignore_index, target.dtype))), self.dtype)
    terms = log_probs if weights is None else g.op("Mul", log_probs, weights)
    smooth = g.op("Mul", g.op("Neg", onnx_ops.reduce(g, "ReduceSum", terms, [axis], False)), kept)
    if name == "sum":
        smooth = onnx_ops.reduce(g, "ReduceSum", smooth, None, False)
    elif name == "mean":
        total = onnx_ops.reduce(g, "ReduceSum", smooth, None, False)
        if weights is None:
            denominator = onnx_ops.reduce(g, "ReduceSum", kept, None, False)
        else:
            # the summed weights of the kept targets, as for the nll part
            picked = g.op("OneHot", g.op("Where", _bool(g, kept), target,
                                         g.constant(0, target.dtype)),
                          g.constant([classes], torch.int64), g.constant([0.0, 1.0], self.dtype), axis_i=axis)
            denominator = onnx_ops.reduce(g, "ReduceSum", g.op("Mul", g.op("Mul", picked, weights),
                                                               onnx_ops.unsqueeze(g, kept, [axis])), None, False)
        smooth = g.op("Div", total, denominator)
    return g.op("Add", g.op("Mul", nll, scalar(g, 1 - label_smoothing, self)),
                g.op("Mul", smooth, scalar(g, label_smoothing / classes, self)))


def _bool(g, mask):
    return onnx_ops.cast(g, mask, torch.bool)


def _numel(g, x):
    if not x.rank:
        return g.constant(1, torch.int64)
    return onnx_ops.reduce(g, "ReduceProd", onnx_ops.shape_of(g, x), None, False)


@symbolic("aten::cross_entropy_loss")
def cross_entropy_loss(g, self, target, weight, reduction, ignore_index, label_smoothing):
    """cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean,
    SymInt ignore_index=-100, float label_smoothing=0.0) -> Tensor"""
    return cross_entropy_decomposed(g, self, target, weight, reduction, ignore_index, label_smoothing)


@symbolic("aten::binary_cross_entropy")
def binary_cross_entropy(g, self, target, weight=None, reduction=1):
    """binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean) -> Tensor"""
    one = scalar(g, 1.0, self)
    # torch clamps each log at -100 so that 0 and 1 give finite losses
    log_p = onnx_ops.clip(g, g.op("Log", self), -100.0, None)
    log_q = onnx_ops.clip(g, g.op("Log", g.op("Sub", one, self)), -100.0, None)
    loss = g.op("Neg", g.op("Add", g.op("Mul", target, log_p), g.op("Mul", g.op("Sub", one, target), log_q)))
    if not sh.is_none(weight):
        loss = g.op("Mul", loss, onnx_ops.cast(g, weight, self.dtype))  # torch promotes integer weights
    return reduce_loss(g, loss, reduction)


@symbolic("aten::binary_cross_entropy_with_logits")
def binary_cross_entropy_with_logits(g, self, target, weight=None, pos_weight=None, reduction=1):
    """binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? weight=None,
    Tensor? pos_weight=None, int reduction=Mean) -> Tensor"""
    one = scalar(g, 1.0, self)
    # softplus(-x) written so that large |x| does not overflow: log1p(exp(-|x|)) + max(-x, 0)
    softplus = g.op("Add", g.op("Log", g.op("Add", one, g.op("Exp", g.op("Neg", g.op("Abs", self))))),
                    g.op("Relu", g.op("Neg", self)))
    if not sh.is_none(pos_weight):
        pos_weight = onnx_ops.cast(g, pos_weight, self.dtype)  # torch promotes integer weights
        softplus = g.op("Mul", softplus, g.op("Add", g.op("Mul", g.op("Sub", pos_weight, one), target), one))
    loss = g.op("Add", g.op("Mul", g.op("Sub", one, target), self), softplus)
    if not sh.is_none(weight):
        loss = g.op("Mul", loss, onnx_ops.cast(g, weight, self.dtype))
    return reduce_loss(g, loss, reduction)


@symbolic("aten::kl_div")
def kl_div(g, self, target, reduction=1, log_target=False):
    """kl_div(Tensor self, Tensor target, int reduction=Mean, *, bool log_target=False) -> Tensor"""
    if sh._get_const(log_target, "b", "log_target"):
        loss = g.op("Mul", g.op("Exp", target), g.op("Sub", target, self))
    else:
        # xlogy(t, t) - t * x, with 0 * log(0) = 0
        # (Greater: Equal takes floats only from opset 11)
        positive = g.op("Greater", target, scalar(g, 0.0, target))
        safe = g.op("Where", positive, target, scalar(g, 1.0, target))
        loss = g.op("Sub", g.op("Mul", target, g.op("Log", safe)), g.op("Mul", target, self))
    return reduce_loss(g, loss, reduction)


# ---------------------------------------------------------------------------------------------
# Opset 12. Losses at opset 12: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss for class-index
# targets; label smoothing and probability targets stay decompositions.


def _native(self, target) -> bool:
    return self.rank is not None and self.rank >= 2 and target.dtype is not None and not target.dtype.is_floating_point


def _inputs(self, target, weight):
    return [self, target] + ([] if sh.is_none(weight) else [weight])


@symbolic("aten::nll_loss", since=12)
def nll_loss_12(g, self, target, weight, reduction, ignore_index):
    """nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100)
    -> Tensor"""
    if not _native(self, target):
        return nll_decomposed(g, self, target, weight, reduction, ignore_index)
    return g.op("NegativeLogLikelihoodLoss", *_inputs(self, target, weight),
                reduction_s=reduction_name(reduction),
                ignore_index_i=sh._get_const(ignore_index, "i", "ignore_index"))


@symbolic("aten::cross_entropy_loss", since=12)
def cross_entropy_loss_12(g, self, target, weight, reduction, ignore_index, label_smoothing):
    """cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean,
    SymInt ignore_index=-100, float label_smoothing=0.0) -> Tensor"""
    if not _native(self, target) or sh._get_const(label_smoothing, "f", "label_smoothing") != 0:
        return cross_entropy_decomposed(g, self, target, weight, reduction, ignore_index, label_smoothing)
    return g.op("SoftmaxCrossEntropyLoss", *_inputs(self, target, weight),
                reduction_s=reduction_name(reduction),
                ignore_index_i=sh._get_const(ignore_index, "i", "ignore_index"))
