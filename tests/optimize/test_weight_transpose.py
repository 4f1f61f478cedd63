"""FoldWeightTranspose: MatMul(x, Transpose(W)) of a large weight reads a transposed initializer."""

from __future__ import annotations

import io

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from torch import nn

from torchscript_onnx import TrainingMode, export
from torchscript_onnx.builder.folding import MAX_FOLDED_ELEMENTS

IN, OUT = 300, 256  # above folding's element limit: left to this pass
assert IN * OUT > MAX_FOLDED_ELEMENTS


class Tied(nn.Module):
    """A weight read twice: by a Gather (embedding) and transposed (output projection)."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(IN, OUT)

    def forward(self, tokens):
        return self.embed(tokens) @ self.embed.weight.t()


def _linear():
    return nn.Linear(IN, OUT), (torch.randn(2, 5, IN),)


def _tied():
    return Tied(), (torch.randint(0, IN, (2, 5)),)


# (name, factory, export options, Transpose nodes expected left, weight bytes written at most)
CASES = [
    ("linear", _linear, {}, 0, IN * OUT * 4),
    ("linear_training", _linear, {"training": TrainingMode.TRAINING}, 1, IN * OUT * 4),
    ("linear_initializers_as_inputs", _linear, {"keep_initializers_as_inputs": True}, 1, IN * OUT * 4),
    ("linear_no_constant_folding", _linear, {"do_constant_folding": False}, 1, IN * OUT * 4),
    ("tied_weight", _tied, {}, 1, IN * OUT * 4),  # folding would write the weight twice
]


@pytest.mark.parametrize("name,factory,options,transposes,max_bytes", CASES, ids=[c[0] for c in CASES])
def test_fold_weight_transpose(name, factory, options, transposes, max_bytes):
    torch.manual_seed(0)
    model, args = factory()
    model.eval()
    f = io.BytesIO()
    export(model, args, f, opset_version=17, **options)
    proto = onnx.load_from_string(f.getvalue())
    assert [n.op_type for n in proto.graph.node].count("Transpose") == transposes
    big = [t for t in proto.graph.initializer if np.prod(t.dims) >= IN * OUT]
    assert sum(len(t.raw_data) for t in big) <= max_bytes
    if transposes == 0:
        assert [list(t.dims) for t in big] == [[IN, OUT]]
    session = ort.InferenceSession(f.getvalue(), providers=["CPUExecutionProvider"])
    feeds = {i.name: a.numpy() for i, a in zip(session.get_inputs(), args)}
    model.train(False)
    with torch.no_grad():
        want = model(*args).numpy()
    np.testing.assert_allclose(session.run(None, feeds)[0], want, rtol=1e-4, atol=1e-5)
