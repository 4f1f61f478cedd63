"""Opset 23: RMS normalisation as ONNX RMSNormalization, scaled dot-product attention as ONNX
Attention (4-D query/key/value; boolean masks keep True = attend, as torch)."""

from __future__ import annotations

import torch

from .. import onnx_ops
from .. import symbolic_helper as sh
from ..opset9 import transformer as opset9
from ..opset9.math import runtime_supports
from ..registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(23)


@_onnx_symbolic("aten::rms_norm")
@sh.parse_args("v", "is", "v", "none")
def rms_norm(g, input, normalized_shape, weight=None, eps=None):
    """rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, float? eps=None) -> Tensor"""
    if not runtime_supports(g, "RMSNormalization", input.dtype):
        return opset9.rms_norm(g, input, normalized_shape, weight, eps)
    if sh.is_none(weight):
        weight = g.constant(torch.ones(normalized_shape, dtype=input.dtype), input.dtype)
    return g.op("RMSNormalization", input, onnx_ops.cast(g, weight, input.dtype),
                axis_i=-len(normalized_shape), epsilon_f=opset9.rms_eps(eps, input.dtype))


@_onnx_symbolic("aten::scaled_dot_product_attention")
@sh.parse_args("v", "v", "v", "v", "f", "b", "none", "none")
def scaled_dot_product_attention(g, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0.0, bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor"""
    native = (all(sh.rank(v) == 4 for v in (query, key, value)) and query.dtype in (torch.float32, torch.float16)
              and not (dropout_p and g.training) and not (is_causal and not sh.is_none(attn_mask)))
    if not native:
        return opset9.scaled_dot_product_attention(g, query, key, value, attn_mask, dropout_p, is_causal, scale,
                                                   enable_gqa)
    inputs = [query, key, value]
    if not sh.is_none(attn_mask):
        mask = attn_mask if attn_mask.dtype == torch.bool else onnx_ops.cast(g, attn_mask, query.dtype)
        inputs.append(_mask_rows(g, mask, query))
    attrs = {"is_causal_i": int(is_causal)}
    if not sh.is_none(scale):
        attrs["scale_f"] = float(sh.const(scale))
    return g.op("Attention", *inputs, **attrs)


def _mask_rows(g, mask, query):
    """onnxruntime's Attention requires the mask's query dim to equal the query length (no
    broadcast from 1, which torch and the ONNX spec allow): expand it."""
    if mask.rank is None:
        sh.value_error("scaled_dot_product_attention: the attn_mask rank must be known", mask)
    if mask.rank >= 2 and mask.shape[-2] is not None and mask.shape[-2] == query.shape[2]:
        return mask
    rank = max(mask.rank, 2)
    target = onnx_ops.unsqueeze(g, onnx_ops.size(g, query, 2), [0])
    shape = g.op("Concat", g.constant([1] * (rank - 2), torch.int64), target, g.constant([1], torch.int64), axis_i=0)
    return g.op("Expand", mask, shape)
