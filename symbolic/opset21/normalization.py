"""Normalization at opset 21: GroupNormalization with per-channel scale and bias, as torch's
group_norm (GroupNormalization-18 scaled per group and is not used)."""

from __future__ import annotations

from .. import symbolic_helper as sh
from ..opset9 import normalization as norm9
from ..registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(21)


@_onnx_symbolic("aten::group_norm")
def group_norm(g, input, num_groups, weight, bias, eps, cudnn_enabled):
    """group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float eps=1e-05,
    bool cudnn_enabled=True) -> Tensor"""
    if input.rank is None or input.rank < 3:
        return norm9.group_norm(g, input, num_groups, weight, bias, eps, cudnn_enabled)
    scale = norm9.channel_param(g, weight, input, 1.0, "group_norm")
    shift = norm9.channel_param(g, bias, input, 0.0, "group_norm")
    return g.op("GroupNormalization", input, scale, shift, num_groups_i=sh._get_const(num_groups, "i", "num_groups"),
                epsilon_f=sh._get_const(eps, "f", "eps"))
