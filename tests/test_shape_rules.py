"""The shape rules agree with onnx.shape_inference (hypothesis property tests)."""

import onnx
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from torchscript_onnx.builder import shapes
from torchscript_onnx.builder.ir import Graph, Value

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


def _consts(*arrays):
    """Constant inputs for both sides: torch tensors for ours, initializers named c0, c1... for onnx."""
    tensors = [torch.tensor(a, dtype=torch.int64) for a in arrays]
    return tensors, [onnx.numpy_helper.from_array(t.numpy(), f"c{k}") for k, t in enumerate(tensors)]


@settings(max_examples=40, deadline=None)
@given(st.lists(DIMS, min_size=1, max_size=4), st.data())
def test_concat_matches_onnx(shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    other = list(shape)
    other[axis] = data.draw(DIMS)
    attrs = {"axis": axis}
    assert _ours("Concat", [shape, other], attrs) == _onnx_inferred("Concat", [shape, other], attrs)


@settings(max_examples=40, deadline=None)
@given(st.lists(DIMS, min_size=0, max_size=2), DIMS, DIMS, DIMS, st.booleans())
def test_matmul_matches_onnx(batch, m, k, n, vector_right):
    a, b = batch + [m, k], ([k] if vector_right else [k, n])
    assert _ours("MatMul", [a, b]) == _onnx_inferred("MatMul", [a, b])


@settings(max_examples=40, deadline=None)
@given(st.lists(DIMS, min_size=1, max_size=4), st.data())
def test_gather_matches_onnx(shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    index_shape = data.draw(st.lists(DIMS, min_size=0, max_size=2))
    indices = torch.zeros(index_shape, dtype=torch.int64)
    ours = _ours("Gather", [shape], {"axis": axis}, consts=[indices])
    theirs = _onnx_inferred("Gather", [shape], {"axis": axis},
                            extra_inputs=[onnx.numpy_helper.from_array(indices.numpy(), "c0")])
    assert ours == theirs


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 8), min_size=1, max_size=3), st.data())
def test_slice_matches_onnx(shape, data):
    axis = data.draw(st.integers(0, len(shape) - 1))
    start = data.draw(st.integers(-10, 10))
    end = data.draw(st.integers(-10, 10))
    step = data.draw(st.sampled_from([1, 2, 3, -1, -2]))
    ours_consts, onnx_consts = _consts([start], [end], [axis], [step])
    ours = _ours("Slice", [shape], consts=ours_consts)
    assert ours == _onnx_inferred("Slice", [shape], extra_inputs=onnx_consts)


@settings(max_examples=40, deadline=None)
@given(st.lists(DIMS, min_size=1, max_size=4), st.data())
def test_flatten_matches_onnx(shape, data):
    attrs = {"axis": data.draw(st.integers(-len(shape), len(shape)))}
    assert _ours("Flatten", [shape], attrs) == _onnx_inferred("Flatten", [shape], attrs)


@settings(max_examples=40, deadline=None)
@given(st.lists(DIMS, min_size=1, max_size=4), st.data())
def test_reduce_sum_matches_onnx(shape, data):
    axes = sorted(data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1)))
    keepdims = data.draw(st.sampled_from([0, 1]))
    ours_consts, onnx_consts = _consts(axes)
    ours = _ours("ReduceSum", [shape], {"keepdims": keepdims}, consts=ours_consts)
    assert ours == _onnx_inferred("ReduceSum", [shape], {"keepdims": keepdims}, extra_inputs=onnx_consts)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=3), st.data())
def test_slice_folding_matches_onnxruntime(shape, data):
    """Build-time folding of Slice on a constant gives what onnxruntime computes, negative steps
    included, where ONNX clamps a start before the first element to it and Python does not (and
    onnx.reference follows Python there, while shape inference and onnxruntime follow the spec)."""
    import onnxruntime

    from torchscript_onnx.builder import folding

    axis = data.draw(st.integers(0, len(shape) - 1))
    bounds = [data.draw(st.integers(-8, 8)), data.draw(st.integers(-8, 8)), axis,
              data.draw(st.sampled_from([1, 2, -1, -3]))]
    x = torch.arange(int(torch.tensor(shape).prod()), dtype=torch.float32).reshape(shape)
    ours = folding.fold("Slice", [x, *[torch.tensor([b]) for b in bounds]], {})[0]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)]
    inputs += [helper.make_tensor_value_info(n, TensorProto.INT64, [1]) for n in "seat"]
    graph = helper.make_graph([helper.make_node("Slice", ["x", *"seat"], ["y"])], "g", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {"x": x.numpy(), **{n: torch.tensor([b]).numpy() for n, b in zip("seat", bounds)}}
    (expected,) = session.run(None, feeds)
    assert ours.numpy().tolist() == expected.tolist()
