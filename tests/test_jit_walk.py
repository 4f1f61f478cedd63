"""jit_walk visits what the pybind iterators visit, in the same order, without exhausting them."""

from __future__ import annotations

import torch

from torchscript_onnx.builder import jit_walk
from torchscript_onnx.builder.mutation import iter_nodes


def _naive(block) -> list:
    found = []
    for node in block.nodes():
        found.append(node)
        for sub in node.blocks():
            found.extend(_naive(sub))
    return found


@torch.jit.script
def _nested(x: torch.Tensor, n: int) -> torch.Tensor:
    for i in range(n):
        if i > 2:
            x = x + 1
            with torch.no_grad():
                x = x * 2
        else:
            for j in range(i):
                x = x - j
    return x


def _traced_graph() -> torch._C.Graph:
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU())
    graph, _ = torch.jit._get_trace_graph(model.eval(), (torch.randn(1, 3, 8, 8),))
    return graph


def test_all_nodes_matches_the_iterators_on_nested_blocks():
    graph = _nested.graph
    expected = _naive(graph)
    assert any(list(n.blocks()) for n in expected)  # the graph has nested blocks to find
    assert jit_walk.all_nodes(graph) == expected
    assert iter_nodes(graph) == expected


def test_all_nodes_matches_the_iterators_on_a_trace():
    graph = _traced_graph()
    assert jit_walk.all_nodes(graph) == _naive(graph)


def test_inputs_outputs_blocks_match_the_iterators():
    for graph in (_nested.graph, _traced_graph()):
        for node in _naive(graph):
            assert jit_walk.inputs(node) == list(node.inputs())
            assert jit_walk.outputs(node) == list(node.outputs())
            assert jit_walk.blocks(node) == list(node.blocks())


def test_leaf_kinds_never_have_blocks():
    for graph in (_nested.graph, _traced_graph()):
        for node in _naive(graph):
            if not jit_walk.may_have_blocks(node.kind()):
                assert not list(node.blocks()), node.kind()


class _ConvBlocks(torch.nn.Module):
    """``n`` conv + batch norm + ReLU6 blocks, then a view whose size list is computed at runtime."""

    def __init__(self, n: int):
        super().__init__()
        self.body = torch.nn.Sequential(*[
            torch.nn.Sequential(torch.nn.Conv2d(4, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU6())
            for _ in range(n)])

    def forward(self, x):
        y = self.body(x)
        return y.view(y.size(0), -1)


def test_export_does_not_exhaust_a_pybind_iterator_per_node(monkeypatch):
    """Each exhausted ``node.inputs()``/``node.outputs()`` throws a C++ exception (see jit_walk's
    docstring): one per list in a conversion was a third of MobileNet-v2's convert time. Their
    number must not grow with the model."""
    import io

    from torchscript_onnx import export

    calls = {"inputs": 0, "outputs": 0}
    for name in calls:
        original = getattr(torch._C.Node, name)

        def counted(node, _original=original, _name=name):
            calls[_name] += 1
            return _original(node)

        monkeypatch.setattr(torch._C.Node, name, counted)
    counts = []
    for n in (2, 12):
        for name in calls:
            calls[name] = 0
        export(_ConvBlocks(n).eval(), (torch.randn(2, 4, 8, 8),), io.BytesIO(), dynamic_axes={"input.1": [0]})
        counts.append(dict(calls))
    assert counts[0] == counts[1], counts
