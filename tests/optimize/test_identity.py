"""Identity removal: readers read the input; graph outputs keep their names."""

from __future__ import annotations

import numpy as np
import torch
from optimize_helpers import context, op_types, run

from torchscript_onnx.pipeline.optimize.dead_code import DeadCode
from torchscript_onnx.pipeline.optimize.identity import RemoveIdentity

X = np.arange(6, dtype=np.float32).reshape(2, 3)


def _build(output_identity: bool):
    g = context()
    x = g.graph.add_input("x", torch.float32, (2, 3))
    y = g.op("Relu", g.op("Identity", g.op("Neg", x)))
    g.graph.outputs = [g.op("Identity", y) if output_identity else y]
    g.graph.rename(g.graph.outputs[0], "out")
    return g.graph


def test_inner_identity_removed():
    graph = _build(False)
    assert RemoveIdentity().run(graph)
    assert op_types(graph) == ["Neg", "Relu"]
    np.testing.assert_array_equal(run(graph, {"x": X})[0], np.maximum(-X, 0))


def test_output_identity_gives_its_name_to_the_producer():
    graph = _build(True)
    RemoveIdentity().run(graph)
    DeadCode().run(graph)
    assert op_types(graph) == ["Neg", "Relu"]
    assert [v.name for v in graph.outputs] == ["out"]
    np.testing.assert_array_equal(run(graph, {"x": X})[0], np.maximum(-X, 0))


def test_identity_of_an_input_that_is_an_output_stays():
    g = context()
    x = g.graph.add_input("x", torch.float32, (2, 3))
    g.graph.outputs = [g.op("Identity", x)]
    assert not RemoveIdentity().run(g.graph)
    assert op_types(g.graph) == ["Identity"]


def test_identity_read_by_a_subgraph_stays():
    from torchscript_onnx.builder.ir import Graph

    g = context()
    x = g.graph.add_input("x", torch.float32, (2, 3))
    copy = g.op("Identity", g.op("Neg", x))
    body = Graph()
    body.nodes.append(body.add_node("Relu", "", [copy], {}, 1))
    body.outputs = [body.nodes[0].outputs[0]]
    condition = g.op("ReduceMax", g.op("Greater", x, x), keepdims_i=0)
    g.graph.outputs = [g.op("If", condition, then_branch_g=body, else_branch_g=body)]
    assert not RemoveIdentity().run(g.graph)
    assert op_types(g.graph).count("Identity") == 1
