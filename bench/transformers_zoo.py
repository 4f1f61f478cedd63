"""Tiny transformer models for end-to-end export tests and the transformers bench table.

Every model is built from a ``transformers`` config class (or ``torch.nn``) with tiny sizes and
random weights: nothing is downloaded (``HF_HUB_OFFLINE=1``). Each ``Entry`` knows how to make
inputs of any (batch, seq) size, its input names and the dynamic axes to export with.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable

import torch
from torch import nn

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

VOCAB = 128
HIDDEN = 32
HEADS = 4
LAYERS = 2
FFN = 64
IMAGE = 32
PATCH = 8
MELS = 16
TRACED = (2, 8)  # (batch, seq) of the export
OTHER_SIZES = ((1, 5), (3, 13))  # two other sizes the exported model runs at


@dataclasses.dataclass
class Entry:
    name: str
    build: Callable[[], nn.Module]
    inputs: Callable[[int, int], tuple]  # (batch, seq) -> args (a trailing dict = keyword arguments)
    input_names: list[str]
    output_names: list[str]
    dynamic_axes: dict
    min_opset: int = 9  # the lowest opset the model exports at (runtime Slice 10, CumSum 11, Trilu 14)

    def model(self) -> nn.Module:
        torch.manual_seed(0)
        return self.build().eval()


def _tokens(batch: int, seq: int, vocab: int = VOCAB) -> torch.Tensor:
    return torch.randint(1, vocab, (batch, seq))


def _mask(batch: int, seq: int) -> torch.Tensor:
    """An attention mask with padding at the end of the first row (when it is longer than 2)."""
    mask = torch.ones(batch, seq, dtype=torch.long)
    if seq > 2:
        mask[0, seq - 2:] = 0
    return mask


def _text_axes(names, outputs) -> dict:
    axes = {name: {0: "batch", 1: "sequence"} for name in names}
    axes.update(outputs)
    return axes


# ---------------------------------------------------------------------------------------------
# transformers models


def _bert():
    from transformers import BertConfig, BertModel

    config = BertConfig(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                        intermediate_size=FFN, max_position_embeddings=64, type_vocab_size=2)
    return BertModel(config)


def _distilbert():
    from transformers import DistilBertConfig, DistilBertModel

    config = DistilBertConfig(vocab_size=VOCAB, dim=HIDDEN, n_layers=LAYERS, n_heads=HEADS, hidden_dim=FFN,
                              max_position_embeddings=64)
    return DistilBertModel(config)


def _roberta():
    from transformers import RobertaConfig, RobertaModel

    config = RobertaConfig(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                           intermediate_size=FFN, max_position_embeddings=64, pad_token_id=0)
    return RobertaModel(config)


def _gpt2():
    from transformers import GPT2Config, GPT2Model

    config = GPT2Config(vocab_size=VOCAB, n_embd=HIDDEN, n_layer=LAYERS, n_head=HEADS, n_positions=64, use_cache=False)
    return GPT2Model(config)


def _llama():
    from transformers import LlamaConfig, LlamaModel

    config = LlamaConfig(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=FFN, num_hidden_layers=LAYERS,
                         num_attention_heads=HEADS, num_key_value_heads=2, max_position_embeddings=64, use_cache=False)
    return LlamaModel(config)


def _t5():
    from transformers import T5Config, T5Model

    config = T5Config(vocab_size=VOCAB, d_model=HIDDEN, d_kv=8, d_ff=FFN, num_layers=LAYERS, num_decoder_layers=LAYERS,
                      num_heads=HEADS, relative_attention_num_buckets=8, relative_attention_max_distance=16,
                      use_cache=False, decoder_start_token_id=0)
    return T5Model(config)


def _vit():
    from transformers import ViTConfig, ViTModel

    config = ViTConfig(hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS, intermediate_size=FFN,
                       image_size=IMAGE, patch_size=PATCH, num_channels=3)
    return ViTModel(config, add_pooling_layer=False)


def _whisper_encoder():
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    config = WhisperConfig(vocab_size=VOCAB, num_mel_bins=MELS, encoder_layers=LAYERS, encoder_attention_heads=HEADS,
                           decoder_layers=LAYERS, decoder_attention_heads=HEADS, d_model=HIDDEN,
                           encoder_ffn_dim=FFN, decoder_ffn_dim=FFN, max_source_positions=32,
                           max_target_positions=32)
    return WhisperEncoder(config)


def _clip_text():
    from transformers import CLIPTextConfig, CLIPTextModel

    config = CLIPTextConfig(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=FFN, num_hidden_layers=LAYERS,
                            num_attention_heads=HEADS, max_position_embeddings=64, eos_token_id=VOCAB - 1)
    return CLIPTextModel(config)


# ---------------------------------------------------------------------------------------------
# torch.nn transformers


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HIDDEN)
        layer = nn.TransformerEncoderLayer(HIDDEN, HEADS, FFN, dropout=0.1, batch_first=True, activation="gelu")
        self.encoder = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)

    def forward(self, tokens, padding_mask):
        seq = tokens.size(1)
        causal = nn.Transformer.generate_square_subsequent_mask(seq)
        return self.encoder(self.embed(tokens), mask=causal, src_key_padding_mask=padding_mask)


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HIDDEN)
        layer = nn.TransformerDecoderLayer(HIDDEN, HEADS, FFN, dropout=0.1, norm_first=True)
        self.decoder = nn.TransformerDecoder(layer, LAYERS)

    def forward(self, tokens, memory):
        x = self.embed(tokens).transpose(0, 1)  # (seq, batch, hidden): batch_first=False
        return self.decoder(x, memory, tgt_is_causal=True,
                            tgt_mask=nn.Transformer.generate_square_subsequent_mask(x.size(0)))


def _padding(batch, seq):
    mask = torch.zeros(batch, seq, dtype=torch.bool)
    if seq > 2:
        mask[0, seq - 1] = True
    return mask


# Lowest opsets: Slice with runtime bounds (10, position ids), CumSum along a runtime dim (11, RoBERTa
# positions and packed-sequence detection), Range for a runtime causal mask (11), Trilu (14, nn.Transformer's mask).
MIN_OPSETS = {"bert": 10, "distilbert": 10, "roberta": 11, "gpt2": 11, "llama": 11, "llama_padded": 9, "t5": 9,
              "vit": 9, "whisper_encoder": 9, "clip_text": 10, "nn_transformer_encoder": 14,
              "nn_transformer_decoder": 11}

TEXT_OUT = {"last_hidden_state": {0: "batch", 1: "sequence"}}

_ENTRIES = [
    Entry("bert", _bert,
          lambda b, s: (_tokens(b, s), {"attention_mask": _mask(b, s),
                                        "token_type_ids": torch.zeros(b, s, dtype=torch.long)}),
          ["input_ids", "attention_mask", "token_type_ids"], ["last_hidden_state", "pooler_output"],
          _text_axes(["input_ids", "attention_mask", "token_type_ids"], {**TEXT_OUT, "pooler_output": {0: "batch"}})),
    Entry("distilbert", _distilbert,
          lambda b, s: (_tokens(b, s), {"attention_mask": _mask(b, s)}),
          ["input_ids", "attention_mask"], ["last_hidden_state"],
          _text_axes(["input_ids", "attention_mask"], TEXT_OUT)),
    Entry("roberta", _roberta,
          lambda b, s: (_tokens(b, s), {"attention_mask": _mask(b, s)}),
          ["input_ids", "attention_mask"], ["last_hidden_state", "pooler_output"],
          _text_axes(["input_ids", "attention_mask"], {**TEXT_OUT, "pooler_output": {0: "batch"}})),
    # Without an attention mask transformers 5 looks for packed sequences with torch.diff.
    Entry("gpt2", _gpt2, lambda b, s: (_tokens(b, s),), ["input_ids"], ["last_hidden_state"],
          _text_axes(["input_ids"], TEXT_OUT)),
    Entry("llama", _llama, lambda b, s: (_tokens(b, s),), ["input_ids"], ["last_hidden_state"],
          _text_axes(["input_ids"], TEXT_OUT)),
    Entry("llama_padded", _llama,
          lambda b, s: (_tokens(b, s), {"attention_mask": _mask(b, s)}),
          ["input_ids", "attention_mask"], ["last_hidden_state"],
          _text_axes(["input_ids", "attention_mask"], TEXT_OUT)),
    Entry("t5", _t5,
          lambda b, s: (_tokens(b, s), {"attention_mask": _mask(b, s), "decoder_input_ids": _tokens(b, max(1, s - 3))}),
          ["input_ids", "attention_mask", "decoder_input_ids"], ["last_hidden_state", "encoder_last_hidden_state"],
          {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"},
           "decoder_input_ids": {0: "batch", 1: "target"}, "last_hidden_state": {0: "batch", 1: "target"},
           "encoder_last_hidden_state": {0: "batch", 1: "sequence"}}),
    Entry("vit", _vit,
          lambda b, s: (torch.randn(b, 3, IMAGE, IMAGE),),
          ["pixel_values"], ["last_hidden_state"],
          {"pixel_values": {0: "batch"}, "last_hidden_state": {0: "batch"}}),
    # Whisper's encoder needs exactly 2 * max_source_positions frames: the sequence is fixed.
    Entry("whisper_encoder", _whisper_encoder,
          lambda b, s: (torch.randn(b, MELS, 64),),
          ["input_features"], ["last_hidden_state"],
          {"input_features": {0: "batch"}, "last_hidden_state": {0: "batch"}}),
    Entry("clip_text", _clip_text,
          lambda b, s: (_tokens(b, s, VOCAB), {"attention_mask": _mask(b, s)}),
          ["input_ids", "attention_mask"], ["last_hidden_state", "pooler_output"],
          _text_axes(["input_ids", "attention_mask"], {**TEXT_OUT, "pooler_output": {0: "batch"}})),
    Entry("nn_transformer_encoder", Encoder,
          lambda b, s: (_tokens(b, s), _padding(b, s)),
          ["tokens", "padding_mask"], ["hidden"],
          _text_axes(["tokens", "padding_mask"], {"hidden": {0: "batch", 1: "sequence"}})),
    Entry("nn_transformer_decoder", Decoder,
          lambda b, s: (_tokens(b, s), torch.randn(s + 2, b, HIDDEN)),
          ["tokens", "memory"], ["hidden"],
          {"tokens": {0: "batch", 1: "sequence"}, "memory": {0: "memory", 1: "batch"},
           "hidden": {0: "sequence", 1: "batch"}}),
]
for _entry in _ENTRIES:
    _entry.min_opset = MIN_OPSETS[_entry.name]
ZOO: dict[str, Entry] = {e.name: e for e in _ENTRIES}
