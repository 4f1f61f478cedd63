"""Cos and Sin of values known at export time are folded (rotary embeddings' tables of static positions).

Each case exports a model with and without Cos/Sin in ``folding.FOLDERS``, checks which of the two
ops are left and that the graph got smaller exactly when they could be folded, that equal folded
tables (one per layer) end up as one initializer without an Identity keeping a made-up name, and
runs the file against eager PyTorch in onnxruntime at the traced sizes and at other sizes of the
dynamic axes.
"""

from __future__ import annotations

import io
from collections import Counter

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from torchscript_onnx import export
from torchscript_onnx.builder import folding


def _rotate_half(x):
    return torch.cat((-x[..., x.shape[-1] // 2:], x[..., :x.shape[-1] // 2]), dim=-1)


class Rotary(torch.nn.Module):
    """transformers' rotary embedding on q of shape (B, H, S, D), ``layers`` times with one table:
    positions 0..S-1 times inverse frequencies (a buffer), cos and sin unsqueezed at the heads."""

    def __init__(self, dim=8, layers=1, scaling=1.0):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, dim, 2).float() / dim), persistent=False)
        self.layers, self.scaling = layers, scaling

    def forward(self, q):
        positions = torch.arange(q.shape[2], dtype=torch.float32)[None]
        freqs = positions[..., None] * self.inv_freq
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos() * self.scaling, emb.sin() * self.scaling
        for _ in range(self.layers):
            q = q * cos.unsqueeze(1) + _rotate_half(q) * sin.unsqueeze(1)
        return q


class CosOfInput(torch.nn.Module):
    def forward(self, x):
        return x.cos() * 2 + x.sin()


class LargeTable(torch.nn.Module):
    """cos of a constant past the folding size guard (folding.MAX_FOLDED_ELEMENTS): left to the runtime."""

    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.linspace(-3, 3, folding.MAX_FOLDED_ELEMENTS + 256).reshape(-1, 256))

    def forward(self, x):
        return x * self.table.cos()


# (id, model, input shape, dynamic dims, opset, Cos + Sin nodes left)
CASES = [
    ("rotary_static_positions", lambda: Rotary(), (2, 3, 5, 8), (0,), 17, 0),
    ("rotary_static_positions_9", lambda: Rotary(), (2, 3, 5, 8), (0,), 9, 0),
    ("rotary_static_positions_20", lambda: Rotary(scaling=0.5), (2, 3, 5, 8), (0, 1), 20, 0),
    ("rotary_four_layers_one_table", lambda: Rotary(dim=16, layers=4), (1, 2, 6, 16), (0,), 18, 0),
    # positions from a runtime sequence length: the table is computed in the graph
    ("rotary_dynamic_positions", lambda: Rotary(), (2, 3, 5, 8), (0, 2), 17, 2),
    ("cos_of_input", CosOfInput, (3, 4), (0,), 17, 2),
    ("past_size_guard", LargeTable, (2, folding.MAX_FOLDED_ELEMENTS // 256 + 1, 256), (0,), 17, 1),
]


def _export(model, shape, dynamic, opset) -> bytes:
    f = io.BytesIO()
    export(model, (torch.randn(shape),), f, opset_version=opset, input_names=["x"],
           dynamic_axes={"x": {d: f"d{d}" for d in dynamic}} if dynamic else None)
    return f.getvalue()


def _check_against_eager(data, model, shape, dynamic):
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    for size in [shape] + ([tuple(n + 2 if d in dynamic else n for d, n in enumerate(shape))] if dynamic else []):
        x = torch.randn(size)
        with torch.no_grad():
            expected = model(x).numpy()
        np.testing.assert_allclose(session.run(None, {"x": x.numpy()})[0], expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name,make,shape,dynamic,opset,left", CASES, ids=[c[0] for c in CASES])
def test_cos_sin_folded(name, make, shape, dynamic, opset, left, monkeypatch):
    model = make().eval()
    data = _export(model, shape, dynamic, opset)
    proto = onnx.load_from_string(data)
    onnx.checker.check_model(proto, full_check=True)
    with monkeypatch.context() as patch:
        patch.delitem(folding.FOLDERS, "Cos")
        patch.delitem(folding.FOLDERS, "Sin")
        unfolded = onnx.load_from_string(_export(model, shape, dynamic, opset)).graph
    ops, before = Counter(n.op_type for n in proto.graph.node), Counter(n.op_type for n in unfolded.node)
    assert ops["Cos"] + ops["Sin"] == left, ops
    if before["Cos"] + before["Sin"] > left:
        assert len(proto.graph.node) < len(unfolded.node)
    else:
        assert ops == before
    # a folded table read by several layers is one initializer, not one per layer kept by Identity
    assert ops["Identity"] == 0
    folded = [t for t in proto.graph.initializer if t.name.startswith("onnx::Constant")]
    assert len(folded) <= 2
    _check_against_eager(data, model, shape, dynamic)


@pytest.mark.parametrize("dynamic", [(0,), ()], ids=["dynamic_batch", "static"])
def test_folded_tables_still_fuse_into_rotary_embedding(dynamic):
    """At opset 23 the folded tables become RotaryEmbedding's half-width caches (initializers):
    no Cos, Sin, Slice or Unsqueeze is left, one cache pair for every layer."""
    model, shape = Rotary(layers=3).eval(), (2, 3, 5, 8)
    data = _export(model, shape, dynamic, 23)
    graph = onnx.load_from_string(data).graph
    ops = Counter(n.op_type for n in graph.node)
    assert ops["RotaryEmbedding"] == 3
    assert not {"Cos", "Sin", "Slice", "Unsqueeze", "Split", "Identity"} & set(ops), ops
    caches = [t for t in graph.initializer if t.name.startswith("onnx::Constant")]
    assert sorted(tuple(t.dims) for t in caches) == [(1, 5, 4), (1, 5, 4)]
    _check_against_eager(data, model, shape, dynamic)
