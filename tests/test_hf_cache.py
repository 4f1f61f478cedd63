"""transformers models exported as users call them: keyword arguments that are not tensors, and
key/value caches (``DynamicCache``, ``EncoderDecoderCache``) in and out, with no wrapper and no
config change.

Each family (GPT-2, Llama, T5 from tiny configs with their default ``use_cache=True``, random
weights) is exported twice with ``kwargs={..., "use_cache": True}``: a prompt step (no cache in; the
cache the model returns comes out as ``present.N.key`` / ``.value``, ``present.N.decoder.key`` ...
for T5) and a decode step (the cache of an eager prompt in, as ``past_key_values.N.key`` ...). In
onnxruntime, at other sizes than traced: step 1 runs the prompt export, step 2 the decode export
fed with step 1's presents; both against eager PyTorch's two steps, logits and every cache tensor.
Decoder-only models also run step 1 through the decode export with an empty (0-length) past, the
one-model way to decode.
"""

from __future__ import annotations

import dataclasses
import types
import io
import os
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from torch import nn

import torchscript_onnx as tso
from torchscript_onnx.pipeline.hf_cache import UnflattenableCacheError

os.environ["HF_HUB_OFFLINE"] = "1"

from bench import decoders  # noqa: E402

CACHE = "<cache>"  # where the cache's tensors sit among a step's inputs (the forward's order)
TRACED = (2, 5)  # batch, prompt tokens (T5: source tokens; the target has 2 fewer)
RUN = (3, 4)  # batch, prompt tokens at run time
NEW_TOKENS_TRACED = 2  # tokens of the traced decode step (one token would fix the trace to one)


def _t5():
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(0)
    config = T5Config(vocab_size=256, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4,
                      relative_attention_num_buckets=8, relative_attention_max_distance=16, decoder_start_token_id=0)
    return T5ForConditionalGeneration(config).eval()


@dataclasses.dataclass(frozen=True)
class Family:
    name: str
    build: object
    step_order: tuple  # the decode step's graph inputs in the forward's order, CACHE for the cache's tensors
    encoder_decoder: bool = False

    def tokens(self, batch, seq, seed):
        return torch.randint(1, 256, (batch, seq), generator=torch.Generator().manual_seed(seed))

    def prompt(self, batch, seq, seed=0) -> dict:
        if self.encoder_decoder:
            mask = torch.ones(batch, seq, dtype=torch.long)
            mask[-1, -1] = 0 if batch > 1 else 1
            return {"input_ids": self.tokens(batch, seq, seed), "attention_mask": mask,
                    "decoder_input_ids": self.tokens(batch, seq - 2, seed + 1), "use_cache": True}
        return {"input_ids": self.tokens(batch, seq, seed), "attention_mask": torch.ones(batch, seq, dtype=torch.long),
                "use_cache": True}

    def step(self, prompt: dict, cache, new: int, seed=5) -> dict:
        """The decode step after ``prompt``: ``new`` tokens, the cache of the prompt's step."""
        batch = prompt["input_ids"].shape[0]
        if self.encoder_decoder:
            return {**prompt, "decoder_input_ids": self.tokens(batch, new, seed), "past_key_values": cache}
        mask = torch.ones(batch, prompt["attention_mask"].shape[1] + new, dtype=torch.long)
        mask[-1, 0] = 0 if batch > 1 else 1  # a padded first position in one row
        return {"input_ids": self.tokens(batch, new, seed), "attention_mask": mask, "past_key_values": cache,
                "use_cache": True}


FAMILIES = [
    Family("gpt2", lambda: decoders.causal_lm("gpt2"), ("input_ids", CACHE, "attention_mask")),
    Family("llama", lambda: decoders.causal_lm("llama"), ("input_ids", "attention_mask", CACHE)),
    Family("t5", _t5, ("input_ids", "attention_mask", "decoder_input_ids", CACHE), encoder_decoder=True),
]


def _cache_names(prefix: str, layers: int, encoder_decoder: bool) -> list[str]:
    parts = ("decoder.", "encoder.") if encoder_decoder else ("",)
    return [f"{prefix}.{i}.{part}{kind}" for i in range(layers) for part in parts for kind in ("key", "value")]


def _cache_tensor(cache, name: str) -> torch.Tensor:
    """The tensor ``name`` (``present.1.decoder.value``) stands for, read from the cache object."""
    parts = name.split(".")
    layer, kind = int(parts[1]), parts[-1]
    if len(parts) == 4:
        cache = cache.self_attention_cache if parts[2] == "decoder" else cache.cross_attention_cache
    return getattr(cache.layers[layer], "keys" if kind == "key" else "values")


def _axes(names: list[str], encoder_decoder: bool) -> dict:
    """Dynamic batch and lengths for every graph input and output ``names`` has."""
    seq = "target" if encoder_decoder else "sequence"
    known = {"input_ids": {0: "batch", 1: "source" if encoder_decoder else "sequence"},
             "attention_mask": {0: "batch", 1: "source" if encoder_decoder else "total"},
             "decoder_input_ids": {0: "batch", 1: "target"}, "logits": {0: "batch", 1: seq}}
    for name in names:
        if name.startswith(("past_key_values.", "present.")):
            length = "source" if ".encoder." in name else "past" if name.startswith("past") else "total"
            known[name] = {0: "batch", 2: length}
    return {name: known[name] for name in names if name in known}


def _export(model, kwargs: dict, inputs: list[str], outputs: list[str], encoder_decoder: bool):
    """onnxruntime session of ``model`` exported with ``kwargs``; input_names up to the last one that
    is not the cache's, output_names ["logits"], dynamic axes on all ``inputs`` and ``outputs``."""
    named = [n for n in inputs if not n.startswith("past_key_values.")]
    input_names = inputs[:inputs.index(named[-1]) + 1]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        proto = tso.export(model, (), None, kwargs=kwargs, input_names=input_names, output_names=["logits"],
                           dynamic_axes=_axes(inputs + outputs, encoder_decoder))
    assert not [w for w in caught if "dynamic axes" in str(w.message)]  # every cache name named an input/output
    return ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])


def _run(session, kwargs: dict, past: dict) -> dict:
    feed = {**{k: v.numpy() for k, v in kwargs.items() if isinstance(v, torch.Tensor)}, **past}
    names = [i.name for i in session.get_inputs()]
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, {n: feed[n] for n in names})))


def _compare(got: dict, eager, presents: list[str], step: str) -> None:
    np.testing.assert_allclose(got["logits"], eager.logits.numpy(), rtol=1e-4, atol=1e-5, err_msg=f"{step}: logits")
    for name in presents:
        want = _cache_tensor(eager.past_key_values, name).numpy()
        np.testing.assert_allclose(got[name], want, rtol=1e-4, atol=1e-5, err_msg=f"{step}: {name}")


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_two_decode_steps_with_the_models_own_cache_match_eager(family):
    model = family.build()
    assert model.config.use_cache is True  # the default config, unchanged
    layers = model.config.num_hidden_layers if not family.encoder_decoder else model.config.num_decoder_layers
    pasts = _cache_names("past_key_values", layers, family.encoder_decoder)
    presents = _cache_names("present", layers, family.encoder_decoder)
    step_inputs = [n for name in family.step_order for n in (pasts if name == CACHE else [name])]
    prompt_inputs = [n for n in family.step_order if n != CACHE]

    traced_prompt = family.prompt(*TRACED)
    prompt_session = _export(model, traced_prompt, prompt_inputs, presents, family.encoder_decoder)
    with torch.no_grad():
        cache = model(**traced_prompt).past_key_values
    lengths = [_cache_tensor(cache, n).shape for n in pasts]
    step_session = _export(model, family.step(traced_prompt, cache, NEW_TOKENS_TRACED), step_inputs, presents,
                           family.encoder_decoder)
    assert [_cache_tensor(cache, n).shape for n in pasts] == lengths  # the caller's cache is left as it was

    assert [i.name for i in prompt_session.get_inputs()] == prompt_inputs
    assert [i.name for i in step_session.get_inputs()] == step_inputs
    for session in (prompt_session, step_session):
        assert [o.name for o in session.get_outputs()][:1 + len(presents)] == ["logits", *presents]
    declared = {i.name: i.shape for i in step_session.get_inputs() + step_session.get_outputs()}
    assert declared[pasts[0]][0::2] == ["batch", "past"]
    assert declared[presents[0]][0::2] == ["batch", "total"]

    prompt = family.prompt(*RUN, seed=10)
    got1 = _run(prompt_session, prompt, {})
    with torch.no_grad():
        eager1 = model(**prompt)
    _compare(got1, eager1, presents, "step 1")

    fed = {"past_key_values" + name[len("present"):]: got1[name] for name in presents}
    step = family.step(prompt, eager1.past_key_values, 1, seed=11)
    got2 = _run(step_session, step, fed)
    with torch.no_grad():
        eager2 = model(**step)
    _compare(got2, eager2, presents, "step 2")
    assert got2[presents[0]].shape[2] == (RUN[1] - 2 if family.encoder_decoder else RUN[1]) + 1

    if not family.encoder_decoder:  # one model for both steps: the prompt with an empty past
        empty = {name: np.zeros((RUN[0], got1[p].shape[1], 0, got1[p].shape[3]), np.float32)
                 for name, p in zip(pasts, presents)}
        got0 = _run(step_session, prompt, empty)
        np.testing.assert_allclose(got0["logits"], eager1.logits.numpy(), rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# Keyword arguments that are not tensors


def _fills_use_cache(forward):
    """transformers' own decorator that passes ``use_cache`` from the model's config (its models'
    forwards carry it, with others that pass parameters by keyword themselves)."""
    from transformers.utils.generic import merge_with_config_defaults

    return merge_with_config_defaults(forward)


def _flags(x, mask, use_cache=None, scale=1.0, mode="add", bias=None):
    y = x * scale
    y = y + mask if mode == "add" else y * mask
    if bias is not None:
        y = y + bias
    return (y, y.sum(-1)) if use_cache else y


class Decorated(nn.Module):
    config = types.SimpleNamespace(use_cache=False)

    @_fills_use_cache
    def forward(self, x, mask=None, use_cache=None, scale=1.0, mode="add", bias=None):
        return _flags(x, mask, use_cache, scale, mode, bias)


class Undecorated(nn.Module):
    def forward(self, x, mask=None, use_cache=None, scale=1.0, mode="add", bias=None):
        return _flags(x, mask, use_cache, scale, mode, bias)


def _x(batch=2, seq=5):
    return torch.randn(batch, seq), torch.randn(batch, seq)


# (id, keyword values that are not tensors)
CONSTANT_CASES = [
    ("bool", {"use_cache": True}),
    ("int", {"scale": 3}),
    ("float", {"scale": 2.5}),
    ("str", {"mode": "mul"}),
    ("None", {"bias": None}),
    ("all", {"use_cache": True, "scale": -1.5, "mode": "mul", "bias": None}),
]


@pytest.mark.parametrize("values", [pytest.param(v, id=i) for i, v in CONSTANT_CASES])
def test_keyword_values_that_are_not_tensors_are_fixed_at_capture(values):
    x, mask = _x()
    proto = tso.export(Decorated(), (), None, kwargs={"x": x, "mask": mask, **values}, input_names=["x", "mask"],
                       dynamic_axes={"x": {0: "batch", 1: "seq"}, "mask": {0: "batch", 1: "seq"}})
    assert [i.name for i in proto.graph.input] == ["x", "mask"]
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    x, mask = _x(3, 7)
    got = session.run(None, {"x": x.numpy(), "mask": mask.numpy()})
    want = Decorated()(x, mask=mask, **values)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-6, atol=1e-6)


class Fixed(nn.Module):
    """The call of the test below with its values that are not tensors written in: what legacy exports."""

    def forward(self, x, mask):
        return _flags(x, mask, False, 1.0, "mul", None)


def test_tensor_keyword_values_keep_legacys_names():
    """Without input_names the tensors given by keyword are named as legacy names the same tensors
    passed by position to the forward with the other values written in (legacy cannot take the
    keyword call: it passes use_cache by position)."""
    x, mask = _x()
    ours = tso.export(Decorated(), (), None, kwargs={"x": x, "mask": mask, "use_cache": False, "mode": "mul"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        buffer = io.BytesIO()
        torch.onnx.export(Fixed(), (x, mask), buffer, dynamo=False)
    legacy = onnx.load_from_string(buffer.getvalue())
    assert [i.name for i in ours.graph.input] == [i.name for i in legacy.graph.input]
    assert len(ours.graph.input) == 2


class UnderNoGrad(nn.Module):
    @torch.no_grad()
    def forward(self, x, mask=None, use_cache=None, scale=1.0, mode="add", bias=None):
        return _flags(x, mask, use_cache, scale, mode, bias)


@pytest.mark.parametrize("model", [Undecorated(), UnderNoGrad()], ids=["undecorated", "torch.no_grad"])
def test_python_numbers_by_keyword_stay_inputs_where_legacy_makes_them_inputs(model):
    """A forward under no decorator, or under torch's own, binds keyword arguments by position, as
    legacy does: a float given by keyword and used in arithmetic is a (double) graph input there,
    and stays one here."""
    x, mask = _x()
    proto = tso.export(model, (), None, kwargs={"x": x, "mask": mask, "scale": 2.5})
    assert [i.type.tensor_type.elem_type for i in proto.graph.input] == [1, 1, 11]  # float, float, double


# ---------------------------------------------------------------------------------------------
# Caches that cannot become tensors: an error naming the argument and what to pass instead


def _llama_config():
    return decoders.llama_config("tiny")


def _sliding_model():
    from transformers import MistralConfig, MistralForCausalLM

    torch.manual_seed(0)
    config = MistralConfig(vocab_size=256, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, sliding_window=4)
    return MistralForCausalLM(config).eval()


def _static_cache():
    from transformers import StaticCache

    return StaticCache(config=_llama_config(), max_cache_len=16)


def _half_filled_cache():
    from transformers import DynamicCache

    cache = DynamicCache(config=_llama_config())
    cache.update(torch.randn(1, 2, 3, 16), torch.randn(1, 2, 3, 16), 0)
    return cache


def _sliding_cache():
    with torch.no_grad():
        return _sliding_model()(input_ids=torch.ones(1, 3, dtype=torch.long)).past_key_values


def _in_a_list():
    from transformers import DynamicCache

    return [DynamicCache([(torch.randn(1, 2, 3, 16), torch.randn(1, 2, 3, 16))])]


_INSTEAD = r"DynamicCache\(\[\(key, value\), \.\.\.\]\).*use_cache=False"

# (id, model factory, cache factory or None (the model makes its cache), expected error)
BAD_CACHE_CASES = [
    ("static-cache", lambda: decoders.causal_lm("llama"), _static_cache,
     r"kwargs\['past_key_values'\] is a StaticCache, which cannot become graph inputs.*" + _INSTEAD),
    ("half-filled", lambda: decoders.causal_lm("llama"), _half_filled_cache,
     r"kwargs\['past_key_values'\] has 1 of its 2 layers filled.*" + _INSTEAD),
    ("sliding-window-layers-in", _sliding_model, _sliding_cache,
     r"kwargs\['past_key_values'\] has a DynamicSlidingWindowLayer as layer 0.*" + _INSTEAD),
    ("sliding-window-layers-out", _sliding_model, None,
     r"the model's output\['past_key_values'\] has a DynamicSlidingWindowLayer as layer 0.*"
     r"past_key_values=transformers\.DynamicCache\(\).*use_cache=False"),
    ("inside-a-list", lambda: decoders.causal_lm("llama"), _in_a_list,
     r"kwargs\['past_key_values'\]\[0\] is a DynamicCache inside a list.*argument of its own"),
]


@pytest.mark.parametrize("make_model, make_cache, message",
                         [pytest.param(*row[1:], id=row[0]) for row in BAD_CACHE_CASES])
def test_a_cache_that_cannot_become_tensors_is_a_clear_error(make_model, make_cache, message, tmp_path):
    kwargs = {"input_ids": torch.ones(1, 2, dtype=torch.long), "use_cache": True}
    if make_cache is not None:
        kwargs["past_key_values"] = make_cache()
    path = tmp_path / "model.onnx"
    with pytest.raises(TypeError, match=message) as caught:
        tso.export(make_model(), (), path, kwargs=kwargs)
    assert caught.type is UnflattenableCacheError or "inside a list" in message
    assert not path.exists()


def test_dynamic_axes_naming_a_cache_tensor_the_graph_lacks_warn_as_legacy_does():
    """Cache names are known once traced, so their dynamic_axes check waits for the graph; one the
    graph lacks (no cache passed in) warns as legacy warns of any unknown name, or fails with strict."""
    model = decoders.causal_lm("gpt2")
    kwargs = {"input_ids": torch.ones(1, 3, dtype=torch.long), "use_cache": True}
    axes = {"past_key_values.0.key": {0: "batch"}, "present.0.key": {0: "batch"}}
    with pytest.warns(UserWarning, match="Provided key past_key_values.0.key for dynamic axes") as caught:
        tso.export(model, (), None, kwargs=kwargs, dynamic_axes=axes)
    assert not [w for w in caught if "present.0.key" in str(w.message)]
    with pytest.raises(Exception, match="Provided key past_key_values.0.key for dynamic axes"):
        tso.export(model, (), None, kwargs=kwargs, dynamic_axes=axes, strict=True)


# ---------------------------------------------------------------------------------------------
# verify and dynamic_shapes with a cache among the arguments


def _gpt2_step():
    model = decoders.causal_lm("gpt2")
    ids = torch.randint(1, 256, (2, 5), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        cache = model(input_ids=ids, use_cache=True).past_key_values
    kwargs = {"input_ids": ids[:, :2], "past_key_values": cache, "attention_mask": torch.ones(2, 7, dtype=torch.long),
              "use_cache": True}
    return model, cache, kwargs


def test_verify_runs_a_cache_at_other_sizes_and_leaves_it_as_it_was():
    model, cache, kwargs = _gpt2_step()
    past = _cache_names("past_key_values", 2, False)
    axes = {"input_ids": {0: "batch", 1: "new"}, "attention_mask": {0: "batch", 1: "total"},
            **{name: {0: "batch", 2: "past"} for name in past}}
    report = tso.verify(model, (), kwargs=kwargs, input_names=["input_ids", *past, "attention_mask"], dynamic_axes=axes,
                        other_sizes=[{"batch": 3, "new": 1, "past": 8, "total": 9}])
    assert [c.inputs for c in report.comparisons].count("traced") == 5  # logits and 4 presents
    assert len(report.comparisons) == 10
    assert cache.get_seq_length() == 5


def test_dynamic_shapes_name_keyword_inputs_and_leave_a_cache_static():
    model, _, kwargs = _gpt2_step()
    proto = tso.export(model, (), None, kwargs=kwargs,
                       dynamic_shapes={"input_ids": {0: "batch", 1: "new"}, "attention_mask": {0: "batch", 1: "total"}})
    dims = {i.name: [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim] for i in proto.graph.input}
    assert list(dims) == ["input_ids", *_cache_names("past_key_values", 2, False), "attention_mask"]
    assert dims["input_ids"] == ["batch", "new"] and dims["attention_mask"] == ["batch", "total"]
    assert dims["past_key_values.1.value"] == [2, 4, 5, 16]
    with pytest.raises(ValueError, match="give every axis through dynamic_axes"):
        tso.export(model, (), None, kwargs=kwargs, dynamic_shapes={"past_key_values": [{0: "batch"}]})
