"""Transformer models end to end, and the ops they are made of.

Every model of ``bench/transformers_zoo.py`` (built from ``transformers`` config classes or
``torch.nn`` with random weights, nothing downloaded) is exported with dynamic batch and sequence
at its lowest opset, at 17 (LayerNormalization) and at 26 (Attention, RMSNormalization), then run
in onnxruntime at the traced size and two other sizes against eager PyTorch (rtol = atol = 1e-4).
The op table checks each building block alone, with dynamic sizes where they matter.
"""

from __future__ import annotations

import os

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.optable import Case, params, run_case
from torchscript_onnx import MAX_OPSET
from torchscript_onnx.verify import verify

os.environ["HF_HUB_OFFLINE"] = "1"

# The zoo imports transformers only when a model is built (transformers is in the test extra).
from bench.transformers_zoo import OTHER_SIZES, TRACED, ZOO  # noqa: E402

MODEL_OPSETS = {name: sorted({entry.min_opset, 17, MAX_OPSET}) for name, entry in ZOO.items()}
MAX_ABS_DIFF: dict[str, float] = {}


@pytest.mark.parametrize("name, opset", [pytest.param(n, o, id=f"{n}-opset{o}")
                                         for n, opsets in MODEL_OPSETS.items() for o in opsets])
def test_model_with_dynamic_batch_and_sequence(name, opset):
    entry = ZOO[name]
    model = entry.model()
    torch.manual_seed(1)
    args = entry.inputs(*TRACED)
    others = [entry.inputs(*size) for size in OTHER_SIZES]
    report = verify(model, args, opset_version=opset, rtol=1e-4, atol=1e-4, other_inputs=others,
                    input_names=entry.input_names, output_names=entry.output_names, dynamic_axes=entry.dynamic_axes)
    assert len(report.comparisons) == len(entry.output_names) * (1 + len(OTHER_SIZES))
    MAX_ABS_DIFF[f"{name}-opset{opset}"] = report.max_abs_diff


def test_model_below_its_lowest_opset_is_a_clear_error():
    import io

    from torchscript_onnx import export

    entry = ZOO["nn_transformer_encoder"]
    with pytest.raises(Exception, match="opset 14"):
        export(entry.model(), entry.inputs(*TRACED), io.BytesIO(), opset_version=13, input_names=entry.input_names,
               output_names=entry.output_names, dynamic_axes=entry.dynamic_axes)


# ---------------------------------------------------------------------------------------------
# The building blocks


def _seq_axes(*names, axes=(0, 1)):
    return {"input_names": list(names), "dynamic_axes": {n: list(axes) for n in names}}


def _qkv(b=2, h=4, l=5, s=5, e=8, hk=None):
    return torch.randn(b, h, l, e), torch.randn(b, hk or h, s, e), torch.randn(b, hk or h, s, e)


def _qkv_other():
    return [_qkv(3, 4, 7, 7, 8)]


def _mask_bool(b, l, s):
    mask = torch.rand(b, 1, l, s) > 0.3
    mask[..., 0] = True  # every query attends to something (torch gives NaN for empty rows)
    return mask


class MHA(nn.Module):
    def __init__(self, batch_first, need_weights, kdim=None):
        super().__init__()
        self.attn = nn.MultiheadAttention(16, 4, batch_first=batch_first, kdim=kdim, vdim=kdim)
        self.need_weights = need_weights

    def forward(self, x, padding):
        out, weights = self.attn(x, x, x, key_padding_mask=padding, need_weights=self.need_weights)
        return (out, weights) if self.need_weights else out


def _mha_inputs(b=2, s=5, batch_first=True):
    x = torch.randn(b, s, 16) if batch_first else torch.randn(s, b, 16)
    padding = torch.zeros(b, s, dtype=torch.bool)
    padding[0, -1] = True
    return x, padding


def _rotary(x, cos, sin):
    """Llama's rotate_half pattern: cat of the negated second half and the first half."""
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


def _rotary_inputs(b=2, s=5):
    position = torch.arange(s, dtype=torch.float32)[:, None] * torch.arange(1, 5, dtype=torch.float32)[None]
    emb = torch.cat((position, position), dim=-1)
    return torch.randn(b, 4, s, 8), emb.cos(), emb.sin()


class EncoderLayer(nn.Module):
    """nn.TransformerEncoderLayer in eval mode without grad: its fused fast path."""

    def __init__(self, norm_first, activation):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True, norm_first=norm_first,
                                                activation=activation)

    def forward(self, x, padding):
        return self.layer(x, src_key_padding_mask=padding)


CASES = [
    Case("layer_norm", nn.LayerNorm(8), lambda: (torch.randn(2, 5, 8),), opsets=(17,),
         export_options=_seq_axes("x"), other_inputs=lambda: [(torch.randn(3, 7, 8),)]),
    Case("layer_norm_2d_shape_no_affine", nn.LayerNorm((5, 8), elementwise_affine=False),
         lambda: (torch.randn(2, 5, 8),), opsets=(17,)),
    Case("layer_norm_no_bias", nn.LayerNorm(8, bias=False), lambda: (torch.randn(2, 5, 8),), opsets=(17,)),
    Case("layer_norm_float64", nn.LayerNorm(8).double(), lambda: (torch.randn(2, 5, 8, dtype=torch.float64),),
         opsets=(17,), atol=1e-9),
    Case("layer_norm_float16", nn.LayerNorm(8).half(), lambda: (torch.randn(2, 5, 8).half(),), opsets=(17,),
         atol=2e-3, rtol=2e-3),
    Case("native_layer_norm", lambda x: torch.native_layer_norm(x, [8], None, None, 1e-5),
         lambda: (torch.randn(2, 5, 8),)),
    Case("rms_norm", nn.RMSNorm(8), lambda: (torch.randn(2, 5, 8),), opsets=(23,),
         export_options=_seq_axes("x"), other_inputs=lambda: [(torch.randn(3, 7, 8),)]),
    Case("rms_norm_eps_no_weight", nn.RMSNorm((5, 8), eps=1e-3, elementwise_affine=False),
         lambda: (torch.randn(2, 5, 8),), opsets=(23,)),
    Case("sdpa", F.scaled_dot_product_attention, _qkv, opsets=(23,),
         export_options=_seq_axes("q", "k", "v", axes=(0, 2)), other_inputs=_qkv_other),
    Case("sdpa_cross_lengths", F.scaled_dot_product_attention, lambda: _qkv(l=3, s=6), opsets=(23,)),
    Case("sdpa_bool_mask", lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
         lambda: (*_qkv(), _mask_bool(2, 5, 5)), min_opset=9, opsets=(23,)),
    Case("sdpa_bool_mask_empty_row", lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
         lambda: (*_qkv(), _mask_bool(2, 5, 5).index_fill(2, torch.tensor([1]), False)), min_opset=9,
         opsets=(23,)),
    Case("sdpa_float_mask", lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
         lambda: (*_qkv(), torch.randn(2, 1, 5, 5)), opsets=(23,)),
    Case("sdpa_causal_dynamic", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
         _qkv, min_opset=11, opsets=(23,), export_options=_seq_axes("q", "k", "v", axes=(0, 2)),
         other_inputs=_qkv_other),
    Case("sdpa_causal_static", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
         lambda: _qkv(l=4, s=6), min_opset=9, opsets=(23,)),
    Case("sdpa_scale", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, scale=0.3), _qkv, opsets=(23,)),
    Case("sdpa_gqa", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
         lambda: _qkv(hk=2), min_opset=8, opsets=(23,), export_options=_seq_axes("q", "k", "v", axes=(0, 2)),
         other_inputs=lambda: [_qkv(3, 4, 6, 6, 8, hk=2)]),
    Case("sdpa_float16", F.scaled_dot_product_attention, lambda: tuple(t.half() for t in _qkv()), opsets=(23,),
         atol=2e-3, rtol=2e-3),
    Case("sdpa_3d", F.scaled_dot_product_attention, lambda: tuple(t[0] for t in _qkv()), opsets=(23,)),
    Case("mha_fast_path", MHA(True, False), _mha_inputs, min_opset=9, export_options=_seq_axes("x", "padding"),
         other_inputs=lambda: [_mha_inputs(3, 7)]),
    Case("mha_fast_path_weights", MHA(True, True), _mha_inputs, min_opset=9),
    Case("mha_seq_first", MHA(False, True), lambda: _mha_inputs(batch_first=False), min_opset=10,
         export_options={"input_names": ["x", "padding"], "dynamic_axes": {"x": [0, 1], "padding": [0, 1]}},
         other_inputs=lambda: [_mha_inputs(3, 7, batch_first=False)]),
    Case("encoder_layer_fast_path_relu", EncoderLayer(False, "relu"), _mha_inputs, min_opset=9,
         export_options=_seq_axes("x", "padding"), other_inputs=lambda: [_mha_inputs(3, 7)]),
    Case("encoder_layer_fast_path_gelu_norm_first", EncoderLayer(True, "gelu"), _mha_inputs, min_opset=9),
    Case("rotary_embedding", _rotary, _rotary_inputs, min_opset=10,
         export_options={"input_names": ["x", "cos", "sin"],
                         "dynamic_axes": {"x": [0, 2], "cos": [0], "sin": [0]}},
         other_inputs=lambda: [_rotary_inputs(3, 9)]),
    Case("diff", lambda x: torch.diff(x, prepend=x[:, :1] - 1, dim=-1), lambda: (torch.randint(0, 9, (2, 6)),),
         export_options=_seq_axes("x"), other_inputs=lambda: [(torch.randint(0, 9, (3, 8)),)]),
    Case("diff_n2_append_float", lambda x, y: torch.diff(x, n=2, dim=0, append=y),
         lambda: (torch.randn(4, 3), torch.randn(2, 3))),
    Case("diff_bool", lambda x: torch.diff(x), lambda: (torch.rand(3, 6) > 0.5,)),
    Case("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), lambda: (torch.randn(3, 8),), opsets=(20,)),
    Case("causal_mask_from_sizes", lambda x: x.masked_fill(
        torch.ones(x.size(1), x.size(1), dtype=torch.bool).triu(1), float("-inf")).softmax(-1),
         lambda: (torch.randn(2, 5, 5),), min_opset=14, export_options=_seq_axes("x", axes=(0, 1, 2)),
         other_inputs=lambda: [(torch.randn(3, 7, 7),)]),
    Case("padding_mask_cumsum_positions", lambda ids, m: (m.cumsum(-1) * m + 1) * ids.ne(0).long(),
         lambda: (torch.randint(0, 9, (2, 6)), torch.ones(2, 6, dtype=torch.long)), min_opset=11,
         export_options=_seq_axes("ids", "m"),
         other_inputs=lambda: [(torch.randint(0, 9, (3, 4)), torch.ones(3, 4, dtype=torch.long))]),
    Case("promotion_int_float_bool", lambda ids, m, x: (x * m + ids) / 2 + (m > 0) * 0.5 + (ids + 1.5),
         lambda: (torch.randint(0, 9, (2, 6)), torch.ones(2, 6, dtype=torch.long), torch.randn(2, 6))),
    Case("promotion_scalar_keeps_tensor_dtype", lambda x, i: (x * 3, i * 2.5, i // 2, x.float() + 1, (i > 2) + 1),
         lambda: (torch.randn(2, 3, dtype=torch.float64), torch.randint(0, 9, (2, 3), dtype=torch.int32))),
]


@pytest.mark.parametrize("case, opset", params(CASES))
def test_transformer_op(case, opset):
    run_case(case, opset)


# ---------------------------------------------------------------------------------------------
# Inputs the legacy ways: a trailing dict or kwargs=, for keyword-only and decorated forwards


class KeywordOnly(nn.Module):
    def forward(self, x, *, mask=None, scale=2.0):
        y = x * scale
        return y if mask is None else y.masked_fill(mask, 0.0)


def _sets_flag(forward):
    """Like transformers' decorators: the wrapper fills a parameter itself."""
    import functools

    @functools.wraps(forward)
    def wrapper(self, *args, **kwargs):
        kwargs.setdefault("flag", True)
        return forward(self, *args, **kwargs)

    return wrapper


class ManyOptional(nn.Module):
    @_sets_flag
    def forward(self, a, b=None, c=None, d=None, flag=None, e=None):
        out = a if b is None else a + b
        return out * c if flag and c is not None else out


def _x(b=2, s=5):
    return torch.randn(b, s)


@pytest.mark.parametrize("how", ["kwargs", "trailing-dict"])
def test_keyword_only_parameters_by_keyword(how):
    x, mask = _x(), _x() > 0
    named = {"mask": mask, "scale": 3.0}
    args, kwargs = ((x,), named) if how == "kwargs" else ((x, named), None)
    report = verify(KeywordOnly(), args, kwargs=kwargs, opset_version=17, input_names=["x", "mask"],
                    dynamic_axes={"x": [0, 1], "mask": [0, 1]},
                    other_inputs=[(_x(3, 7), {"mask": _x(3, 7) > 0, "scale": 3.0})])
    assert report.max_abs_diff == 0.0


def test_decorated_forward_gets_no_positional_defaults():
    a, c = _x(), _x()
    report = verify(ManyOptional(), (a, {"c": c}), opset_version=17, input_names=["a", "c"],
                    dynamic_axes={"a": [0], "c": [0]}, other_inputs=[(_x(4), {"c": _x(4)})])
    assert report.max_abs_diff == 0.0
