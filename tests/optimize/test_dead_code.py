"""Dead-code elimination: unread nodes and initializers go, values read by subgraphs stay."""

from __future__ import annotations

import torch
from optimize_helpers import context, op_types

from torchscript_onnx.builder.ir import Graph
from torchscript_onnx.pipeline.optimize.dead_code import DeadCode


def test_unread_nodes_and_initializers_go():
    g = context()
    x = g.graph.add_input("x", torch.float32, (2,))
    unused = g.graph.add_initializer("unused", torch.ones(2), const=False)
    used = g.graph.add_initializer("used", torch.ones(2), const=False)
    g.op("Add", x, unused)
    g.graph.outputs = [g.op("Mul", x, used)]
    assert DeadCode().run(g.graph)
    assert op_types(g.graph) == ["Mul"]
    assert list(g.graph.initializers) == ["used"]
    assert not DeadCode().run(g.graph)


def test_values_read_inside_a_subgraph_stay():
    g = context()
    x = g.graph.add_input("x", torch.float32, (2,))
    weight = g.graph.add_initializer("w", torch.ones(2), const=False)
    outer = g.op("Neg", x)
    body = Graph()
    body.nodes.append(body.add_node("Add", "", [outer, weight], {}, 1))
    body.outputs = [body.nodes[0].outputs[0]]
    condition = g.op("ReduceMax", g.op("Greater", x, x), keepdims_i=0)
    g.graph.outputs = [g.op("If", condition, then_branch_g=body, else_branch_g=body)]
    DeadCode().run(g.graph)
    assert op_types(g.graph) == ["Neg", "Greater", "ReduceMax", "If"]
    assert list(g.graph.initializers) == ["w"]
