"""The shape rules agree with onnx.shape_inference (hypothesis property tests)."""

import onnx
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from torchscript_onnx import shapes
from torchscript_onnx.ir import Graph, Value

DIMS = st.integers(min_value=1, max_value=5)


def _onnx_inferred(op_type: str, input_shapes, attrs=None, extra_inputs=(), opset=17):
    inputs = [helper.make_tensor_value_info(f"x{k}", TensorProto.FLOAT, s) for k, s in enumerate(input_shapes)]
    names = [i.name for i in inputs] + [t.name for t in extra_inputs]
    node = helper.make_node(op_type, names, ["y"], **(attrs or {}))
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=list(extra_inputs))
    model = onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]),
                                              strict_mode=True)
    dims = model.graph.output[0].type.tensor_type.shape.dim
    return tuple(d.dim_value for d in dims)


def _ours(op_type: str, input_shapes, attrs=None, consts=()):
    graph = Graph()
    values = [Value(f"x{k}", torch.float32, tuple(s)) for k, s in enumerate(input_shapes)]
    values += [Value("c", c.dtype, tuple(c.shape), c) for c in consts]
    node = graph.add_node(op_type, "", values, {k: ("is" if isinstance(v, list) else "i", v)
                                                for k, v in (attrs or {}).items()}, 1)
    shapes.infer(node)
    return node.outputs[0].shape


@st.composite
def broadcastable_pair(draw):
    rank = draw(st.integers(1, 4))
    full = draw(st.lists(DIMS, min_size=rank, max_size=rank))
    a = [d if draw(st.booleans()) else 1 for d in full]
    b = [d if draw(st.booleans()) else 1 for d in full][draw(st.integers(0, rank - 1)):]
    return a, b


@settings(max_examples=40, deadline=None)
@given(broadcastable_pair())
def test_broadcast_matches_onnx(pair):
    a, b = pair
    assert _ours("Add", [a, b]) == _onnx_inferred("Add", [a, b])


@settings(max_examples=40, deadline=None)
@given(st.lists(DIMS, min_size=1, max_size=5).flatmap(
    lambda s: st.tuples(st.just(s), st.permutations(list(range(len(s)))))))
def test_transpose_matches_onnx(case):
    shape, perm = case
    assert _ours("Transpose", [shape], {"perm": list(perm)}) == _onnx_inferred("Transpose", [shape], {"perm": list(perm)})


@settings(max_examples=40, deadline=None)
@given(st.lists(DIMS, min_size=1, max_size=4), st.data())
def test_unsqueeze_matches_onnx(shape, data):
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    axes = torch.tensor([axis], dtype=torch.int64)
    ours = _ours("Unsqueeze", [shape], consts=[axes])
    theirs = _onnx_inferred("Unsqueeze", [shape], extra_inputs=[onnx.numpy_helper.from_array(axes.numpy(), "c")])
    assert ours == theirs


@settings(max_examples=40, deadline=None)
@given(st.lists(DIMS, min_size=1, max_size=4), st.data())
def test_reshape_with_minus_one_matches_onnx(shape, data):
    total = 1
    for d in shape:
        total *= d
    divisors = [d for d in range(1, total + 1) if total % d == 0]
    first = data.draw(st.sampled_from(divisors))
    target = torch.tensor([first, -1], dtype=torch.int64)
    ours = _ours("Reshape", [shape], consts=[target])
    theirs = _onnx_inferred("Reshape", [shape], extra_inputs=[onnx.numpy_helper.from_array(target.numpy(), "c")])
    assert ours == theirs
