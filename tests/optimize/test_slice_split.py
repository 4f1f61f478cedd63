"""SlicesToSplit: Slices that cut one tensor into consecutive pieces of a static axis become one Split.

Each case exports a small function with and without the pass, checks the node counts (the Split,
the Slices left, the Constant nodes feeding them) and runs the file against eager PyTorch in
onnxruntime at the traced sizes and, for dynamic cases, at other sizes.
"""

from __future__ import annotations

import io
from collections import Counter

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

import torchscript_onnx.pipeline.optimize as optimize_module
from optimize_helpers import Fn
from torchscript_onnx import export


def _rotate_half(x):
    return torch.cat((-x[..., x.shape[-1] // 2:], x[..., :x.shape[-1] // 2]), dim=-1)


# (id, function, input shape, dynamic dims, opset, Splits expected, Slices expected, sizes as a Constant input)
CASES = [
    # rotary embeddings' rotate_half: two equal halves, num_outputs from 18, a sizes input from 13
    ("rotate_half_18", _rotate_half, (2, 3, 8), (0, 1), 18, 1, 0, False),
    ("rotate_half_20", _rotate_half, (2, 3, 8), (0, 1), 20, 1, 0, False),
    ("rotate_half_13", _rotate_half, (2, 3, 8), (0, 1), 13, 1, 0, True),
    ("rotate_half_slice10", _rotate_half, (2, 3, 8), (0,), 11, 1, 0, False),
    ("rotate_half_slice1", _rotate_half, (2, 3, 8), (0,), 9, 1, 0, False),
    ("three_pieces", lambda x: x[:, :2] * 2 + x[:, 2:4] - x[:, 4:], (3, 6), (0,), 17, 1, 0, True),
    ("three_unequal_pieces", lambda x: torch.cat((x[:, 4:], x[:, :1], x[:, 1:4]), 1), (3, 6), (0,), 18, 1, 0, True),
    ("negative_indices", lambda x: x[..., -3:] * x[..., :-3], (2, 6), (0,), 17, 1, 0, True),
    ("slices_are_graph_outputs", lambda x: (x[:, :2], x[:, 2:] + 1), (2, 4), (0,), 18, 1, 0, False),
    # near misses: nothing to do
    ("gap", lambda x: x[..., :3] * x[..., 4:7], (2, 8), (0,), 18, 0, 2, False),
    ("overlap", lambda x: x[..., :5] + x[..., 3:], (2, 8), (0,), 18, 0, 2, False),
    ("steps", lambda x: x[..., ::2] + x[..., 1::2], (2, 8), (0,), 18, 0, 2, False),
    ("one_piece", lambda x: x[..., :4] * 2, (2, 8), (0,), 18, 0, 1, False),
    ("two_tensors", lambda x: torch.cat((x[..., 4:], (x * 2)[..., :4]), -1), (2, 8), (0,), 18, 0, 2, False),
    ("dynamic_axis", lambda x: torch.cat((x[2:], x[:2] * 2)), (4, 3), (0,), 18, 0, 2, False),
]


def _outputs(fn, shape) -> int:
    out = fn(torch.randn(shape))
    return len(out) if isinstance(out, tuple) else 1


def _export(fn, shape, dynamic, opset) -> bytes:
    f = io.BytesIO()
    export(Fn(fn), (torch.randn(shape),), f, opset_version=opset, input_names=["x"],
           output_names=[f"y{k}" for k in range(_outputs(fn, shape))],
           dynamic_axes={"x": {d: f"d{d}" for d in dynamic}} if dynamic else None)
    return f.getvalue()


def _without_pass(monkeypatch):
    passes = optimize_module.passes
    monkeypatch.setattr(optimize_module, "passes",
                        lambda *a, **k: [p for p in passes(*a, **k) if type(p).__name__ != "SlicesToSplit"])


def _slice_only_constants(graph: onnx.GraphProto) -> int:
    """Constant nodes read by Slices only (their starts, ends, axes)."""
    readers: dict[str, set[str]] = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, set()).add(node.op_type)
    return sum(1 for n in graph.node if n.op_type == "Constant" and readers.get(n.output[0]) == {"Slice"})


@pytest.mark.parametrize("name,fn,shape,dynamic,opset,splits,slices,sizes_input", CASES, ids=[c[0] for c in CASES])
def test_slices_to_split(name, fn, shape, dynamic, opset, splits, slices, sizes_input, monkeypatch):
    data = _export(fn, shape, dynamic, opset)
    proto = onnx.load_from_string(data)
    onnx.checker.check_model(proto, full_check=True)
    ops = Counter(n.op_type for n in proto.graph.node)
    with monkeypatch.context() as patch:
        _without_pass(patch)
        before_graph = onnx.load_from_string(_export(fn, shape, dynamic, opset)).graph
    before = Counter(n.op_type for n in before_graph.node)
    assert (ops["Split"], ops["Slice"]) == (splits, slices), ops
    assert [o.name for o in proto.graph.output] == [f"y{k}" for k in range(_outputs(fn, shape))]
    if splits:
        # One node for all the pieces, without their starts/ends/axes constants; a sizes Constant
        # below opset 18 or for unequal pieces.
        split = next(n for n in proto.graph.node if n.op_type == "Split")
        assert len(split.input) == (2 if sizes_input else 1)
        expected = len(before_graph.node) - before["Slice"] + 1 - _slice_only_constants(before_graph) + sizes_input
        assert len(proto.graph.node) == expected < len(before_graph.node)
    else:
        assert ops == before
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    sizes = [shape] + ([tuple(n + 3 if d in dynamic else n for d, n in enumerate(shape))] if dynamic else [])
    for size in sizes:
        x = torch.randn(size)
        expected = fn(x)
        expected = expected if isinstance(expected, tuple) else (expected,)
        got = session.run(None, {"x": x.numpy()})
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e.numpy(), rtol=1e-6, atol=1e-6)
