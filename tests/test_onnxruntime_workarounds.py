"""onnxruntime issues the export works around (docs/onnxruntime_workarounds.md lists them all).

For each issue here: a canary, a hand-built graph that shows the issue in the installed
onnxruntime (marked xfail, strict: when a new onnxruntime fixes it, the canary passes, the run
fails, and the workaround can go), and the exports it affects, run against eager PyTorch through
onnxruntime with its default session options (graph optimizations on, as users run it) at the
traced size and at others.
"""

from __future__ import annotations

import io
import pathlib
import re

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper

from tests.optable import Case, params, run_case
from torchscript_onnx import export
from torchscript_onnx.verification import run_onnxruntime, session

# ---------------------------------------------------------------------------------------------
# Range feeding Gather: onnxruntime's GatherToSliceFusion (on by default) rewrites it into
# Slice(start, end, step), and Slice reads a negative bound as counted from the end.


def _range_gather_model(end: int, step: int) -> bytes:
    """y = x[:, range(x.shape[1] - 1, end, step)]: Range from a runtime start into Gather."""
    one = helper.make_tensor("one", TensorProto.INT64, [], [1])
    bounds = [helper.make_tensor("end", TensorProto.INT64, [], [end]),
              helper.make_tensor("step", TensorProto.INT64, [], [step])]
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Gather", ["shape", "one"], ["n"], axis=0),
             helper.make_node("Sub", ["n", "one"], ["last"]),
             helper.make_node("Range", ["last", "end", "step"], ["index"]),
             helper.make_node("Gather", ["x", "index"], ["y"], axis=1)]
    graph = helper.make_graph(nodes, "range_gather", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, "n"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=[one, *bounds])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


@pytest.mark.xfail(strict=True, reason="onnxruntime fuses Range -> Gather into a Slice that reads end -1 as "
                                       "the last position: x[:, n-1:-1:-1] is empty")
def test_canary_range_counting_down_to_minus_one_into_gather():
    x = np.random.randn(2, 5).astype(np.float32)
    (got,) = run_onnxruntime(_range_gather_model(-1, -1), [x])
    np.testing.assert_array_equal(got, x[:, ::-1])


def test_range_gather_is_right_when_the_end_is_not_negative():
    """The same fusion is exact when no bound is negative: what the workaround relies on."""
    x = np.random.randn(2, 5).astype(np.float32)
    (got,) = run_onnxruntime(_range_gather_model(0, -1), [x])
    np.testing.assert_array_equal(got, x[:, :0:-1])


def _reverse_columns_after_squeeze(x):
    """The program of issue 23: a reversed arange over a dim of a squeezed, dynamic input."""
    y = x.squeeze()
    return torch.index_select(y, 1, torch.arange(y.shape[1] - 1, -1, -1))


def _columns(index_of):
    return lambda x: x[:, index_of(x.shape[0], x.shape[1])]


def _dynamic(shape, other, axes=(0, 1)):
    return dict(inputs=lambda: (torch.randn(*shape),), other_inputs=lambda: [(torch.randn(*other),)],
                export_options={"input_names": ["x"], "dynamic_axes": {"x": {a: f"d{a}" for a in axes}}})


# arange with runtime bounds whose result indexes a tensor (a Gather): every sign of start, end and
# step torch accepts; the traced and other sizes differ in every dynamic dim
RANGE_CASES = [
    Case("issue23_reversed_after_squeeze", _reverse_columns_after_squeeze, min_opset=9, opsets=(11, 13),
         **_dynamic((3, 1, 4, 3, 5), (2, 1, 6, 3, 4), axes=(0, 2, 3, 4))),
    Case("index_select_reversed", lambda x: torch.index_select(x, 1, torch.arange(x.shape[1] - 1, -1, -1)),
         min_opset=9, opsets=(11,), **_dynamic((3, 6), (2, 9))),
    Case("index_select_reversed_step2", lambda x: torch.index_select(x, 1, torch.arange(x.shape[1] - 1, -1, -2)),
         min_opset=9, opsets=(11,), **_dynamic((3, 6), (2, 9))),
    Case("index_select_reversed_int32",
         lambda x: torch.index_select(x, 1, torch.arange(x.shape[1] - 1, -1, -1, dtype=torch.int32)),
         min_opset=9, opsets=(11,), **_dynamic((3, 6), (2, 9))),
    Case("index_reversed", _columns(lambda rows, n: torch.arange(n - 1, -1, -1)), min_opset=9, opsets=(11,),
         **_dynamic((3, 6), (2, 9))),
    Case("index_negative_start", _columns(lambda rows, n: torch.arange(-n, 0)), min_opset=9, opsets=(11,),
         **_dynamic((3, 6), (2, 9))),
    Case("index_start_below_zero_end_above", _columns(lambda rows, n: torch.arange(-2, n - 2)), min_opset=9,
         opsets=(11,), **_dynamic((3, 6), (2, 9))),
    Case("index_runtime_negative_step", _columns(lambda rows, n: torch.arange(n - 1, -1, -rows)), min_opset=9,
         opsets=(11,), **_dynamic((2, 7), (3, 8))),
    Case("index_runtime_positive_step", _columns(lambda rows, n: torch.arange(0, n, rows)), min_opset=9,
         opsets=(11,), **_dynamic((2, 7), (3, 8))),
    Case("index_from_a_size", _columns(lambda rows, n: torch.arange(rows, n)), min_opset=9, opsets=(11,),
         **_dynamic((2, 7), (3, 8))),
    Case("float_counting_down", lambda x: torch.arange(x.shape[0] * 0.5, -1.0, -0.75) * x.sum(), min_opset=9,
         opsets=(11,), **_dynamic((5, 2), (8, 3))),
    Case("static_counting_down", lambda x: x[:, torch.arange(x.shape[1] - 1, -1, -2)], lambda: (torch.randn(3, 6),)),
]


@pytest.mark.parametrize("case, opset", params(RANGE_CASES))
def test_runtime_range_as_an_index(case, opset):
    run_case(case, opset)


def _exported(case: Case, opset: int) -> onnx.ModelProto:
    buffer = io.BytesIO()
    export(case.module(), case.inputs(), buffer, opset_version=opset, **case.export_options)
    return onnx.load_from_string(buffer.getvalue())


def _constants(proto: onnx.ModelProto) -> dict:
    values = {t.name: onnx.numpy_helper.to_array(t) for t in proto.graph.initializer}
    for node in proto.graph.node:
        if node.op_type == "Constant":
            values[node.output[0]] = onnx.numpy_helper.to_array(node.attribute[0].t)
    return values


@pytest.mark.parametrize("case", [c for c in RANGE_CASES if c.name != "static_counting_down"], ids=lambda c: c.name)
def test_no_range_counts_down_or_indexes_from_a_negative_start(case):
    """Every Range counts up by a constant step; one read by a Gather starts at a constant >= 0 or
    at a size (a Gather from a Shape)."""
    proto = _exported(case, 13)
    constants = _constants(proto)
    producers = {name: node for node in proto.graph.node for name in node.output}
    readers = {name: node for node in proto.graph.node for name in node.input}
    ranges = [node for node in proto.graph.node if node.op_type == "Range"]
    assert ranges
    for node in ranges:
        start, step = (constants.get(node.input[k]) for k in (0, 2))
        assert step is not None and step > 0, f"{case.name}: {node.name} steps by {step}"
        if readers[node.output[0]].op_type != "Gather":
            continue
        source = producers.get(node.input[0])
        is_size = source is not None and source.op_type == "Gather" and producers[source.input[0]].op_type == "Shape"
        assert is_size or (start is not None and start >= 0), f"{case.name}: {node.name} into a Gather from {start}"


# ---------------------------------------------------------------------------------------------
# Pooling pads: onnxruntime refuses a pad as long as the kernel ("Pad should be smaller than
# kernel"), which ONNX allows and the end padding of a dilated ceil-mode window can need.


@pytest.mark.xfail(strict=True, reason="onnxruntime refuses MaxPool pads as long as the kernel")
def test_canary_max_pool_pad_as_long_as_the_kernel():
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3], dilations=[2], strides=[3], pads=[1, 3])
    graph = helper.make_graph([node], "pool", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 7])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    session(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())


DILATED_CEIL_CASES = [
    Case("max_pool1d_dilated_ceil", torch.nn.MaxPool1d(3, stride=3, padding=1, dilation=2, ceil_mode=True),
         lambda: (torch.randn(2, 3, 7),), min_opset=10),
    Case("max_pool3d_dilated_ceil", torch.nn.MaxPool3d((3, 2, 2), (2, 2, 3), (1, 1, 0), (1, 2, 1), ceil_mode=True),
         lambda: (torch.randn(1, 2, 5, 6, 5),), min_opset=10),
]


@pytest.mark.parametrize("case, opset", params(DILATED_CEIL_CASES))
def test_dilated_ceil_mode_pooling_loads(case, opset):
    run_case(case, opset)


# ---------------------------------------------------------------------------------------------
# OneHot with a depth of 0: onnxruntime fails ("Depth is negative"). The one-hot masks of the
# scatter reductions compare positions with a Range of slot numbers instead (opset 11 on).


@pytest.mark.xfail(strict=True, reason="onnxruntime's OneHot refuses a depth of 0")
def test_canary_one_hot_of_depth_zero():
    depth = helper.make_tensor("depth", TensorProto.INT64, [], [0])
    values = helper.make_tensor("values", TensorProto.FLOAT, [2], [0.0, 1.0])
    node = helper.make_node("OneHot", ["i", "depth", "values"], ["y"], axis=-1)
    graph = helper.make_graph([node], "one_hot", [helper.make_tensor_value_info("i", TensorProto.INT64, [2, 0])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=[depth, values])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)]).SerializeToString()
    (got,) = run_onnxruntime(model, [np.zeros((2, 0), dtype=np.int64)])
    assert got.shape == (2, 0, 0)


def _scatter_inputs(columns: int):
    return (torch.randn(2, columns), torch.randint(0, max(columns, 1), (2, columns)), torch.randn(2, columns))


ONE_HOT_CASES = [
    Case("scatter_add_into_an_empty_dim", lambda x, i, s: x.scatter_add(1, i, s), lambda: _scatter_inputs(3),
         min_opset=11, other_inputs=lambda: [_scatter_inputs(0), _scatter_inputs(5)],
         export_options={"input_names": ["x", "i", "s"],
                         "dynamic_axes": {"x": {1: "n"}, "i": {1: "n"}, "s": {1: "n"}}}),
]


@pytest.mark.parametrize("case, opset", params(ONE_HOT_CASES))
def test_scatter_reduction_over_an_empty_dim(case, opset):
    run_case(case, opset)


# ---------------------------------------------------------------------------------------------
# docs/onnxruntime_workarounds.md names a test for each workaround: those names must exist.

ROOT = pathlib.Path(__file__).resolve().parent.parent
TEST_REFERENCE = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


def test_the_workarounds_page_names_existing_tests():
    """Each ``tests/file.py::name`` on the page is a test function or a case name in that file."""
    page = (ROOT / "docs" / "onnxruntime_workarounds.md").read_text()
    references = TEST_REFERENCE.findall(page)
    assert len(references) >= 20
    missing = []
    for path, name in references:
        source = (ROOT / path).read_text() if (ROOT / path).is_file() else ""
        if f"def {name}(" not in source and f'"{name}"' not in source:
            missing.append(f"{path}::{name}")
    assert not missing, f"the page names tests that do not exist: {missing}"
