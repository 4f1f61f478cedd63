"""Opset 23's LLM ops where the model's pattern means them exactly (optimize/llm_ops.py).

Each case is a hand-written pattern as transformers (or a near miss of it) writes it, exported
with dynamic batch and sequence: at opset 23 and 26 the expected ops appear (a near miss keeps
its decomposition), at 22 none of the opset-23 ops does, and at every opset onnxruntime's outputs
match eager PyTorch at the traced size and at two other sizes. The tiny Llama, Qwen2 and Mistral
models (from their config classes, random weights) check whole decoders the same way.
"""

from __future__ import annotations

import dataclasses
import io
import os
from collections import Counter
from collections.abc import Callable

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from torchscript_onnx import export
from torchscript_onnx.pipeline.optimize import passes

os.environ.setdefault("HF_HUB_OFFLINE", "1")

NEW_OPS = ("RMSNormalization", "RotaryEmbedding", "Attention")
TRACED = (2, 6)  # (batch, sequence) of the export
OTHER_SIZES = ((1, 3), (3, 11))
HEADS, KV_HEADS, HEAD_DIM = 4, 2, 8


@dataclasses.dataclass
class Pattern:
    name: str
    build: Callable[[], nn.Module]
    inputs: Callable[[int, int], tuple]  # (batch, sequence) -> inputs
    input_names: list[str]
    axes: dict  # input name -> {axis: dim name}
    expect: dict  # op type -> count at opset >= 23 (0: the pattern must not be replaced)
    tol: float = 1e-4


class Fn(nn.Module):
    def __init__(self, fn, **params):
        super().__init__()
        self.fn = fn
        for name, value in params.items():
            setattr(self, name, nn.Parameter(value))

    def forward(self, *args):
        return self.fn(self, *args)


def _weight(*shape):
    torch.manual_seed(3)
    return 1 + 0.1 * torch.randn(*shape)


# ---------------------------------------------------------------------------------------------
# RMS norms


def _llama_rms_norm(dtype=torch.float32):
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    norm = LlamaRMSNorm(16, eps=1e-6)
    with torch.no_grad():
        norm.weight.copy_(_weight(16))
    return norm.to(dtype)


def _hidden(dtype=torch.float32, width=16):
    return lambda b, s: (torch.randn(b, s, width).to(dtype),)


SEQ_AXES = {"x": {0: "batch", 1: "sequence"}}


def _rms(body, **params):
    return lambda: Fn(body, **params)


RMS_CASES = [
    Pattern("llama_rms_norm", _llama_rms_norm, _hidden(), ["x"], SEQ_AXES, {"RMSNormalization": 1}),
    Pattern("rms_norm_float16", lambda: _llama_rms_norm(torch.float16), _hidden(torch.float16), ["x"], SEQ_AXES,
            {"RMSNormalization": 1, "Cast": 0}, tol=1e-2),
    # onnxruntime has no bfloat16 RMSNormalization on the CPU: a float32 one between the casts
    Pattern("rms_norm_bfloat16_weightless",
            _rms(lambda m, x: (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5))
                 .to(x.dtype).float()),  # a float32 output: numpy has no bfloat16
            lambda b, s: (torch.randn(b, s, 16).to(torch.bfloat16),), ["x"], SEQ_AXES,
            {"RMSNormalization": 1, "Cast": 3}, tol=2e-2),
    Pattern("no_weight", _rms(lambda m, x: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)),
            _hidden(), ["x"], SEQ_AXES, {"RMSNormalization": 1}),
    Pattern("div_by_sqrt_of_x_times_x",
            _rms(lambda m, x: m.w * (x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-6)), w=_weight(16)),
            _hidden(), ["x"], SEQ_AXES, {"RMSNormalization": 1, "Mul": 0}),
    Pattern("float16_input_float32_result",
            _rms(lambda m, x: m.w * (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6)),
                 w=_weight(16)),
            _hidden(torch.float16), ["x"], SEQ_AXES, {"RMSNormalization": 1, "Cast": 1}, tol=1e-3),
    Pattern("two_trailing_axes",
            _rms(lambda m, x: x * torch.rsqrt(x.pow(2).mean((-2, -1), keepdim=True) + 1e-6) * m.w, w=_weight(4, 16)),
            lambda b, s: (torch.randn(b, s, 4, 16),), ["x"], SEQ_AXES, {"RMSNormalization": 1, "Mul": 0}),
    # near misses: each computes something else than RMSNormalization
    Pattern("eps_after_sqrt", _rms(lambda m, x: x / (torch.sqrt(x.pow(2).mean(-1, keepdim=True)) + 1e-6)),
            _hidden(), ["x"], SEQ_AXES, {"RMSNormalization": 0}),
    Pattern("eps_inside_square",
            _rms(lambda m, x: x * torch.rsqrt((x + 1e-3).pow(2).mean(-1, keepdim=True) + 1e-6)),
            _hidden(), ["x"], SEQ_AXES, {"RMSNormalization": 0}),
    Pattern("mean_without_keepdim",
            _rms(lambda m, x: x * torch.rsqrt(x.pow(2).mean(-1) + 1e-6).unsqueeze(-1)),
            _hidden(), ["x"], SEQ_AXES, {"RMSNormalization": 0}),
    Pattern("mean_over_sequence",
            _rms(lambda m, x: x * torch.rsqrt(x.pow(2).mean(1, keepdim=True) + 1e-6)),
            _hidden(), ["x"], SEQ_AXES, {"RMSNormalization": 0}),
    Pattern("mean_of_absolute_values",
            _rms(lambda m, x: x * torch.rsqrt(x.abs().mean(-1, keepdim=True) + 1e-6)),
            _hidden(), ["x"], SEQ_AXES, {"RMSNormalization": 0}),
    Pattern("weight_per_position",
            _rms(lambda m, x: m.w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)), w=_weight(6, 16)),
            lambda b, s: (torch.randn(b, 6, 16),), ["x"], {"x": {0: "batch"}},
            {"RMSNormalization": 1, "Mul": 1}),  # the weight cannot be RMSNormalization's scale: kept apart
]


# ---------------------------------------------------------------------------------------------
# Rotary embeddings


def _rotary_config():
    from transformers import LlamaConfig

    return LlamaConfig(hidden_size=HEADS * HEAD_DIM, num_attention_heads=HEADS, num_key_value_heads=KV_HEADS,
                       max_position_embeddings=64, rope_theta=100.0)


def _rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def _rotate_back(x):  # the opposite rotation
    half = x.shape[-1] // 2
    return torch.cat((x[..., half:], -x[..., :half]), dim=-1)


def _rotate_every_two(x):  # GPT-J's interleaved pairs
    return torch.stack((-x[..., 1::2], x[..., ::2]), dim=-1).flatten(-2)


class Rotary(nn.Module):
    """transformers' LlamaRotaryEmbedding and apply_rotary_pos_emb, or variants of them."""

    def __init__(self, rotate=None, doubled=True):
        super().__init__()
        from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

        self.rope = LlamaRotaryEmbedding(_rotary_config())
        self.rotate, self.doubled = rotate, doubled

    def forward(self, q, k, position_ids):
        if self.rotate is None and self.doubled:
            from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

            cos, sin = self.rope(q, position_ids)
            return apply_rotary_pos_emb(q, k, cos, sin)
        freqs = position_ids[:, :, None].float() * self.rope.inv_freq[None, None, :]
        emb = torch.cat((freqs, freqs if self.doubled else 2 * freqs), dim=-1)
        cos, sin = emb.cos()[:, None], emb.sin()[:, None]
        rotate = self.rotate or _rotate_half
        return q * cos + rotate(q) * sin, k * cos + rotate(k) * sin


class CachedRotary(nn.Module):
    """Older transformers: cos/sin tables computed once, indexed by the position ids."""

    def __init__(self):
        super().__init__()
        inv_freq = 1.0 / (100.0 ** (torch.arange(0, HEAD_DIM, 2).float() / HEAD_DIM))
        freqs = torch.outer(torch.arange(64).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos(), persistent=False)
        self.register_buffer("sin_cached", emb.sin(), persistent=False)

    def forward(self, q, position_ids):
        cos, sin = self.cos_cached[position_ids].unsqueeze(1), self.sin_cached[position_ids].unsqueeze(1)
        return q * cos + _rotate_half(q) * sin


def _qk_positions(shared_positions=False):
    def make(b, s):
        q, k = torch.randn(b, HEADS, s, HEAD_DIM), torch.randn(b, KV_HEADS, s, HEAD_DIM)
        start = torch.arange(b)[:, None] * 3  # another offset per row
        positions = torch.arange(s)[None] if shared_positions else start + torch.arange(s)[None]
        return q, k, positions
    return make


QK_AXES = {"q": {0: "batch", 2: "sequence"}, "k": {0: "batch", 2: "sequence"},
           "position_ids": {0: "batch", 1: "sequence"}}
SHARED_AXES = {**QK_AXES, "position_ids": {1: "sequence"}}
QK = ["q", "k", "position_ids"]

ROTARY_CASES = [
    Pattern("llama_rotary", Rotary, _qk_positions(), QK, QK_AXES, {"RotaryEmbedding": 2, "Neg": 0, "Expand": 0}),
    # position ids of batch 1 (transformers' default): the caches are expanded to the batch, once
    Pattern("llama_rotary_shared_positions", Rotary, _qk_positions(True), QK, SHARED_AXES,
            {"RotaryEmbedding": 2, "Neg": 0, "Expand": 2}),
    Pattern("llama_rotary_float16", lambda: Rotary().half(),
            lambda b, s: tuple(t.half() if t.is_floating_point() else t for t in _qk_positions()(b, s)), QK, QK_AXES,
            {"RotaryEmbedding": 2, "Neg": 0}, tol=1e-2),
    Pattern("cached_tables", CachedRotary, lambda b, s: _qk_positions()(b, s)[::2], ["q", "position_ids"],
            {"q": QK_AXES["q"], "position_ids": QK_AXES["position_ids"]}, {"RotaryEmbedding": 1}),
    # near misses
    Pattern("opposite_rotation", lambda: Rotary(_rotate_back), _qk_positions(), QK, QK_AXES, {"RotaryEmbedding": 0}),
    Pattern("unequal_halves", lambda: Rotary(doubled=False), _qk_positions(), QK, QK_AXES, {"RotaryEmbedding": 0}),
    Pattern("interleaved_pairs", lambda: Rotary(_rotate_every_two), _qk_positions(), QK, QK_AXES,
            {"RotaryEmbedding": 0}),
]


# ---------------------------------------------------------------------------------------------
# Grouped key/value heads


def _repeat_kv(x, n_rep):
    from transformers.models.llama.modeling_llama import repeat_kv

    return repeat_kv(x, n_rep)


def _tile_heads(x, n_rep):  # heads in the order h0, h1, h0, h1: not what Attention's groups mean
    b, h, s, d = x.shape
    return x[:, None].expand(b, n_rep, h, s, d).reshape(b, h * n_rep, s, d)


def _attention(repeat):
    def body(m, q, k, v):
        n_rep = q.shape[1] // k.shape[1]
        return F.scaled_dot_product_attention(q, repeat(k, n_rep), repeat(v, n_rep), is_causal=True)
    return lambda: Fn(body)


def _qkv(b, s):
    return (torch.randn(b, HEADS, s, HEAD_DIM), torch.randn(b, KV_HEADS, s, HEAD_DIM),
            torch.randn(b, KV_HEADS, s, HEAD_DIM))


QKV_AXES = {n: {0: "batch", 2: "sequence"} for n in "qkv"}

GQA_CASES = [
    Pattern("repeat_kv", _attention(_repeat_kv), _qkv, list("qkv"), QKV_AXES, {"Attention": 1, "Expand": 0}),
    Pattern("heads_tiled", _attention(_tile_heads), _qkv, list("qkv"), QKV_AXES, {"Attention": 1, "Expand": 2}),
]

CASES = RMS_CASES + ROTARY_CASES + GQA_CASES


def _export(case: Pattern, opset: int):
    torch.manual_seed(0)
    model = case.build().eval()
    args = case.inputs(*TRACED)
    f = io.BytesIO()
    export(model, args, f, opset_version=opset, input_names=case.input_names,
           dynamic_axes={n: case.axes[n] for n in case.input_names if n in case.axes})
    return model, f.getvalue()


def _check_against_eager(model, data: bytes, case: Pattern) -> None:
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    for size in (TRACED, *OTHER_SIZES):
        torch.manual_seed(sum(size))
        args = case.inputs(*size)
        with torch.no_grad():
            expected = model(*args)
        expected = expected if isinstance(expected, tuple) else (expected,)
        feeds = {name: (a.float() if a.dtype == torch.bfloat16 else a).numpy()
                 for name, a in zip(case.input_names, args)}
        if any(a.dtype == torch.bfloat16 for a in args):
            feeds = _bfloat16_feeds(feeds)
        outputs = session.run(None, feeds)
        assert len(outputs) == len(expected)
        for got, want in zip(outputs, expected):
            want = want.numpy()
            assert got.shape == want.shape, (case.name, size)
            np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=case.tol,
                                       atol=case.tol, err_msg=f"{case.name} at (batch, sequence) = {size}")


def _bfloat16_feeds(feeds):
    """onnxruntime takes bfloat16 inputs as OrtValues; numpy has no bfloat16."""
    values = {}
    for name, array in feeds.items():
        bits = torch.from_numpy(array).to(torch.bfloat16).view(torch.int16).numpy()
        values[name] = ort.OrtValue.ortvalue_from_numpy_with_onnx_type(bits, onnx.TensorProto.BFLOAT16)
    return values


def _op_counts(data: bytes) -> Counter:
    return Counter(node.op_type for node in onnx.load_from_string(data).graph.node)


@pytest.mark.parametrize("opset", [22, 23, 26])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_pattern(case, opset):
    model, data = _export(case, opset)
    counts = _op_counts(data)
    if opset < 23:
        assert not any(counts[op] for op in NEW_OPS), counts
    else:
        assert {op: counts[op] for op in case.expect} == case.expect, counts
    _check_against_eager(model, data, case)


# ---------------------------------------------------------------------------------------------
# Whole decoders


def _decoder(kind: str):
    import transformers

    config_class = {"llama": transformers.LlamaConfig, "qwen2": transformers.Qwen2Config,
                    "mistral": transformers.MistralConfig}[kind]
    model_class = {"llama": transformers.LlamaModel, "qwen2": transformers.Qwen2Model,
                   "mistral": transformers.MistralModel}[kind]
    config = config_class(vocab_size=128, hidden_size=HEADS * HEAD_DIM, intermediate_size=64, num_hidden_layers=2,
                          num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, max_position_embeddings=64,
                          use_cache=False)
    torch.manual_seed(0)
    return model_class(config).eval()


def _tokens(b, s):
    mask = torch.ones(b, s, dtype=torch.long)
    if s > 2:
        mask[0, s - 2:] = 0  # padding at the end of the first row
    return torch.randint(1, 128, (b, s)), mask


@pytest.mark.parametrize("kind", ["llama", "qwen2", "mistral"])
def test_decoder(kind):
    model = _decoder(kind)
    names = ["input_ids", "attention_mask"]
    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    case = Pattern(kind, lambda: model, _tokens, names, axes, {})
    counts = {}
    for opset in (22, 23):
        f = io.BytesIO()
        export(model, _tokens(*TRACED), f, opset_version=opset, input_names=names,
               output_names=["last_hidden_state"], dynamic_axes=axes)
        counts[opset] = _op_counts(f.getvalue())
        _check_against_eager(lambda *a: model(*a).last_hidden_state, f.getvalue(), case)
    layers = model.config.num_hidden_layers
    assert not any(counts[22][op] for op in NEW_OPS)
    assert {op: counts[23][op] for op in NEW_OPS} == {"RMSNormalization": 2 * layers + 1,
                                                     "RotaryEmbedding": 2 * layers, "Attention": layers}
    # nothing is left of the decompositions: no Pow/Sqrt (RMS), Neg (rotate_half), key/value repeats
    assert counts[23]["Pow"] == counts[23]["Sqrt"] == counts[23]["Neg"] == 0, counts[23]
    assert sum(counts[23].values()) < 0.7 * sum(counts[22].values())


def test_pass_order_from_opset_23():
    names = [type(p).__name__ for p in passes(opset=23)]
    fused = ["FuseRMSNormalization", "FuseRotaryEmbedding", "AttentionGroupedKV"]
    start = names.index(fused[0])
    assert names[start:start + 3] == fused
    assert start < names.index("CommonSubexpressions") and names[-1] == "DeadCode"
    for opset in (None, 17, 22):
        assert not set(fused) & {type(p).__name__ for p in passes(opset=opset)}
