"""Common-subexpression elimination on hand-built graphs: what merges, what must not, same results."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from optimize_helpers import context, op_types, run

from torchscript_onnx.pipeline.optimize.cse import NONDETERMINISTIC_OPS, CommonSubexpressions
from torchscript_onnx.pipeline.optimize.dead_code import DeadCode

X = np.arange(-6, 6, dtype=np.float32).reshape(3, 4) / 4
Y = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)


def _inputs(g):
    return g.graph.add_input("x", torch.float32, (3, 4)), g.graph.add_input("y", torch.float32, (3, 4))


def twice_add_constant(g):
    x, _ = _inputs(g)
    a = g.op("Add", x, g.constant(1.0))
    b = g.op("Add", x, g.constant(1.0))
    return [g.op("Mul", a, b)]


def chain_twice(g):  # merging Add makes the two Relus the same too
    x, y = _inputs(g)
    a = g.op("Relu", g.op("Add", x, y))
    b = g.op("Relu", g.op("Add", x, y))
    return [g.op("Sub", a, b)]


def input_order(g):
    x, y = _inputs(g)
    return [g.op("Add", g.op("Sub", x, y), g.op("Sub", y, x))]


def other_attributes(g):
    x, _ = _inputs(g)
    return [g.op("Add", g.op("LeakyRelu", x, alpha_f=0.1), g.op("LeakyRelu", x, alpha_f=0.2))]


def two_identities(g):  # each keeps a name (a graph output, a deduplicated initializer's)
    x, _ = _inputs(g)
    return [g.op("Add", g.op("Identity", x), g.op("Identity", x))]


def same_attributes(g):
    x, _ = _inputs(g)
    return [g.op("Add", g.op("LeakyRelu", x, alpha_f=0.1), g.op("LeakyRelu", x, alpha_f=0.1))]


def signed_zero_constants(g):  # -0.0 and 0.0 are different constants (1 / c differs)
    x, _ = _inputs(g)
    return [g.op("Add", g.op("Div", x, g.constant(0.0)), g.op("Div", x, g.constant(-0.0)))]


def constant_dtypes(g):  # equal numbers of other dtypes stay apart
    x, _ = _inputs(g)
    one_float = g.op("Add", x, g.constant(1.0))
    one_double = g.op("Cast", g.op("Add", g.op("Cast", x, to_i=11), g.constant(1.0, torch.float64)), to_i=1)
    return [g.op("Add", one_float, one_double)]


def large_equal_tensor_attributes(g):  # beyond the inline key size: hashed, then compared
    x, _ = _inputs(g)
    values = torch.linspace(0, 1, 100)
    a = g.op("Constant", value_t=values.clone())
    b = g.op("Constant", value_t=values.clone())
    return [g.op("Add", g.op("ReduceSum", x, keepdims_i=0), g.op("Sub", a, b))]


def large_different_tensor_attributes(g):
    x, _ = _inputs(g)
    values = torch.linspace(0, 1, 100)
    other = values.clone()
    other[-1] = 2.0
    a = g.op("Constant", value_t=values)
    b = g.op("Constant", value_t=other)
    return [g.op("Add", g.op("ReduceSum", x, keepdims_i=0), g.op("Sub", a, b))]


def both_outputs(g):  # each graph output keeps its own node (and name)
    x, y = _inputs(g)
    return [g.op("Add", x, y), g.op("Add", x, y)]


def first_is_output(g):  # a later duplicate may read the output's value
    x, y = _inputs(g)
    a = g.op("Add", x, y)
    return [a, g.op("Relu", g.op("Add", x, y))]


# name, builder, op types after CSE + dead code
CASES = [
    ("twice_add_constant", twice_add_constant, ["Constant", "Add", "Mul"]),
    ("chain_twice", chain_twice, ["Add", "Relu", "Sub"]),
    ("input_order", input_order, ["Sub", "Sub", "Add"]),
    ("other_attributes", other_attributes, ["LeakyRelu", "LeakyRelu", "Add"]),
    ("same_attributes", same_attributes, ["LeakyRelu", "Add"]),
    ("signed_zero_constants", signed_zero_constants, ["Constant", "Div", "Constant", "Div", "Add"]),
    ("constant_dtypes", constant_dtypes, ["Constant", "Add", "Cast", "Constant", "Add", "Cast", "Add"]),
    ("large_equal_tensor_attributes", large_equal_tensor_attributes, ["Constant", "ReduceSum", "Sub", "Add"]),
    ("large_different_tensor_attributes", large_different_tensor_attributes,
     ["Constant", "Constant", "ReduceSum", "Sub", "Add"]),
    ("both_outputs", both_outputs, ["Add", "Add"]),
    ("two_identities", two_identities, ["Identity", "Identity", "Add"]),
    ("first_is_output", first_is_output, ["Add", "Relu"]),
]


def _build(builder):
    g = context()
    g.graph.outputs = builder(g)
    return g.graph


@pytest.mark.parametrize("builder, expected", [pytest.param(b, e, id=n) for n, b, e in CASES])
def test_cse(builder, expected):
    feeds = {"x": X, "y": Y}
    reference = run(_build(builder), feeds)
    graph = _build(builder)
    changed = CommonSubexpressions().run(graph)
    DeadCode().run(graph)
    assert op_types(graph) == expected
    assert changed == (len(expected) < len(_build(builder).nodes))
    for want, got in zip(reference, run(graph, feeds)):
        np.testing.assert_array_equal(got, want)


def _random_node(g, op_type, x):
    if op_type in ("RandomNormal", "RandomUniform"):
        return g.op(op_type, shape_i=[3, 4], dtype_i=1)
    if op_type == "Bernoulli":
        return g.op(op_type, g.op("Sigmoid", x))
    if op_type == "Multinomial":
        return g.op("Cast", g.op(op_type, x, sample_size_i=2), to_i=1)
    if op_type == "Dropout":
        return g.op(op_type, x, g.constant(0.5), g.constant(True), outputs=2)[0]
    return g.op(op_type, x)


@pytest.mark.parametrize("op_type", sorted(NONDETERMINISTIC_OPS))
def test_random_ops_never_merge(op_type):
    g = context()
    x, _ = _inputs(g)
    first, second = _random_node(g, op_type, x), _random_node(g, op_type, x)
    out = g.op("Sub", first, second)
    # not every random op has a shape rule
    out.dtype, out.shape = torch.float32, (3, 2) if op_type == "Multinomial" else (3, 4)
    g.graph.outputs = [out]
    CommonSubexpressions().run(g.graph)
    DeadCode().run(g.graph)
    assert op_types(g.graph).count(op_type) == 2
    # Still a valid model (onnxruntime seeds unseeded nodes alike, so the draws may coincide).
    assert run(g.graph, {"x": X, "y": Y})[0].shape == out.shape


def test_custom_domain_never_merges():
    g = context()
    x, _ = _inputs(g)
    g.graph.outputs = [g.op("Add", g.op("my.domain::Noise", x), g.op("my.domain::Noise", x))]
    assert not CommonSubexpressions().run(g.graph)
    assert op_types(g.graph) == ["Noise", "Noise", "Add"]


def test_value_read_by_subgraph_keeps_its_node():
    from torchscript_onnx.builder.ir import Graph

    g = context()
    x, y = _inputs(g)
    a = g.op("Add", x, y)
    b = g.op("Add", x, y)
    body = Graph()
    body.nodes.append(body.add_node("Identity", "", [b], {}, 1))
    body.outputs = [body.nodes[0].outputs[0]]
    condition = g.op("ReduceMax", g.op("Greater", x, y), keepdims_i=0)
    g.graph.outputs = [g.op("Mul", a, g.op("If", condition, then_branch_g=body, else_branch_g=body))]
    CommonSubexpressions().run(g.graph)
    assert op_types(g.graph).count("Add") == 2


def test_loop_bodies_are_optimized_too():
    """CSE and dead code run inside If/Loop bodies: a scripted while loop recomputing y.size(0) // 2
    three times keeps one Shape per tensor it measures, and the result still matches PyTorch."""
    import io

    import onnx

    from tests.test_script_idioms import ShapeInLoop
    from torchscript_onnx import export
    from torchscript_onnx.verify import verify

    model, args = torch.jit.script(ShapeInLoop()), (torch.randn(8, 3),)
    verify(model, args, opset_version=17, other_inputs=[(torch.randn(8, 3) * 3,)])
    buffer = io.BytesIO()
    export(model, args, buffer, opset_version=17)
    loop = next(n for n in onnx.load_from_string(buffer.getvalue()).graph.node if n.op_type == "Loop")
    body_ops = [n.op_type for n in loop.attribute[0].g.node]
    assert body_ops.count("Shape") == 2, body_ops  # Shape(y) once, Shape(y_next) once
