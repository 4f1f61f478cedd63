"""scaled_dot_product_attention and nn.MultiheadAttention (eval) against eager PyTorch."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.optable import Case, below_min_params, params, run_below_min, run_case

SDPA = F.scaled_dot_product_attention
ATTENTION_OPSETS = (14, 23)  # legacy lowering at 14; native Attention at 23
# Masks, causal and grouped-query attention need Where/Expand (opsets 8-9): min_opset=9.


def qkv(b=2, h=3, lq=4, lk=5, e=8, ev=None, hk=None):
    return lambda: (torch.randn(b, h, lq, e), torch.randn(b, hk or h, lk, e), torch.randn(b, hk or h, lk, ev or e))


def with_mask(mask_shape, dtype=torch.float32, **sizes):
    def inputs():
        mask = torch.rand(mask_shape) > 0.3 if dtype == torch.bool else torch.randn(mask_shape)
        if dtype == torch.bool:
            mask[..., 0] = True  # no fully masked row (the cases below have them)
        return (*qkv(**sizes)(), mask)
    return inputs


def with_empty_rows(mask_shape, dtype=torch.float32, **sizes):
    """with_mask's inputs, but row 1 (and, for a 4-D mask, batch 1 entirely) attends to nothing:
    torch's sdpa gives 0 there, where a plain softmax gives NaN."""
    def inputs():
        *attention_inputs, mask = with_mask(mask_shape, dtype, **sizes)()
        blocked = False if dtype == torch.bool else float("-inf")
        mask[..., 1, :] = blocked
        if mask.dim() == 4:
            mask[1] = blocked
        return (*attention_inputs, mask)
    return inputs


def seeded(module: nn.Module) -> nn.Module:
    torch.manual_seed(3)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape) * 0.3)
    return module.eval()


class MHA(nn.Module):
    def __init__(self, *args, self_attention=False, call=None, **kwargs):
        super().__init__()
        self.mha = seeded(nn.MultiheadAttention(*args, **kwargs))
        self.self_attention = self_attention
        self.call = call or {}

    def forward(self, q, k=None, v=None, *masks):
        if self.self_attention:
            k = v = q
        names = self.call.get("masks", ())
        out = self.mha(q, k, v, **dict(zip(names, masks)), **self.call.get("kwargs", {}))
        return out


def seq_first(l=4, s=5, b=2, e=8, kdim=None, vdim=None):
    return lambda: (torch.randn(l, b, e), torch.randn(s, b, kdim or e), torch.randn(s, b, vdim or e))


def dynamic(names):
    return {"input_names": names[0], "dynamic_axes": names[1]}


SDPA_DYNAMIC = dynamic((["q", "k", "v"], {"q": {0: "b", 2: "l"}, "k": {0: "b", 2: "s"}, "v": {0: "b", 2: "s"}}))

CASES = [
    Case("sdpa", SDPA, qkv(), opsets=ATTENTION_OPSETS),
    Case("sdpa_value_dim", SDPA, qkv(ev=6), opsets=ATTENTION_OPSETS),
    Case("sdpa_3d", SDPA, lambda: (torch.randn(2, 4, 8), torch.randn(2, 5, 8), torch.randn(2, 5, 8)),
         opsets=ATTENTION_OPSETS),
    Case("sdpa_scale", lambda q, k, v: SDPA(q, k, v, scale=0.3), qkv(), opsets=ATTENTION_OPSETS),
    Case("sdpa_causal", lambda q, k, v: SDPA(q, k, v, is_causal=True), qkv(lq=5, lk=5), min_opset=9, opsets=ATTENTION_OPSETS),
    Case("sdpa_causal_rectangular", lambda q, k, v: SDPA(q, k, v, is_causal=True), qkv(lq=3, lk=6),
         min_opset=9, opsets=ATTENTION_OPSETS),
    Case("sdpa_bool_mask", lambda q, k, v, m: SDPA(q, k, v, attn_mask=m), with_mask((2, 3, 4, 5), torch.bool),
         min_opset=9, opsets=ATTENTION_OPSETS),
    Case("sdpa_bool_mask_broadcast", lambda q, k, v, m: SDPA(q, k, v, attn_mask=m),
         with_mask((4, 5), torch.bool), min_opset=9, opsets=ATTENTION_OPSETS),
    Case("sdpa_bool_mask_heads_broadcast", lambda q, k, v, m: SDPA(q, k, v, attn_mask=m),
         with_mask((2, 1, 1, 5), torch.bool), min_opset=9, opsets=ATTENTION_OPSETS),
    Case("sdpa_float_mask", lambda q, k, v, m: SDPA(q, k, v, attn_mask=m), with_mask((2, 3, 4, 5)),
         opsets=ATTENTION_OPSETS),
    Case("sdpa_float_mask_broadcast", lambda q, k, v, m: SDPA(q, k, v, attn_mask=m), with_mask((1, 4, 5)),
         opsets=ATTENTION_OPSETS),
    Case("sdpa_bool_mask_empty_rows", lambda q, k, v, m: SDPA(q, k, v, attn_mask=m),
         with_empty_rows((2, 1, 4, 5), torch.bool), min_opset=9, opsets=ATTENTION_OPSETS),
    Case("sdpa_float_mask_empty_rows", lambda q, k, v, m: SDPA(q, k, v, attn_mask=m),
         with_empty_rows((2, 3, 4, 5)), min_opset=9, opsets=ATTENTION_OPSETS),
    Case("sdpa_float_mask_empty_rows_2d", lambda q, k, v, m: SDPA(q, k, v, attn_mask=m),
         with_empty_rows((4, 5)), min_opset=9, opsets=ATTENTION_OPSETS),
    Case("sdpa_bool_mask_empty_rows_dynamic", lambda q, k, v, m: SDPA(q, k, v, attn_mask=m),
         with_empty_rows((2, 1, 4, 5), torch.bool), min_opset=9, opsets=ATTENTION_OPSETS,
         export_options=dynamic((["q", "k", "v", "m"], {"q": {0: "b", 2: "l"}, "k": {0: "b", 2: "s"},
                                                         "v": {0: "b", 2: "s"}, "m": {0: "b", 2: "l", 3: "s"}})),
         other_inputs=lambda: [with_empty_rows((3, 1, 6, 7), torch.bool, b=3, lq=6, lk=7)()]),
    Case("sdpa_gqa", lambda q, k, v: SDPA(q, k, v, enable_gqa=True), qkv(h=6, hk=2), min_opset=9, opsets=ATTENTION_OPSETS),
    Case("sdpa_gqa_causal_scale", lambda q, k, v: SDPA(q, k, v, is_causal=True, scale=0.5, enable_gqa=True),
         qkv(h=4, hk=2, lq=5, lk=5), min_opset=9, opsets=ATTENTION_OPSETS),
    Case("sdpa_dropout_eval", lambda q, k, v: SDPA(q, k, v, dropout_p=0.0), qkv(), opsets=ATTENTION_OPSETS),
    Case("sdpa_float64", SDPA, lambda: tuple(t.double() for t in qkv()()), opsets=ATTENTION_OPSETS),
    Case("sdpa_dynamic", SDPA, qkv(), opsets=ATTENTION_OPSETS, export_options=SDPA_DYNAMIC,
         other_inputs=lambda: [qkv(b=3, lq=2, lk=7)()]),
    Case("sdpa_causal_dynamic", lambda q, k, v: SDPA(q, k, v, is_causal=True), qkv(lq=5, lk=5),
         min_opset=11, opsets=ATTENTION_OPSETS, export_options=SDPA_DYNAMIC, other_inputs=lambda: [qkv(b=1, lq=7, lk=7)()]),
    # nn.MultiheadAttention (eval)
    Case("mha_self", MHA(8, 2, self_attention=True), lambda: (torch.randn(4, 2, 8),), opsets=ATTENTION_OPSETS),
    Case("mha_cross", MHA(8, 2), seq_first(), opsets=ATTENTION_OPSETS),
    Case("mha_no_weights", MHA(8, 2, call={"kwargs": {"need_weights": False}}), seq_first(),
         opsets=ATTENTION_OPSETS),
    Case("mha_per_head_weights", MHA(8, 2, call={"kwargs": {"average_attn_weights": False}}), seq_first(),
         opsets=ATTENTION_OPSETS),
    Case("mha_kdim_vdim", MHA(8, 2, kdim=6, vdim=5), seq_first(kdim=6, vdim=5), opsets=ATTENTION_OPSETS),
    Case("mha_batch_first", MHA(8, 4, batch_first=True),
         lambda: (torch.randn(2, 4, 8), torch.randn(2, 5, 8), torch.randn(2, 5, 8)), opsets=ATTENTION_OPSETS),
    Case("mha_no_bias", MHA(8, 2, bias=False), seq_first(), opsets=ATTENTION_OPSETS),
    Case("mha_bias_kv_zero_attn", MHA(8, 2, add_bias_kv=True, add_zero_attn=True), seq_first(),
         opsets=ATTENTION_OPSETS),
    Case("mha_key_padding_bool", MHA(8, 2, call={"masks": ("key_padding_mask",)}),
         lambda: (*seq_first()(), torch.tensor([[False, False, True, False, True], [False] * 4 + [True]])),
         min_opset=9, opsets=ATTENTION_OPSETS),
    Case("mha_key_padding_float", MHA(8, 2, call={"masks": ("key_padding_mask",)}),
         lambda: (*seq_first()(), torch.randn(2, 5)), min_opset=9, opsets=ATTENTION_OPSETS),
    Case("mha_attn_mask_2d_bool", MHA(8, 2, call={"masks": ("attn_mask",)}),
         lambda: (*seq_first()(), torch.triu(torch.ones(4, 5, dtype=torch.bool), diagonal=2)),
         min_opset=9, opsets=ATTENTION_OPSETS),
    Case("mha_attn_mask_3d_float", MHA(8, 2, call={"masks": ("attn_mask",)}),
         lambda: (*seq_first()(), torch.randn(4, 4, 5)), opsets=ATTENTION_OPSETS),
    Case("mha_both_masks", MHA(8, 2, call={"masks": ("key_padding_mask", "attn_mask")}),
         lambda: (*seq_first()(), torch.tensor([[False] * 4 + [True], [False] * 5]), torch.randn(4, 5)),
         min_opset=9, opsets=ATTENTION_OPSETS),
    Case("mha_self_dynamic", MHA(8, 2, self_attention=True), lambda: (torch.randn(4, 2, 8),),
         opsets=ATTENTION_OPSETS, export_options=dynamic((["q"], {"q": {0: "l", 1: "b"}})),
         other_inputs=lambda: [(torch.randn(6, 3, 8),)]),
    Case("mha_batch_first_dynamic", MHA(8, 2, batch_first=True, call={"kwargs": {"need_weights": False}}),
         lambda: (torch.randn(2, 4, 8), torch.randn(2, 5, 8), torch.randn(2, 5, 8)), opsets=ATTENTION_OPSETS,
         export_options=dynamic((["q", "k", "v"], {"q": {0: "b", 1: "l"}, "k": {0: "b", 1: "s"},
                                                    "v": {0: "b", 1: "s"}})),
         other_inputs=lambda: [(torch.randn(3, 2, 8), torch.randn(3, 7, 8), torch.randn(3, 7, 8))]),
]


@pytest.mark.parametrize("case, opset", params(CASES))
def test_attention(case, opset):
    run_case(case, opset)


@pytest.mark.parametrize("case, opset", below_min_params([c for c in CASES if c.name == "sdpa_causal_dynamic"]))
def test_attention_below_min_opset(case, opset):
    run_below_min(case, opset)


class ConstantBias(nn.Module):
    """sdpa with a float mask known at export time (Swin's relative position bias is one)."""

    def __init__(self, bias):
        super().__init__()
        self.register_buffer("bias", bias)

    def forward(self, q, k, v):
        return SDPA(q, k, v, attn_mask=self.bias)


def _fully_masked_row(bias):
    bias[1, :] = float("-inf")
    return bias


# (name, bias, Where nodes the guard of empty rows adds)
CONSTANT_BIASES = [("no_empty_row", torch.randn(4, 5), 0), ("an_empty_row", _fully_masked_row(torch.randn(4, 5)), 1)]


@pytest.mark.parametrize("name, bias, guards", CONSTANT_BIASES, ids=[c[0] for c in CONSTANT_BIASES])
def test_a_constant_mask_without_empty_rows_needs_no_guard(name, bias, guards):
    import io

    import numpy as np
    import onnx
    import onnxruntime as ort

    import torchscript_onnx as tso

    model, inputs = ConstantBias(bias).eval(), qkv()()
    buffer = io.BytesIO()
    tso.export(model, inputs, buffer, opset_version=17, input_names=["q", "k", "v"])
    assert sum(n.op_type == "Where" for n in onnx.load_from_string(buffer.getvalue()).graph.node) == guards
    session = ort.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
    got = session.run(None, dict(zip(["q", "k", "v"], (t.numpy() for t in inputs))))[0]
    np.testing.assert_allclose(got, model(*inputs).numpy(), rtol=1e-5, atol=1e-6)
