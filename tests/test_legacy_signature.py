"""The whole ``torch.onnx.export`` signature, legacy warnings and torch's error classes (``install()``: test_install.py).

A call that works with ``torch.onnx.export(..., dynamo=False)`` must work with ours unchanged;
the dynamo-era keywords each do what their name says (or are refused with a clear error).
"""

import os
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from torch.export import Dim

import torchscript_onnx as tso


class TwoInputs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 3)

    def forward(self, x, pair):
        return self.linear(x) + pair[0].sum() * pair[1].mean()


def _two_inputs_args():
    return (torch.randn(2, 4), [torch.randn(5, 2), torch.randn(5, 3)])


def _run(path_or_proto, feeds):
    model = path_or_proto if isinstance(path_or_proto, str) else path_or_proto.SerializeToString()
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


torch.library.define("tso_signature::opaque", "(Tensor x) -> Tensor")
torch.library.impl("tso_signature::opaque", "CPU", lambda x: x.clone())


class Unsupported(torch.nn.Module):
    """An op no exporter knows."""

    def forward(self, x):
        return torch.ops.tso_signature.opaque(x)


def _input_dims(proto):
    return {i.name: [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim] for i in proto.graph.input}


# -- the dynamo-era keywords ---------------------------------------------------------------------


def test_legacy_call_with_every_new_keyword(tmp_path):
    model, x = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.Tanh()).eval(), torch.randn(2, 64)
    path = str(tmp_path / "m.onnx")
    tso.export(model, (x,), path, dynamo=False, external_data=True, report=False, verify=False, optimize=True)
    assert sorted(os.listdir(tmp_path)) == ["m.onnx", "m.onnx.data"]
    onnx.checker.check_model(path, full_check=True)
    (got,) = _run(path, {onnx.load(path).graph.input[0].name: x.numpy()})
    np.testing.assert_allclose(got, model(x).detach().numpy(), rtol=1e-5, atol=1e-6)


# (id, dynamic_shapes, the equivalent input_names and dynamic_axes)
DYNAMIC_SHAPES = [
    ("dict-of-dims", {"x": {0: Dim("batch")}}, ["x"], {"x": {0: "batch"}}),
    ("dict-of-names", {"x": {0: "batch", 1: None}}, ["x"], {"x": {0: "batch"}}),
    ("tuple-per-axis", ({0: "n"}, None), ["x"], {"x": {0: "n"}}),
    ("tuple-of-axes", (("n", None), None), ["x"], {"x": {0: "n"}}),
    ("auto", {"x": {0: Dim.AUTO}}, ["x"], {"x": {0: "x_dim_0"}}),
    ("static-hint", {"x": {0: Dim.STATIC}}, None, None),
    ("nested-list", {"pair": [{0: "rows"}, {0: "rows"}]}, ["x", "pair_0", "pair_1"],
     {"pair_0": {0: "rows"}, "pair_1": {0: "rows"}}),
    ("second-only", {"pair": [None, {0: "rows"}]}, ["x", "pair_0", "pair_1"], {"pair_1": {0: "rows"}}),
]


@pytest.mark.parametrize("dynamic_shapes, input_names, dynamic_axes",
                         [pytest.param(*row[1:], id=row[0]) for row in DYNAMIC_SHAPES])
def test_dynamic_shapes_give_the_inputs_of_the_equivalent_dynamic_axes(dynamic_shapes, input_names, dynamic_axes):
    model, args = TwoInputs().eval(), _two_inputs_args()
    ours = tso.export(model, args, None, dynamic_shapes=dynamic_shapes)
    equivalent = tso.export(model, args, None, input_names=input_names, dynamic_axes=dynamic_axes)
    assert _input_dims(ours) == _input_dims(equivalent)
    assert [i.name for i in ours.graph.input] == [i.name for i in equivalent.graph.input]


def test_dynamic_shapes_run_at_other_sizes():
    model = TwoInputs().eval()
    proto = tso.export(model, _two_inputs_args(), None, dynamic_shapes={"x": {0: Dim("batch")},
                                                                          "pair": [{0: "rows"}, {0: "rows"}]})
    x, pair = torch.randn(7, 4), [torch.randn(3, 2), torch.randn(3, 3)]
    (got,) = _run(proto, {"x": x.numpy(), "pair_0": pair[0].numpy(), "pair_1": pair[1].numpy()})
    np.testing.assert_allclose(got, model(x, pair).detach().numpy(), rtol=1e-5, atol=1e-5)


def test_verify_compares_with_pytorch_and_writes_nothing_on_a_mismatch(tmp_path):
    model, x = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()).eval(), torch.randn(2, 4)
    tso.export(model, (x,), str(tmp_path / "ok.onnx"), verify=True)
    assert os.path.exists(tmp_path / "ok.onnx")

    def wrong_relu(g, input):  # a deliberately wrong conversion: verify must catch it
        return g.op("Sigmoid", input)

    tso.register_custom_op_symbolic("aten::relu", wrong_relu, 9)
    try:
        with pytest.raises(AssertionError):
            tso.export(model, (x,), str(tmp_path / "bad.onnx"), verify=True)
    finally:
        tso.unregister_custom_op_symbolic("aten::relu", 9)
    assert not os.path.exists(tmp_path / "bad.onnx")


def test_optimize_false_skips_the_passes_and_stays_correct():
    class ConvBn(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.bn = torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4)

        def forward(self, x):
            return self.bn(self.conv(x))

    model, x = ConvBn().eval(), torch.randn(1, 3, 8, 8)
    optimized = tso.export(model, (x,), None)
    plain = tso.export(model, (x,), None, optimize=False)
    assert [n.op_type for n in optimized.graph.node] == ["Conv"]
    assert "BatchNormalization" in [n.op_type for n in plain.graph.node]
    for proto in (optimized, plain):
        (got,) = _run(proto, {proto.graph.input[0].name: x.numpy()})
        np.testing.assert_allclose(got, model(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_report_profile_and_graph_dump_go_to_artifacts_dir(tmp_path, capsys):
    model, x = torch.nn.Linear(4, 3).eval(), torch.randn(2, 4)
    tso.export(model, (x,), str(tmp_path / "m.onnx"), report=True, profile=True, dump_exported_program=True,
               artifacts_dir=tmp_path / "artifacts")
    files = sorted(os.listdir(tmp_path / "artifacts"))
    assert [f.rsplit("_", 1)[-1] for f in files] == ["success.md", "torchscript.txt"]
    text = (tmp_path / "artifacts" / files[0]).read_text()
    assert "| Gemm | 1 |" in text and "## Profile" in text
    assert "aten::linear" in (tmp_path / "artifacts" / files[1]).read_text()


def test_a_failed_export_still_writes_its_report(tmp_path):
    with pytest.raises(tso.UnsupportedOperatorError) as info:
        tso.export(Unsupported(), (torch.ones(2, 3),), str(tmp_path / "m.onnx"), report=True, artifacts_dir=tmp_path)
    (report,) = [f for f in os.listdir(tmp_path) if f.endswith(".md")]
    assert report.endswith("_failure.md") and not os.path.exists(tmp_path / "m.onnx")
    assert "UnsupportedOperatorError" in (tmp_path / report).read_text()
    assert any(report in note for note in info.value.__notes__)


def test_profile_without_report_prints(capsys):
    tso.export(torch.nn.Linear(4, 3), (torch.randn(2, 4),), None, profile=True)
    assert "cumulative" in capsys.readouterr().out


# -- warnings where legacy warns -----------------------------------------------------------------


# (id, dynamic_axes given with input_names=["x"], output_names=["y"], the warning's text, strict's error)
LIST_FORM = "Automatically generated names will be applied to each dynamic axes of input x"
LEGACY_WARNINGS = [
    ("unknown-name", {"nope": {0: "b"}}, "Provided key nope for dynamic axes is not a valid input/output name",
     "Provided key nope"),
    ("list-form", {"x": [0]}, LIST_FORM, LIST_FORM),
    ("axis-twice", {"x": [0, 0]}, "Duplicate dynamic axis index 0 was provided for input x", LIST_FORM),
]


@pytest.mark.parametrize("dynamic_axes, text, strict_text",
                         [pytest.param(*row[1:], id=row[0]) for row in LEGACY_WARNINGS])
def test_legacy_warnings_are_warnings_and_strict_errors(dynamic_axes, text, strict_text):
    model, x = torch.nn.Linear(4, 3), torch.randn(2, 4)
    with pytest.warns(tso.OnnxExporterWarning, match=text) as record:
        proto = tso.export(model, (x,), None, input_names=["x"], output_names=["y"], dynamic_axes=dynamic_axes)
    assert proto.graph.input[0].name == "x"
    assert {w.filename for w in record if text in str(w.message)} == {__file__}  # points at the caller
    with pytest.raises(ValueError, match=strict_text):
        tso.export(model, (x,), None, input_names=["x"], output_names=["y"], dynamic_axes=dynamic_axes, strict=True)


def test_generated_dim_names_follow_legacy():
    with pytest.warns(tso.OnnxExporterWarning):
        proto = tso.export(torch.nn.Linear(4, 3), (torch.randn(2, 4),), None, input_names=["x"],
                           dynamic_axes={"x": [0]})
    assert _input_dims(proto)["x"] == ["x_dynamic_axes_1", 4]


# -- torch's error classes -----------------------------------------------------------------------


def test_errors_are_torch_onnx_errors():
    assert issubclass(tso.OnnxExporterError, torch.onnx.errors.OnnxExporterError)
    assert issubclass(tso.SymbolicValueError, torch.onnx.errors.SymbolicValueError)
    assert issubclass(tso.UnsupportedOperatorError, torch.onnx.errors.UnsupportedOperatorError)
    assert issubclass(tso.OnnxExporterWarning, torch.onnx.errors.OnnxExporterWarning)
    with pytest.raises(torch.onnx.errors.OnnxExporterError, match="tso_signature::opaque"):
        tso.export(Unsupported(), (torch.ones(2, 3),), None)


# -- which inputs stay graph inputs ------------------------------------------------------------


class _Pair(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x, y):
        return self.fn(x, y)


# (id, forward of (x, y)): inputs read only for a static size or dtype leave the graph, inputs that
# legacy reads at runtime (its Shape, a *_like random op) stay, as callers feed inputs by position
INPUT_USES = [
    ("zeros_like", lambda x, y: torch.zeros_like(x) + y),
    ("full_like", lambda x, y: torch.full_like(x, 2.0) + y),
    ("rand_like", lambda x, y: torch.rand_like(x) * 0 + y),
    ("expand_as", lambda x, y: y.expand_as(x)),
    ("reshape_as", lambda x, y: y.reshape_as(x)),
    ("view_as", lambda x, y: y.view_as(x)),
    ("new_zeros", lambda x, y: x.new_zeros(x.shape) + y),
    ("fill_", lambda x, y: x.clone().fill_(3) + y),
    ("type_as", lambda x, y: y.type_as(x)),
    ("size", lambda x, y: y.reshape(x.size(0), -1)),
    ("numel", lambda x, y: y * x.numel()),
    ("full_like-runtime-value", lambda x, y: torch.full_like(x, y.sum())),
    ("fill_-runtime-value", lambda x, y: x.clone().fill_(y.sum())),
]
SCALAR_X = [  # a 0-d x: legacy keeps it (it does not fold the Shape of a 0-d tensor)
    ("full_like-0d", lambda x, y: torch.full_like(x, 1.3, dtype=torch.int) + y.long()),
    ("zeros_like-0d", lambda x, y: torch.zeros_like(x) + y),
]


@pytest.mark.parametrize("fn, x_shape", [pytest.param(row[1], (2, 3), id=row[0]) for row in INPUT_USES]
                         + [pytest.param(row[1], (), id=row[0]) for row in SCALAR_X])
def test_graph_inputs_are_the_ones_legacy_keeps(fn, x_shape, tmp_path):
    import io

    args = (torch.randn(x_shape), torch.randn(2, 3))
    ours = tso.export(_Pair(fn), args, None, opset_version=17)
    legacy = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(_Pair(fn), args, legacy, dynamo=False, opset_version=17)
    assert len(ours.graph.input) == len(onnx.load_from_string(legacy.getvalue()).graph.input)
    feeds = dict(zip([i.name for i in ours.graph.input], [a.numpy() for a in args[-len(ours.graph.input):]]))
    (got,) = _run(ours, feeds)
    if fn is not INPUT_USES[2][1]:  # rand_like: random values
        np.testing.assert_allclose(got, fn(*args).numpy(), rtol=1e-6, atol=1e-6)


def test_default_input_names_never_collide_with_weight_names():
    """Inputs named after their reader (onnx::LSTM_1) must not take a name a weight already has."""

    class Lstm(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = torch.nn.LSTM(5, 4, 1)

        def forward(self, x, h0, c0):
            return self.rnn(x, (h0, c0))

    model, args = Lstm().eval(), (torch.randn(3, 2, 5), torch.randn(1, 2, 4), torch.randn(1, 2, 4))
    proto = tso.export(model, args, None, opset_version=17)
    names = [i.name for i in proto.graph.input] + [t.name for t in proto.graph.initializer]
    assert len(names) == len(set(names))
    got = _run(proto, {i.name: a.numpy() for i, a in zip(proto.graph.input, args)})
    want = model(*args)
    for g, w in zip(got, [want[0], *want[1]]):
        np.testing.assert_allclose(g, w.detach().numpy(), rtol=1e-5, atol=1e-6)
