"""Normalization layers at opset 9: instance norm and group norm.

batch_norm lives in nn.py, layer_norm and rms_norm in transformer.py; local_response_norm and
F.normalize trace to plain ops (avg_pool, pow, linalg_vector_norm, clamp_min, div).

The versions for higher opsets follow, each registered with ``since=N``: opset 21."""

from __future__ import annotations

import torch

from torchscript_onnx.builder import onnx_ops

from .. import symbolic_helper as sh
from ..registry import symbolic
from .nn import batch_norm
from .operand_types import runtime_supports
from .reduction import reduce


def channels_of(input, op: str) -> int:
    channels = sh.sizes(input)[1] if input.rank is not None and input.rank >= 2 else None
    if not isinstance(channels, int):
        sh.value_error(f"{op}: the channel dim (1) must be static", input)
    return channels


def channel_param(g, param, input, fill: float, op: str):
    """A per-channel weight or bias; a constant ``fill`` when torch passes None."""
    if not sh.is_none(param):
        return param
    return g.constant(torch.full((channels_of(input, op),), fill, dtype=input.dtype or torch.float32))


def per_channel(g, param, rank: int):
    """A (C,) parameter as (C, 1, ...), to broadcast over an (N, C, ...) input; an Unsqueeze, as
    the legacy exporter's, which folds it into an initializer of that shape and name."""
    return onnx_ops.unsqueeze(g, param, list(range(1, rank - 1)))


@symbolic("aten::instance_norm")
def instance_norm(g, input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,
                  cudnn_enabled):
    """instance_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var,
    bool use_input_stats, float momentum, float eps, bool cudnn_enabled) -> Tensor"""
    eps = sh._get_const(eps, "f", "eps")
    if not sh._get_const(use_input_stats, "b", "use_input_stats"):
        # eval with tracked running statistics: a per-channel affine map, as batch_norm in eval
        return batch_norm(g, input, weight, bias, running_mean, running_var, False, momentum, eps, False)
    scale = channel_param(g, weight, input, 1.0, "instance_norm")
    shift = channel_param(g, bias, input, 0.0, "instance_norm")
    # the running statistics torch updates in training do not change the output
    return g.op("InstanceNormalization", input, scale, shift, epsilon_f=eps)


@symbolic("aten::group_norm")
def group_norm(g, input, num_groups, weight, bias, eps, cudnn_enabled):
    """group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float eps=1e-05,
    bool cudnn_enabled=True) -> Tensor"""
    num_groups = sh._get_const(num_groups, "i", "num_groups")
    eps = sh._get_const(eps, "f", "eps")
    rank = input.rank
    if rank is None:
        sh.value_error("group_norm: the input rank must be known", input)
    # mean and biased variance over each (sample, group); ONNX GroupNormalization-18 scales per
    # group, not per channel, so it is not used. Each group of an (N, G, -1) view is one instance:
    # InstanceNormalization normalises it in one kernel (several times faster in onnxruntime than
    # the reductions), then the per-channel affine map follows.
    grouped = g.op("Reshape", input, g.constant([0, num_groups, -1], torch.int64))
    if runtime_supports(g, "InstanceNormalization", input.dtype):
        ones = g.constant(torch.ones(num_groups, dtype=input.dtype), input.dtype)
        zeros = g.constant(torch.zeros(num_groups, dtype=input.dtype), input.dtype)
        normed = g.op("InstanceNormalization", grouped, ones, zeros, epsilon_f=eps)
    else:
        mean = onnx_ops.reduce(g, "ReduceMean", grouped, [2], True)
        centered = g.op("Sub", grouped, mean)
        variance = onnx_ops.reduce(g, "ReduceMean", g.op("Mul", centered, centered), [2], True)
        normed = g.op("Div", centered, g.op("Sqrt", g.op("Add", variance, g.constant(eps, input.dtype))))
    out = g.op("Reshape", normed, onnx_ops.shape_of(g, input))
    if not sh.is_none(weight):
        out = g.op("Mul", out, per_channel(g, weight, rank))
    if not sh.is_none(bias):
        out = g.op("Add", out, per_channel(g, bias, rank))
    return out


@symbolic("aten::_weight_norm")
@sh.parse_args("v", "v", "i")
def _weight_norm(g, v, g_, dim=0):
    """_weight_norm(Tensor v, Tensor g, int dim=0) -> Tensor"""
    # v * (g / ||v||), the L2 norm over every dim but ``dim``; nn.utils.weight_norm(dim=None)
    # passes -1, which torch reads as "over all dims", not as the last dim.
    rank = v.rank
    if rank is None:
        sh.value_error("_weight_norm: the weight rank must be known", v)
    axes = list(range(rank))
    if dim != -1:
        axes.remove(dim + rank if dim < 0 else dim)
    norm = reduce(g, "ReduceL2", v, axes, True)
    return g.op("Mul", v, g.op("Div", g_, norm))


# ---------------------------------------------------------------------------------------------
# Opset 21. Normalization at opset 21: GroupNormalization with per-channel scale and bias, as torch's
# group_norm (GroupNormalization-18 scaled per group and is not used).


@symbolic("aten::group_norm", since=21)
def group_norm_21(g, input, num_groups, weight, bias, eps, cudnn_enabled):
    """group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float eps=1e-05,
    bool cudnn_enabled=True) -> Tensor"""
    if input.rank is None or input.rank < 3:
        return group_norm(g, input, num_groups, weight, bias, eps, cudnn_enabled)
    scale = channel_param(g, weight, input, 1.0, "group_norm")
    shift = channel_param(g, bias, input, 0.0, "group_norm")
    return g.op("GroupNormalization", input, scale, shift, num_groups_i=sh._get_const(num_groups, "i", "num_groups"),
                epsilon_f=sh._get_const(eps, "f", "eps"))
