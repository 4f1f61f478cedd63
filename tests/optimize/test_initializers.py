"""Initializer deduplication: equal data shares one initializer; nothing else does, nothing is computed."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from optimize_helpers import context, run

from torchscript_onnx.builder.lazy import LazyTensor
from torchscript_onnx.pipeline.optimize.initializers import SAMPLE_BYTES, DeduplicateInitializers

X = np.linspace(-1, 1, 4096, dtype=np.float32)


def _graph(tensors):
    """x + w for every weight w (cast to float), summed; one initializer per tensor."""
    g = context()
    x = g.graph.add_input("x", torch.float32, (4096,))
    total = None
    for k, tensor in enumerate(tensors):
        weight = g.graph.add_initializer(f"w{k}", tensor, const=False)  # no folding at build time
        if tensor.dtype != torch.float32:
            weight = g.op("Cast", weight, to_i=1)
        term = g.op("Add", x, g.op("Reshape", weight, g.constant([-1])) if weight.rank != 1 else weight)
        total = term if total is None else g.op("Add", total, term)
    g.graph.outputs = [total]
    return g.graph


def _big(seed=0):
    return torch.randn(4096, generator=torch.Generator().manual_seed(seed))


def _middle_differs():
    a = _big()
    b = a.clone()
    b[4096 // 2 - SAMPLE_BYTES // 4 - 10] += 1  # outside the sampled start, middle and end
    return [a, b]


def _same_memory():
    a = _big()
    return [a, a]


def _nan_and_zeros():
    a = torch.zeros(4096)
    a[7] = float("nan")
    return [a, a.clone()]


def _signed_zeros():
    return [torch.zeros(4096), torch.full((4096,), -0.0)]


# name, tensors, initializer names kept by value (eval), kept by identity only (training)
CASES = [
    ("equal_copies", lambda: [_big(), _big()], ["w0"], ["w0", "w1"]),
    ("same_memory", _same_memory, ["w0"], ["w0"]),
    ("three_with_one_pair", lambda: [_big(0), _big(1), _big(0)], ["w0", "w1"], ["w0", "w1", "w2"]),
    ("other_values", lambda: [_big(0), _big(1)], ["w0", "w1"], ["w0", "w1"]),
    ("middle_differs", _middle_differs, ["w0", "w1"], ["w0", "w1"]),
    ("other_dtype_same_bytes", lambda: [torch.zeros(4096), torch.zeros(4096, dtype=torch.int32)],
     ["w0", "w1"], ["w0", "w1"]),
    ("other_shape_same_bytes", lambda: [torch.zeros(4096), torch.zeros(64, 64)], ["w0", "w1"], ["w0", "w1"]),
    ("nan_bits_equal", _nan_and_zeros, ["w0"], ["w0", "w1"]),
    ("signed_zeros", _signed_zeros, ["w0", "w1"], ["w0", "w1"]),
]


@pytest.mark.parametrize("by_value", [True, False], ids=["eval", "training"])
@pytest.mark.parametrize("make, kept_by_value, kept_by_identity",
                         [pytest.param(m, v, i, id=n) for n, m, v, i in CASES])
def test_deduplicate(make, kept_by_value, kept_by_identity, by_value):
    tensors = make()
    reference = run(_graph(tensors), {"x": X})
    graph = _graph(tensors)
    pointers = {name: t.data_ptr() for name, t in graph.initializers.items()}
    changed = DeduplicateInitializers(by_value=by_value).run(graph)
    expected = kept_by_value if by_value else kept_by_identity
    assert list(graph.initializers) == expected
    assert changed == (len(expected) < len(tensors))
    assert {name: t.data_ptr() for name, t in graph.initializers.items()} == {n: pointers[n] for n in expected}
    np.testing.assert_array_equal(run(graph, {"x": X})[0], reference[0])


def test_duplicates_keep_their_names_as_identities():
    """As in the legacy exporter: each duplicate's name stays, an Identity of the kept initializer
    put in front of the graph, so readers, graph outputs and names read by subgraphs still find it."""
    g = context()
    x = g.graph.add_input("x", torch.float32, (4,))
    a, b, c = (g.graph.add_initializer(n, torch.ones(4), const=False) for n in "abc")
    g.graph.outputs = [g.op("Add", g.op("Add", g.op("Add", x, a), b), c), b]
    assert DeduplicateInitializers().run(g.graph)
    assert list(g.graph.initializers) == ["a"]
    identities = [(n.op_type, [v.name for v in n.inputs], [v.name for v in n.outputs]) for n in g.graph.nodes[:2]]
    assert identities == [("Identity", ["a"], ["c"]), ("Identity", ["a"], ["b"])]
    assert [v.name for v in g.graph.outputs][1] == "b" and g.graph.outputs[1].producer is g.graph.nodes[1]
    np.testing.assert_array_equal(run(g.graph, {"x": X[:4]})[1], np.ones(4, np.float32))



# (id, names of three equal initializers, which of them are graph outputs too, Identity nodes expected)
MADE_CONSTANT_CASES = [
    # folded constants' initializers (GraphContext.materialize's names): nobody can know the names
    ("made_constants", ["onnx::Constant", "onnx::Constant_1", "onnx::Constant_2"], [], 0),
    # a graph output keeps its name
    ("made_constant_output", ["onnx::Constant", "onnx::Constant_1", "onnx::Constant_2"], [2], 1),
    # state_dict names (and names merely like a made one) stay, as Identity outputs
    ("state_dict_names", ["onnx::Constant", "w", "onnx::Constant_x"], [], 2),
]


@pytest.mark.parametrize("name,names,outputs,identities", MADE_CONSTANT_CASES,
                         ids=[c[0] for c in MADE_CONSTANT_CASES])
def test_made_constant_duplicates_need_no_identity(name, names, outputs, identities):
    g = context()
    x = g.graph.add_input("x", torch.float32, (4,))
    weights = [g.graph.add_initializer(n, torch.arange(4.0), const=False) for n in names]
    total = x
    for w in weights:
        total = g.op("Add", total, w)
    g.graph.outputs = [total] + [weights[k] for k in outputs]
    assert DeduplicateInitializers().run(g.graph)
    assert list(g.graph.initializers) == names[:1]
    assert [n.op_type for n in g.graph.nodes].count("Identity") == identities
    assert [v.name for v in g.graph.outputs[1:]] == [names[k] for k in outputs]
    results = run(g.graph, {"x": X[:4]})
    np.testing.assert_array_equal(results[0], X[:4] + 3 * np.arange(4, dtype=np.float32))
    for got in results[1:]:
        np.testing.assert_array_equal(got, np.arange(4, dtype=np.float32))

def _never_called(sources, start, stop):
    raise AssertionError("deduplication computed a lazy tensor")


def test_lazy_tensors_by_recipe_never_computed():
    g = context()
    x = g.graph.add_input("x", torch.float32, (4,))
    source, other = torch.ones(4), torch.ones(4)
    lazies = [LazyTensor((4,), torch.float32, _never_called, (s,)) for s in (source, source, other)]
    values = [g.graph.add_initializer(f"w{k}", t, const=False) for k, t in enumerate(lazies)]
    g.graph.outputs = [g.op("Add", g.op("Add", g.op("Add", x, values[0]), values[1]), values[2])]
    assert DeduplicateInitializers().run(g.graph)
    assert list(g.graph.initializers) == ["w0", "w2"]  # same recipe and sources; other sources stay
    first = g.graph.nodes[0]
    assert (first.op_type, [v.name for v in first.inputs], [v.name for v in first.outputs]) == ("Identity", ["w0"], ["w1"])
