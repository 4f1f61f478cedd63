"""Opset 17: layer normalisation as ONNX LayerNormalization."""

from __future__ import annotations

import torch

from .. import onnx_ops
from .. import symbolic_helper as sh
from ..opset9 import transformer as opset9
from ..opset9.math import runtime_supports
from ..registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(17)


def layer_normalization(g, x, normalized_shape, weight, bias, eps: float):
    """LayerNormalization over the last ``len(normalized_shape)`` dims; it needs a scale input."""
    if not runtime_supports(g, "LayerNormalization", x.dtype):
        return None
    if sh.is_none(weight):
        weight = g.constant(torch.ones(normalized_shape, dtype=x.dtype), x.dtype)
    inputs = [x, onnx_ops.cast(g, weight, x.dtype)]
    if not sh.is_none(bias):
        inputs.append(onnx_ops.cast(g, bias, x.dtype))
    return g.op("LayerNormalization", *inputs, axis_i=-len(normalized_shape), epsilon_f=eps)


@_onnx_symbolic("aten::layer_norm")
@sh.parse_args("v", "is", "v", "v", "f", "none")
def layer_norm(g, input, normalized_shape, weight, bias, eps, cudnn_enable=None):
    """layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool cudnn_enable=True) -> Tensor"""
    out = layer_normalization(g, input, normalized_shape, weight, bias, eps)
    if out is None:
        return opset9.layer_norm_decomposed(g, input, opset9._norm_axes(input, normalized_shape), weight, bias, eps)
    return out
