"""Transformer building blocks at opset 9: layer and RMS normalisation, scaled dot-product
attention, and the fused fast paths ``nn.MultiheadAttention`` and ``nn.TransformerEncoderLayer``
take in eval mode without grad (``_native_multi_head_attention``, ``_transformer_encoder_layer_fwd``).

Native ONNX forms (LayerNormalization 17, RMSNormalization 23) register in
``symbolic/opsetN/transformer.py``.

The versions for higher opsets follow, each registered with ``since=N``: opsets 17, 23."""

from __future__ import annotations

import math

import torch

from torchscript_onnx.builder import onnx_ops
from torchscript_onnx.builder.ir import Value

from .. import symbolic_helper as sh
from ..registry import declare_opset_requirements, symbolic
from .operand_types import runtime_supports


# When an op here needs a higher opset than it is registered at: the condition (the reason its
# conversion states with OPSET.require) -> the lowest opset that converts it (docs/supported_ops.md).
OPSET = declare_opset_requirements({
    ("aten::scaled_dot_product_attention", "aten::_native_multi_head_attention"): {
        "is_causal=True with a dynamic sequence (ONNX Range)": 11},
}, unlisted={
    "enable_gqa (it uses ONNX Expand)": 8,
    "attention with a boolean or causal mask (it uses ONNX Where)": 9,
    "the encoder layer's gelu (it uses ONNX Erf)": 9,
})


def _weight(g, weight, dtype) -> Value | None:
    return None if sh.is_none(weight) else onnx_ops.cast(g, weight, dtype)


def _compute_dtype(dtype):
    """Normalisation statistics in float32 for half types, as torch's CPU kernels do."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def layer_norm_decomposed(g, x: Value, axes: list[int], weight, bias, eps: float) -> Value:
    """(x - mean) / sqrt(var + eps) * weight + bias over ``axes`` (biased variance)."""
    out_dtype = x.dtype
    x = onnx_ops.cast(g, x, _compute_dtype(x.dtype))
    mean = onnx_ops.reduce(g, "ReduceMean", x, axes, True)
    centered = g.op("Sub", x, mean)
    # Pow(., 2), Sqrt and Div: the form onnxruntime fuses back into one LayerNormalization
    var = onnx_ops.reduce(g, "ReduceMean", g.op("Pow", centered, g.constant(2.0, x.dtype)), axes, True)
    std = g.op("Sqrt", g.op("Add", var, g.constant(eps, x.dtype)))
    y = g.op("Div", centered, std)
    if (w := _weight(g, weight, x.dtype)) is not None:
        y = g.op("Mul", y, w)
    if (b := _weight(g, bias, x.dtype)) is not None:
        y = g.op("Add", y, b)
    return onnx_ops.cast(g, y, out_dtype)


def _norm_axes(x: Value, normalized_shape) -> list[int]:
    rank = sh.rank(x)
    if rank is None:
        sh.value_error("the input rank must be known", x)
    return list(range(rank - len(normalized_shape), rank))


@symbolic("aten::layer_norm")
@sh.parse_args("v", "is", "v", "v", "f", "none")
def layer_norm(g, input, normalized_shape, weight, bias, eps, cudnn_enable=None):
    """layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool cudnn_enable=True) -> Tensor"""
    return layer_norm_decomposed(g, input, _norm_axes(input, normalized_shape), weight, bias, eps)


@symbolic("aten::native_layer_norm")
@sh.parse_args("v", "is", "v", "v", "f")
def native_layer_norm(g, input, normalized_shape, weight, bias, eps):
    """native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)"""
    axes = _norm_axes(input, normalized_shape)
    x = onnx_ops.cast(g, input, _compute_dtype(input.dtype))
    mean = onnx_ops.reduce(g, "ReduceMean", x, axes, True)
    centered = g.op("Sub", x, mean)
    var = onnx_ops.reduce(g, "ReduceMean", g.op("Mul", centered, centered), axes, True)
    rstd = g.op("Reciprocal", g.op("Sqrt", g.op("Add", var, g.constant(eps, x.dtype))))
    return layer_norm_decomposed(g, input, axes, weight, bias, eps), mean, rstd


def rms_eps(eps, dtype) -> float:
    """torch's default: the machine epsilon of the input type."""
    value = sh.const(eps, None) if not sh.is_none(eps) else None
    return float(value) if value is not None else torch.finfo(dtype).eps


@symbolic("aten::rms_norm")
@sh.parse_args("v", "is", "v", "none")
def rms_norm(g, input, normalized_shape, weight=None, eps=None):
    """rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, float? eps=None) -> Tensor"""
    axes = _norm_axes(input, normalized_shape)
    eps = rms_eps(eps, input.dtype)
    x = onnx_ops.cast(g, input, _compute_dtype(input.dtype))
    # Pow(., 2) ... Div: the form onnxruntime fuses into SimplifiedLayerNormalization
    mean_square = onnx_ops.reduce(g, "ReduceMean", g.op("Pow", x, g.constant(2.0, x.dtype)), axes, True)
    y = g.op("Div", x, g.op("Sqrt", g.op("Add", mean_square, g.constant(eps, x.dtype))))
    if (w := _weight(g, weight, x.dtype)) is not None:
        y = g.op("Mul", y, w)
    return onnx_ops.cast(g, y, input.dtype)


# ---------------------------------------------------------------------------------------------
# Attention


def _transpose_last(g, x: Value) -> Value:
    rank = sh.rank(x)
    if rank is None:
        sh.value_error("the key's rank must be known", x)
    perm = list(range(rank))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    return g.op("Transpose", x, perm_i=perm)


def _softmax_last(g, x: Value) -> Value:
    return g.op("Softmax", x, axis_i=x.rank - 1)


def _default_scale(g, query: Value) -> Value:
    """1 / sqrt(E), E = query.size(-1): a constant when E is static."""
    dims = sh.sizes(query)
    if dims is not None and isinstance(dims[-1], int):
        return g.constant(1.0 / math.sqrt(dims[-1]), query.dtype)
    e = onnx_ops.cast(g, onnx_ops.size(g, query, -1), query.dtype)
    return g.op("Reciprocal", g.op("Sqrt", e))


def causal_mask(g, query: Value, key: Value) -> Value:
    """Bool (L, S): position i attends to j <= i (torch aligns the triangle top-left)."""
    dims_q, dims_k = sh.sizes(query), sh.sizes(key)
    length, source = dims_q[-2], dims_k[-2]
    if isinstance(length, int) and isinstance(source, int):
        return g.constant(torch.ones(length, source, dtype=torch.bool).tril(), torch.bool)
    OPSET.require(g, "is_causal=True with a dynamic sequence (ONNX Range)")
    zero, one = g.constant(0, torch.int64), g.constant(1, torch.int64)
    rows = g.op("Range", zero, onnx_ops.size(g, query, -2), one)
    cols = g.op("Range", zero, onnx_ops.size(g, key, -2), one)
    return g.op("Not", g.op("Greater", onnx_ops.unsqueeze(g, cols, [0]), onnx_ops.unsqueeze(g, rows, [1])))


def _masked_to_bias(g, allowed: Value, dtype) -> Value:
    """A bool mask (True = attend) as an additive bias: 0 where allowed, -inf elsewhere."""
    OPSET.require(g, "attention with a boolean or causal mask (it uses ONNX Where)")
    return g.op("Where", allowed, g.constant(0.0, dtype), g.constant(float("-inf"), dtype))


def _repeat_heads(g, x: Value, groups: int) -> Value:
    """(..., Hkv, S, E) -> (..., Hkv * groups, S, E), each head repeated ``groups`` times in place."""
    OPSET.require(g, "enable_gqa (it uses ONNX Expand)")
    rank = x.rank
    expanded = onnx_ops.unsqueeze(g, x, [rank - 2])  # (..., Hkv, 1, S, E)
    shape = onnx_ops.shape_of(g, expanded)
    ones = [1] * (rank + 1)
    ones[rank - 2] = groups
    target = g.op("Mul", shape, g.constant(torch.tensor(ones, dtype=torch.int64), torch.int64))
    tiled = g.op("Expand", expanded, target)
    x_shape = onnx_ops.shape_of(g, x)
    heads = g.op("Mul", onnx_ops.slice(g, x_shape, [0], [rank - 3], [rank - 2]),
                 g.constant(torch.tensor([groups], dtype=torch.int64), torch.int64))
    pieces = [onnx_ops.slice(g, x_shape, [0], [0], [rank - 3]), heads,
              onnx_ops.slice(g, x_shape, [0], [rank - 2], [rank])]
    return g.op("Reshape", tiled, g.op("Concat", *pieces, axis_i=0))


def attention(g, query: Value, key: Value, value: Value, mask: Value | None, scale, is_causal: bool,
              groups: int = 1, masked_is_true: bool = False, need_probs: bool = False, safe_softmax: bool = False):
    """softmax(Q K^T * scale + mask) V; ``mask`` bool (True = attend, or masked when
    ``masked_is_true``) or float (added). ``safe_softmax``: rows the mask leaves empty give 0 in
    the output (sdpa's semantics); the probabilities ``need_probs`` returns keep softmax's NaN there,
    as nn.MultiheadAttention's weights do."""
    dtype = query.dtype
    if groups > 1:
        key, value = _repeat_heads(g, key, groups), _repeat_heads(g, value, groups)
    scale = _default_scale(g, query) if scale is None else g.constant(float(scale), dtype)
    scores = g.op("Mul", g.op("MatMul", query, _transpose_last(g, key)), scale)
    if is_causal:
        scores = g.op("Add", scores, _masked_to_bias(g, causal_mask(g, query, key), dtype))
    bias = None
    if mask is not None:
        if mask.dtype == torch.bool:
            bias = _masked_to_bias(g, g.op("Not", mask) if masked_is_true else mask, dtype)
        else:
            bias = onnx_ops.cast(g, mask, dtype)
        scores = g.op("Add", scores, bias)
    probs = _softmax_last(g, scores)
    out = g.op("MatMul", probs, value)
    if bias is not None and safe_softmax and onnx_ops.has_op(g, "Where") and _may_leave_rows_empty(bias):
        # torch's sdpa softmax gives 0, not NaN, on rows the mask leaves empty (as ONNX Attention does)
        out = g.op("Where", _empty_rows(g, bias), g.constant(0.0, dtype), out)
    return (out, probs) if need_probs else out


def _may_leave_rows_empty(bias: Value) -> bool:
    """False when the additive mask is known at export time and fills no row with -inf only (Swin's
    relative position bias): the guard would be a Where of a constant all-false condition, which
    onnxruntime folds to a constant but still runs over every layer's output (Swin-tiny: 12 of them,
    about 2% of a run)."""
    known = bias.const
    if not isinstance(known, torch.Tensor) or not known.is_floating_point() or known.dim() == 0:
        return True
    return bool((known.amax(-1) < torch.finfo(known.dtype).min).any())


def _empty_rows(g, bias: Value) -> Value:
    """Bool (..., L, 1): the rows an additive mask fills with -inf only, where softmax gives NaN.

    Read from the mask, not from the scores: the mask is often smaller (broadcast over heads or
    batch) and shared by every layer, so the check runs once per model rather than once per layer
    over the whole score tensor (T5-small: 3 reductions instead of 18 checks of each probability).
    Finite scores cannot lift a -inf; Less than the lowest finite value is -inf, at every opset
    with Where (Equal takes floats only from opset 11)."""
    rank = sh.rank(bias)
    last = -1 if rank is None else rank - 1  # negative axes arrived in opset 11
    row_max = onnx_ops.reduce(g, "ReduceMax", bias, [last], True)
    return g.op("Less", row_max, g.constant(torch.finfo(row_max.dtype).min, row_max.dtype))


@symbolic("aten::scaled_dot_product_attention")
@sh.parse_args("v", "v", "v", "v", "f", "b", "none", "none")
def scaled_dot_product_attention(g, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0.0, bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor"""
    if dropout_p and g.training:
        sh.unimplemented("aten::scaled_dot_product_attention", "dropout_p > 0 in training mode")
    if is_causal and not sh.is_none(attn_mask):
        sh.value_error("is_causal=True with an attn_mask: torch rejects this combination too", attn_mask)
    scale = None if sh.is_none(scale) else sh.const(scale)
    groups = 1
    if sh.const(enable_gqa, False):
        hq, hk = sh.sizes(query)[-3], sh.sizes(key)[-3]
        if not (isinstance(hq, int) and isinstance(hk, int)):
            sh.value_error("enable_gqa needs static head counts", key)
        groups = hq // hk
    mask = None if sh.is_none(attn_mask) else attn_mask
    return attention(g, query, key, value, mask, scale, is_causal, groups, safe_softmax=True)


# ---------------------------------------------------------------------------------------------
# nn.MultiheadAttention / nn.TransformerEncoderLayer fast paths (batch_first inputs)


def _linear(g, x: Value, weight: Value, bias: Value | None) -> Value:
    y = g.op("MatMul", x, g.op("Transpose", weight, perm_i=[1, 0]))
    return y if bias is None or sh.is_none(bias) else g.op("Add", y, bias)


def _split_heads(g, x: Value, heads: int, head_dim: int) -> Value:
    """(B, L, H * D) -> (B, H, L, D)."""
    shaped = g.op("Reshape", x, g.constant(torch.tensor([0, 0, heads, head_dim], dtype=torch.int64), torch.int64))
    return g.op("Transpose", shaped, perm_i=[0, 2, 1, 3])


def _merge_heads(g, x: Value, embed_dim: int) -> Value:
    """(B, H, L, D) -> (B, L, H * D)."""
    moved = g.op("Transpose", x, perm_i=[0, 2, 1, 3])
    return g.op("Reshape", moved, g.constant(torch.tensor([0, 0, embed_dim], dtype=torch.int64), torch.int64))


def _fast_path_mask(g, mask, mask_type) -> Value | None:
    """The merged mask of the fused kernels: type 0 (L, S), 1 key padding (B, S), 2 (B, H, L, S).
    Bool masks mark positions to leave out (the opposite of sdpa's)."""
    if sh.is_none(mask):
        return None
    if sh.const(mask_type, None) == 1:
        mask = onnx_ops.unsqueeze(g, mask, [1, 2])
    return mask


def multi_head_attention(g, query, key, value, embed_dim, num_head, qkv_weight, qkv_bias, proj_weight, proj_bias,
                         mask, mask_type, need_probs=False):
    head_dim = embed_dim // num_head
    w_q, w_k, w_v = onnx_ops.split(g, qkv_weight, [embed_dim] * 3, 0)
    b_q, b_k, b_v = onnx_ops.split(g, qkv_bias, [embed_dim] * 3, 0) if not sh.is_none(qkv_bias) else (None,) * 3
    q = _split_heads(g, _linear(g, query, w_q, b_q), num_head, head_dim)
    k = _split_heads(g, _linear(g, key, w_k, b_k), num_head, head_dim)
    v = _split_heads(g, _linear(g, value, w_v, b_v), num_head, head_dim)
    mask = _fast_path_mask(g, mask, mask_type)
    result = attention(g, q, k, v, mask, None, False, masked_is_true=True, need_probs=need_probs)
    out, probs = result if need_probs else (result, None)
    out = _linear(g, _merge_heads(g, out, embed_dim), proj_weight, proj_bias)
    return (out, probs) if need_probs else out


@symbolic("aten::_native_multi_head_attention")
@sh.parse_args("v", "v", "v", "i", "i", "v", "v", "v", "v", "v", "b", "b", "none")
def _native_multi_head_attention(g, query, key, value, embed_dim, num_head, qkv_weight, qkv_bias, proj_weight,
                                 proj_bias, mask=None, need_weights=True, average_attn_weights=True,
                                 mask_type=None):
    """_native_multi_head_attention(Tensor query, Tensor key, Tensor value, int embed_dim, int num_head, Tensor qkv_weight, Tensor qkv_bias, Tensor proj_weight, Tensor proj_bias, Tensor? mask=None, bool need_weights=True, bool average_attn_weights=True, int? mask_type=None) -> (Tensor, Tensor)"""
    out, probs = multi_head_attention(g, query, key, value, embed_dim, num_head, qkv_weight, qkv_bias, proj_weight,
                                      proj_bias, mask, mask_type, need_probs=True)
    if not need_weights:
        return out, g.constant(torch.zeros(0, dtype=query.dtype), query.dtype)
    if average_attn_weights:
        probs = onnx_ops.reduce(g, "ReduceMean", probs, [1], False)
    return out, probs


@symbolic("aten::_transformer_encoder_layer_fwd")
@sh.parse_args("v", "i", "i", "v", "v", "v", "v", "b", "b", "f", "v", "v", "v", "v", "v", "v", "v", "v", "v", "none")
def _transformer_encoder_layer_fwd(g, src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias,
                                   use_gelu, norm_first, eps, norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2,
                                   ffn_weight_1, ffn_bias_1, ffn_weight_2, ffn_bias_2, mask=None, mask_type=None):
    """_transformer_encoder_layer_fwd(Tensor src, int embed_dim, int num_heads, Tensor qkv_weight, Tensor qkv_bias, Tensor proj_weight, Tensor proj_bias, bool use_gelu, bool norm_first, float eps, Tensor norm_weight_1, Tensor norm_bias_1, Tensor norm_weight_2, Tensor norm_bias_2, Tensor ffn_weight_1, Tensor ffn_bias_1, Tensor ffn_weight_2, Tensor ffn_bias_2, Tensor? mask=None, int? mask_type=None) -> Tensor"""
    def norm(x, weight, bias):
        return layer_norm_decomposed(g, x, [x.rank - 1], weight, bias, eps)

    def self_attention(x):
        return multi_head_attention(g, x, x, x, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias,
                                    mask, mask_type)

    def feed_forward(x):
        hidden = _linear(g, x, ffn_weight_1, ffn_bias_1)
        if use_gelu:
            OPSET.require(g, "the encoder layer's gelu (it uses ONNX Erf)")
            half = g.constant(0.5, hidden.dtype)
            erf = g.op("Erf", g.op("Mul", hidden, g.constant(1.0 / math.sqrt(2.0), hidden.dtype)))
            hidden = g.op("Mul", g.op("Mul", hidden, half), g.op("Add", erf, g.constant(1.0, hidden.dtype)))
        else:
            hidden = g.op("Relu", hidden)
        return _linear(g, hidden, ffn_weight_2, ffn_bias_2)

    x = src
    if norm_first:
        x = g.op("Add", x, self_attention(norm(x, norm_weight_1, norm_bias_1)))
        return g.op("Add", x, feed_forward(norm(x, norm_weight_2, norm_bias_2)))
    x = norm(g.op("Add", x, self_attention(x)), norm_weight_1, norm_bias_1)
    return norm(g.op("Add", x, feed_forward(x)), norm_weight_2, norm_bias_2)


# ---------------------------------------------------------------------------------------------
# Opset 17: layer normalisation as ONNX LayerNormalization.


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


@symbolic("aten::layer_norm", since=17)
@sh.parse_args("v", "is", "v", "v", "f", "none")
def layer_norm_17(g, input, normalized_shape, weight, bias, eps, cudnn_enable=None):
    """layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool cudnn_enable=True) -> Tensor"""
    out = layer_normalization(g, input, normalized_shape, weight, bias, eps)
    if out is None:
        return layer_norm_decomposed(g, input, _norm_axes(input, normalized_shape), weight, bias, eps)
    return out


# ---------------------------------------------------------------------------------------------
# Opset 23: RMS normalisation as ONNX RMSNormalization, scaled dot-product attention as ONNX
# Attention (4-D query/key/value; boolean masks keep True = attend, as torch).


@symbolic("aten::rms_norm", since=23)
@sh.parse_args("v", "is", "v", "none")
def rms_norm_23(g, input, normalized_shape, weight=None, eps=None):
    """rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, float? eps=None) -> Tensor"""
    if not runtime_supports(g, "RMSNormalization", input.dtype):
        return rms_norm(g, input, normalized_shape, weight, eps)
    if sh.is_none(weight):
        weight = g.constant(torch.ones(normalized_shape, dtype=input.dtype), input.dtype)
    return g.op("RMSNormalization", input, onnx_ops.cast(g, weight, input.dtype),
                axis_i=-len(normalized_shape), epsilon_f=rms_eps(eps, input.dtype))


@symbolic("aten::scaled_dot_product_attention", since=23)
@sh.parse_args("v", "v", "v", "v", "f", "b", "none", "none")
def scaled_dot_product_attention_23(g, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0.0, bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor"""
    native = (all(sh.rank(v) == 4 for v in (query, key, value)) and query.dtype in (torch.float32, torch.float16)
              and not (dropout_p and g.training) and not (is_causal and not sh.is_none(attn_mask)))
    if not native:
        return scaled_dot_product_attention(g, query, key, value, attn_mask, dropout_p, is_causal, scale,
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
