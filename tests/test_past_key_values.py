"""Decoders exported with their key/value cache as graph inputs and outputs (optimum's
"text-generation-with-past" layout), checked over two decode steps in onnxruntime against eager PyTorch.

Models are tiny (a few hundred K parameters) from ``transformers`` config classes, wrapped by
``bench.decoders.WithPast``: inputs ``input_ids, attention_mask, position_ids,
past_key_values.{i}.key/value``, outputs ``logits, present.{i}.key/value``. Each case is traced at one
batch / new-token / cached-token count and run at others: step 1 with ``run`` sizes (a cached length of
0 is a prompt with an empty cache), step 2 one new token with the presents of step 1 (onnxruntime's
own for the graph, PyTorch's own for eager) as its pasts.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import onnxruntime as ort
import pytest
import torch

import torchscript_onnx as tso
from bench import decoders


@dataclasses.dataclass(frozen=True)
class Case:
    family: str
    opset: int
    traced: tuple[int, int, int]  # batch, new tokens, cached tokens
    run: tuple[int, int, int]

    @property
    def id(self):
        return f"{self.family}-opset{self.opset}-run{'x'.join(map(str, self.run))}"


CASES = [
    Case("llama", 17, (2, 3, 4), (3, 5, 6)),
    Case("llama", 20, (2, 3, 4), (1, 4, 0)),
    Case("gpt2", 17, (2, 3, 4), (4, 2, 7)),
    Case("gpt2", 14, (1, 2, 3), (3, 6, 0)),
    Case("qwen2", 18, (2, 3, 4), (3, 1, 9)),
]


def _decode(run, config, case):
    """Outputs of two decode steps through ``run(inputs) -> list of tensors``."""
    batch, seq, past = case.run
    first = decoders.step_inputs(config, batch, seq, past, seed=1)
    out1 = run(first)
    out2 = run(decoders.next_step_inputs(config, first, out1[1:], seed=2))
    return [out1, out2]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_two_decode_steps_match_eager(case, tmp_path):
    model = decoders.causal_lm(case.family)
    config, layers = model.config, model.config.num_hidden_layers
    wrapper = decoders.WithPast(model).eval()
    path = str(tmp_path / "decoder.onnx")
    kwargs = decoders.export_kwargs(layers)
    tso.export(wrapper, decoders.step_inputs(config, *case.traced), path, opset_version=case.opset, **kwargs)

    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    assert [i.name for i in sess.get_inputs()] == decoders.input_names(layers)
    assert [o.name for o in sess.get_outputs()] == decoders.output_names(layers)
    heads, head_dim = decoders.cache_shape(config)
    declared = {i.name: i.shape for i in sess.get_inputs() + sess.get_outputs()}
    assert declared["input_ids"] == ["batch_size", "sequence_length"]
    assert declared["attention_mask"] == ["batch_size", "total_sequence_length"]
    assert declared["past_key_values.0.key"] == ["batch_size", heads, "past_sequence_length", head_dim]
    assert declared["present.1.value"] == ["batch_size", heads, "total_sequence_length", head_dim]
    assert declared["logits"] == ["batch_size", "sequence_length", config.vocab_size]

    def ort_run(inputs):
        feed = {name: t.numpy() for name, t in zip(decoders.input_names(layers), inputs)}
        return [torch.from_numpy(o) for o in sess.run(None, feed)]

    with torch.no_grad():
        expected = _decode(lambda inputs: list(wrapper(*inputs)), config, case)
    got = _decode(ort_run, config, case)

    batch, seq, past = case.run
    for step, (g_step, e_step) in enumerate(zip(got, expected)):
        total = past + seq + step
        assert g_step[0].shape == (batch, seq if step == 0 else 1, config.vocab_size)
        assert g_step[1].shape == (batch, heads, total, head_dim)
        assert len(g_step) == len(e_step) == 1 + 2 * layers
        for name, g, e in zip(decoders.output_names(layers), g_step, e_step):
            np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-4, atol=1e-5, err_msg=f"step {step + 1}: {name}")


def test_wrapper_refuses_a_wrong_number_of_pasts():
    model = decoders.causal_lm("llama")
    args = decoders.step_inputs(model.config, 1, 2, 3)
    with pytest.raises(ValueError, match="expected 4 past tensors, got 3"):
        decoders.WithPast(model)(*args[:-1])
