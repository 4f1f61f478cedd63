"""Decoder-only language models from ``transformers`` config classes, random weights, nothing downloaded,
and a wrapper that exports them with their key/value cache as graph inputs and outputs.

``WithPast`` is what HF optimum's "text-generation-with-past" export looks like: inputs ``input_ids``,
``attention_mask``, ``position_ids``, then ``past_key_values.{i}.key`` / ``past_key_values.{i}.value``
per layer; outputs ``logits``, then ``present.{i}.key`` / ``present.{i}.value``. The flat past tensors
are put into a ``transformers.DynamicCache`` inside ``forward``, so the trace sees them as graph inputs
and the cache's concatenations as graph outputs. ``export_kwargs`` gives the names and dynamic axes
(batch, sequence, past sequence, total sequence) to hand to any of the three exporters.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from torch import nn  # noqa: E402


class WithPast(nn.Module):
    """``forward(input_ids, attention_mask, position_ids, *past)`` -> ``(logits, *presents)``.

    ``past`` holds, per layer, a key then a value of shape (batch, kv heads, past sequence, head dim).
    """

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model
        self.num_layers = model.config.num_hidden_layers

    def forward(self, input_ids, attention_mask, position_ids, *past):
        from transformers import DynamicCache

        if len(past) != 2 * self.num_layers:
            raise ValueError(f"expected {2 * self.num_layers} past tensors, got {len(past)}")
        pairs = [(past[2 * i], past[2 * i + 1]) for i in range(self.num_layers)]
        cache = DynamicCache(pairs, config=self.model.config)
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                         past_key_values=cache, use_cache=True)
        presents = []
        for layer in out.past_key_values.layers:
            presents += [layer.keys, layer.values]
        return (out.logits, *presents)


class LogitsOnly(nn.Module):
    """``forward(input_ids, attention_mask)`` -> logits, no cache: a causal LM exported for one full pass."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits


LOGITS_ONLY_KWARGS = {
    "input_names": ["input_ids", "attention_mask"], "output_names": ["logits"],
    "dynamic_axes": {"input_ids": {0: "batch_size", 1: "sequence_length"},
                     "attention_mask": {0: "batch_size", 1: "sequence_length"},
                     "logits": {0: "batch_size", 1: "sequence_length"}},
}


def input_names(num_layers: int) -> list[str]:
    names = ["input_ids", "attention_mask", "position_ids"]
    for i in range(num_layers):
        names += [f"past_key_values.{i}.key", f"past_key_values.{i}.value"]
    return names


def output_names(num_layers: int) -> list[str]:
    names = ["logits"]
    for i in range(num_layers):
        names += [f"present.{i}.key", f"present.{i}.value"]
    return names


def dynamic_axes(num_layers: int) -> dict:
    axes = {
        "input_ids": {0: "batch_size", 1: "sequence_length"},
        "attention_mask": {0: "batch_size", 1: "total_sequence_length"},
        "position_ids": {0: "batch_size", 1: "sequence_length"},
        "logits": {0: "batch_size", 1: "sequence_length"},
    }
    for i in range(num_layers):
        for kind in ("key", "value"):
            axes[f"past_key_values.{i}.{kind}"] = {0: "batch_size", 2: "past_sequence_length"}
            axes[f"present.{i}.{kind}"] = {0: "batch_size", 2: "total_sequence_length"}
    return axes


def export_kwargs(num_layers: int) -> dict:
    return {"input_names": input_names(num_layers), "output_names": output_names(num_layers),
            "dynamic_axes": dynamic_axes(num_layers)}


def cache_shape(config) -> tuple[int, int]:
    """(kv heads, head dim) of one layer's cache."""
    heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    return heads, head_dim


def step_inputs(config, batch: int, seq: int, past_len: int, *, seed: int = 0, dtype=torch.float32,
                past: list | None = None) -> tuple:
    """Inputs of one decode step: ``seq`` new tokens after ``past_len`` cached ones (random cache unless
    ``past`` is given), an all-ones mask but for one padded leading position in the last row (when
    the batch has more than one row and there is a past), positions counted from ``past_len``."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, config.vocab_size, (batch, seq), generator=g)
    mask = torch.ones(batch, past_len + seq, dtype=torch.long)
    if batch > 1 and past_len > 0:
        mask[-1, 0] = 0
    positions = torch.arange(past_len, past_len + seq).unsqueeze(0).expand(batch, seq).contiguous()
    if past is None:
        heads, head_dim = cache_shape(config)
        past = [torch.randn(batch, heads, past_len, head_dim, generator=g).to(dtype)
                for _ in range(2 * config.num_hidden_layers)]
    return (ids, mask, positions, *past)


def next_step_inputs(config, previous: tuple, presents: list, *, seed: int = 1) -> tuple:
    """The next decode step after ``previous`` (the inputs of the step before): one new token per row,
    the mask grown by one, positions after the cached ones, ``presents`` (of the step before) as the past."""
    g = torch.Generator().manual_seed(seed)
    mask = previous[1]
    batch, total = mask.shape
    ids = torch.randint(1, config.vocab_size, (batch, 1), generator=g)
    mask = torch.cat([mask, torch.ones(batch, 1, dtype=mask.dtype)], 1)
    positions = torch.full((batch, 1), total, dtype=torch.long)
    return (ids, mask, positions, *presents)


# Decoder configs by name. Tiny ones (a few hundred K parameters) for tests; the large ones for bench.llm.

def llama_config(size: str = "tiny"):
    from transformers import LlamaConfig

    if size == "tiny":
        return LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    if size == "1b":  # TinyLlama-1.1B's dimensions
        return LlamaConfig(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
                           num_attention_heads=32, num_key_value_heads=4, max_position_embeddings=2048)
    if size == "3b":  # Llama-3.2-3B's dimensions (3.2B parameters; its tied embedding untied here)
        return LlamaConfig(vocab_size=128256, hidden_size=3072, intermediate_size=8192, num_hidden_layers=28,
                           num_attention_heads=24, num_key_value_heads=8, max_position_embeddings=4096,
                           tie_word_embeddings=True)
    if size == "small":  # a past-key-values decoder of bench size (~30M parameters)
        return LlamaConfig(vocab_size=32000, hidden_size=512, intermediate_size=1376, num_hidden_layers=4,
                           num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=512)
    raise ValueError(f"unknown llama size {size!r}")


def gpt2_config(size: str = "tiny"):
    from transformers import GPT2Config

    if size == "tiny":
        return GPT2Config(vocab_size=256, n_embd=64, n_layer=2, n_head=4, n_positions=128)
    if size == "small":
        return GPT2Config()
    raise ValueError(f"unknown gpt2 size {size!r}")


def qwen2_config(size: str = "tiny"):
    from transformers import Qwen2Config

    if size == "tiny":
        return Qwen2Config(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    raise ValueError(f"unknown qwen2 size {size!r}")


CONFIGS = {"llama": llama_config, "gpt2": gpt2_config, "qwen2": qwen2_config}


def causal_lm(family: str, size: str = "tiny", *, dtype=torch.float32, seed: int = 0) -> nn.Module:
    """A ``<Family>ForCausalLM`` with random weights, eval mode, sdpa attention, in ``dtype``."""
    import transformers

    config = CONFIGS[family](size)
    config._attn_implementation = "sdpa"
    cls = {"llama": transformers.LlamaForCausalLM, "gpt2": transformers.GPT2LMHeadModel,
           "qwen2": transformers.Qwen2ForCausalLM}[family]
    torch.manual_seed(seed)
    with _default_dtype(dtype):
        model = cls(config)
    return model.eval()


class _default_dtype:
    def __init__(self, dtype):
        self.dtype = dtype

    def __enter__(self):
        self.saved = torch.get_default_dtype()
        torch.set_default_dtype(self.dtype)

    def __exit__(self, *exc):
        torch.set_default_dtype(self.saved)
