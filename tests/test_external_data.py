"""External data: weights in ``<model>.data`` next to the model, for models past protobuf's 2 GiB.

Over-the-limit cases lower ``serialize.PROTOBUF_LIMIT`` to a few KB instead of allocating 2 GiB.
Every written model is checked by ``onnx.checker`` on its path, loaded with its external data by
``onnx.load``, and run by onnxruntime against eager PyTorch.
"""

from __future__ import annotations

import dataclasses
import io
import os
from collections.abc import Callable

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

import torchscript_onnx as tso
from torchscript_onnx.pipeline import serialize
from torchscript_onnx.builder.lazy import LazyTensor

SMALL_LIMIT = 4096  # stands in for 2 GiB: every model below is larger


class Mlp(torch.nn.Module):
    """Weights of every size class: 512 B and 1200 B biases, a 32 KiB and a 150 KiB weight."""

    def __init__(self):
        super().__init__()
        self.first = torch.nn.Linear(64, 128)
        self.second = torch.nn.Linear(128, 300)

    def forward(self, x):
        return self.second(torch.relu(self.first(x)))


class ConvBn(torch.nn.Module):
    """Conv + batchnorm: folded (eval) into lazy initializers, streamed in row blocks (144 KiB weight)."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(64, 64, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(64)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-1, 1)
            self.bn.running_var.uniform_(0.5, 2)

    def forward(self, x):
        return self.bn(self.conv(x))


class Embedder(torch.nn.Module):
    """An int64 input, an embedding table, a half-precision buffer (other dtypes than fp32), a small shift."""

    def __init__(self):
        super().__init__()
        self.table = torch.nn.Embedding(500, 32)
        self.register_buffer("scale", torch.rand(32, 32).half())
        self.shift = torch.nn.Parameter(torch.randn(32))

    def forward(self, ids):
        return self.table(ids) @ self.scale.float() + self.shift


@dataclasses.dataclass
class Case:
    name: str
    make: Callable[[], torch.nn.Module]
    inputs: Callable[[], tuple]


CASES = [
    Case("mlp", Mlp, lambda: (torch.randn(5, 64),)),
    Case("conv_bn_lazy", ConvBn, lambda: (torch.randn(1, 64, 6, 6),)),
    Case("embedding_fp16", Embedder, lambda: (torch.randint(0, 500, (3, 7)),)),
]


def _build(case: Case):
    torch.manual_seed(0)
    model = case.make().eval()
    inputs = case.inputs()
    return model, inputs, tso.build(model, inputs)


def _run(path, inputs) -> list[np.ndarray]:
    session = ort.InferenceSession(os.fspath(path), providers=["CPUExecutionProvider"])
    feeds = {i.name: x.numpy() for i, x in zip(session.get_inputs(), inputs)}
    return session.run(None, feeds)


def _check_matches_eager(path, model, inputs) -> None:
    with torch.no_grad():
        expected = model(*inputs)
    (got,) = _run(path, inputs)
    np.testing.assert_allclose(got, expected.numpy(), rtol=1e-4, atol=1e-4)


def _external(proto: onnx.ModelProto) -> dict[str, dict[str, str]]:
    """Initializer name -> its external_data entries, for those stored externally."""
    return {
        t.name: {e.key: e.value for e in t.external_data}
        for t in proto.graph.initializer
        if t.data_location == onnx.TensorProto.EXTERNAL
    }


def _check_layout(path, graph) -> None:
    """Large tensors external, small ones inline; offsets aligned, no overlaps, file size exact."""
    proto = onnx.load(os.fspath(path), load_external_data=False)
    external = _external(proto)
    data_file = os.path.basename(path) + ".data"
    sizes = {name: t.numel() * t.element_size() for name, t in graph.initializers.items()}
    assert set(external) == {name for name, n in sizes.items() if n >= serialize.EXTERNAL_THRESHOLD}
    assert set(external) != set(sizes), "a model with only large tensors tests nothing inline"
    spans = []
    for name, entry in external.items():
        offset, length = int(entry["offset"]), int(entry["length"])
        assert entry["location"] == data_file
        assert length == sizes[name]
        assert offset % (serialize.ALIGNMENT if length >= serialize.ALIGNMENT else serialize.PAGE_SIZE) == 0
        spans.append((offset, offset + length))
    spans.sort()
    assert all(end <= start for (_, end), (start, _) in zip(spans, spans[1:]))
    assert os.path.getsize(os.path.join(os.path.dirname(path), data_file)) == spans[-1][1]


def _check_loaded_weights(path, graph) -> None:
    """onnx.load with external data gives back every initializer's values."""
    loaded = {t.name: onnx.numpy_helper.to_array(t) for t in onnx.load(os.fspath(path)).graph.initializer}
    assert set(loaded) == set(graph.initializers)
    for name, tensor in graph.initializers.items():
        values = tensor.materialize() if isinstance(tensor, LazyTensor) else tensor
        np.testing.assert_array_equal(loaded[name], values.detach().numpy())


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("mode", ["external_data=True", "auto_over_limit"])
def test_external_round_trip(case, mode, tmp_path, monkeypatch):
    model, inputs, exported = _build(case)
    path = tmp_path / "m.onnx"
    if mode == "auto_over_limit":
        monkeypatch.setattr(serialize, "PROTOBUF_LIMIT", SMALL_LIMIT)
        serialize.save(exported.model, exported.graph, path)
    else:
        serialize.save(exported.model, exported.graph, path, external_data=True)
    assert sorted(os.listdir(tmp_path)) == ["m.onnx", "m.onnx.data"]  # no temporaries left
    onnx.checker.check_model(os.fspath(path), full_check=True)
    _check_layout(path, exported.graph)
    _check_loaded_weights(path, exported.graph)
    _check_matches_eager(path, model, inputs)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("external_data", [None, False])
def test_under_the_limit_one_file(case, external_data, tmp_path):
    model, inputs, exported = _build(case)
    path = tmp_path / "m.onnx"
    serialize.save(exported.model, exported.graph, path, external_data=external_data)
    assert os.listdir(tmp_path) == ["m.onnx"]
    assert path.read_bytes() == exported.to_bytes()
    assert not _external(onnx.load(os.fspath(path)))
    _check_matches_eager(path, model, inputs)


def test_false_over_the_limit_refuses_before_writing(tmp_path, monkeypatch):
    _, _, exported = _build(CASES[0])
    monkeypatch.setattr(serialize, "PROTOBUF_LIMIT", SMALL_LIMIT)
    with pytest.raises(ValueError, match=r"2 GiB limit.*external_data=True"):
        serialize.save(exported.model, exported.graph, tmp_path / "m.onnx", external_data=False)
    assert os.listdir(tmp_path) == []


def test_to_bytes_over_the_limit_refuses(monkeypatch):
    _, _, exported = _build(CASES[0])
    monkeypatch.setattr(serialize, "PROTOBUF_LIMIT", SMALL_LIMIT)
    with pytest.raises(ValueError, match="2 GiB limit.*save it to a path"):
        exported.to_bytes()
    with pytest.raises(ValueError, match="2 GiB limit"):
        exported.to_model_proto()


def test_limit_is_compared_with_the_exact_size(monkeypatch):
    """The size computed before writing is the size written: one byte over switches to external."""
    _, _, exported = _build(CASES[0])
    size = len(exported.to_bytes())
    assert serialize._model_size(exported.model, serialize._layout(exported.graph, None)) == size
    monkeypatch.setattr(serialize, "PROTOBUF_LIMIT", size + 1)
    assert len(exported.to_bytes()) == size
    monkeypatch.setattr(serialize, "PROTOBUF_LIMIT", size)
    with pytest.raises(ValueError, match="2 GiB limit"):
        exported.to_bytes()


@pytest.mark.parametrize("f", [io.BytesIO, lambda: None], ids=["BytesIO", "None"])
def test_external_data_true_needs_a_path(f):
    _, _, exported = _build(CASES[0])
    stream = f()
    with pytest.raises(ValueError, match=r"f must be a path.*got f="):
        serialize.save(exported.model, exported.graph, stream, external_data=True)
    assert stream is None or stream.getvalue() == b""


def test_file_object_over_the_limit_refuses_before_writing(monkeypatch):
    _, _, exported = _build(CASES[0])
    monkeypatch.setattr(serialize, "PROTOBUF_LIMIT", SMALL_LIMIT)
    stream = io.BytesIO()
    with pytest.raises(ValueError, match="f is a BytesIO: pass a path"):
        serialize.save(exported.model, exported.graph, stream)
    assert stream.getvalue() == b""


@pytest.mark.parametrize("value", ["yes", 1, "per_tensor"])
def test_external_data_value_is_checked(value, tmp_path):
    _, _, exported = _build(CASES[0])
    with pytest.raises(TypeError, match="external_data must be"):
        serialize.save(exported.model, exported.graph, tmp_path / "m.onnx", external_data=value)
    assert os.listdir(tmp_path) == []


def test_only_small_tensors_write_no_data_file(tmp_path):
    """external_data=True keeps tensors under 1 KiB inline; with nothing left, there is no data file."""
    model = torch.nn.Linear(4, 3).eval()
    inputs = (torch.randn(2, 4),)
    exported = tso.build(model, inputs)
    path = tmp_path / "m.onnx"
    serialize.save(exported.model, exported.graph, path, external_data=True)
    assert os.listdir(tmp_path) == ["m.onnx"]
    _check_matches_eager(path, model, inputs)


def _write_previous_pair(tmp_path) -> dict[str, bytes]:
    (tmp_path / "m.onnx").write_bytes(b"previous model")
    (tmp_path / "m.onnx.data").write_bytes(b"previous data")
    return {"m.onnx": b"previous model", "m.onnx.data": b"previous data"}


def _files(folder) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in os.listdir(folder)}


@pytest.mark.parametrize("existing", [False, True], ids=["new", "existing_pair"])
@pytest.mark.parametrize("failing", ["write_data", "write_model", "second_rename"])
def test_failure_leaves_no_files_and_keeps_the_previous_pair(existing, failing, tmp_path, monkeypatch):
    _, _, exported = _build(CASES[0])
    before = _write_previous_pair(tmp_path) if existing else {}
    path = tmp_path / "m.onnx"
    if failing == "second_rename":
        real_replace = os.replace

        def replace(src, dst):
            if os.fspath(dst) == os.fspath(path):
                raise OSError("rename failed")
            real_replace(src, dst)

        monkeypatch.setattr(serialize.os, "replace", replace)
    else:
        def write_half_then_fail(*args):
            stream = args[2] if failing == "write_model" else args[1]  # (model, graph, stream, ...) / (fields, stream)
            stream.write(b"partial")
            raise OSError("disk full")

        monkeypatch.setattr(serialize, failing, write_half_then_fail)
    with pytest.raises(OSError, match="disk full|rename failed"):
        serialize.save(exported.model, exported.graph, path, external_data=True)
    assert _files(tmp_path) == before


def test_replacing_a_pair_replaces_both(tmp_path):
    path = tmp_path / "m.onnx"
    _write_previous_pair(tmp_path)
    model, inputs, exported = _build(CASES[0])
    serialize.save(exported.model, exported.graph, path, external_data=True)
    assert sorted(os.listdir(tmp_path)) == ["m.onnx", "m.onnx.data"]
    _check_matches_eager(path, model, inputs)


def test_data_file_name_follows_the_model_in_a_subfolder(tmp_path):
    """A path in another folder, given as a str: the location stays relative to the model."""
    model, inputs, exported = _build(CASES[0])
    folder = tmp_path / "out"
    folder.mkdir()
    path = os.path.join(str(folder), "model.v2.onnx")
    serialize.save(exported.model, exported.graph, path, external_data=True)
    assert sorted(os.listdir(folder)) == ["model.v2.onnx", "model.v2.onnx.data"]
    onnx.checker.check_model(path)
    _check_layout(path, exported.graph)
    _check_matches_eager(path, model, inputs)


def test_data_path_that_is_a_directory_refuses(tmp_path):
    _, _, exported = _build(CASES[0])
    (tmp_path / "m.onnx.data").mkdir()
    with pytest.raises(IsADirectoryError, match="m.onnx.data"):
        serialize.save(exported.model, exported.graph, tmp_path / "m.onnx", external_data=True)
    assert os.listdir(tmp_path) == ["m.onnx.data"]


# -- through export ------------------------------------------------------------------------------------


class CountingMlp(Mlp):
    """Counts forward calls, to prove a refusal came before any work."""

    calls = 0

    def forward(self, x):
        CountingMlp.calls += 1
        return super().forward(x)


@pytest.mark.parametrize("over_limit", [False, True], ids=["external_data=True", "default_over_limit"])
def test_export_writes_the_pair(over_limit, tmp_path, monkeypatch):
    torch.manual_seed(0)
    model, inputs = Mlp().eval(), (torch.randn(3, 64),)
    path = tmp_path / "m.onnx"
    if over_limit:
        monkeypatch.setattr(serialize, "PROTOBUF_LIMIT", SMALL_LIMIT)
        tso.export(model, inputs, path)
    else:
        tso.export(model, inputs, path, external_data=True)
    assert sorted(os.listdir(tmp_path)) == ["m.onnx", "m.onnx.data"]
    onnx.checker.check_model(os.fspath(path))
    assert _external(onnx.load(os.fspath(path), load_external_data=False))
    _check_matches_eager(path, model, inputs)


@pytest.mark.parametrize("f", [io.BytesIO, lambda: None], ids=["BytesIO", "None"])
def test_export_external_data_true_without_a_path_warns_as_legacy_ignored_it(f):
    """Legacy ignored external_data, so such a call worked: a warning, the weights inline;
    strict=True refuses it before any work."""
    target = f()
    with pytest.warns(tso.OnnxExporterWarning, match="needs f as a path"):
        result = tso.export(CountingMlp().eval(), (torch.randn(3, 64),), target, external_data=True)
    proto = result if target is None else onnx.load_from_string(target.getvalue())
    assert all(not t.external_data for t in proto.graph.initializer)
    CountingMlp.calls = 0
    with pytest.raises(ValueError, match="path"):
        tso.export(CountingMlp().eval(), (torch.randn(3, 64),), f(), external_data=True, strict=True)
    assert CountingMlp.calls == 0


def test_export_returning_a_proto_over_the_limit_refuses(monkeypatch):
    monkeypatch.setattr(serialize, "PROTOBUF_LIMIT", SMALL_LIMIT)
    with pytest.raises(ValueError, match="2 GiB limit.*save it to a path"):
        tso.export(Mlp().eval(), (torch.randn(3, 64),), None)


# -- a real model past 2 GiB -----------------------------------------------------------------------------


class OverTwoGiB(torch.nn.Module):
    """Two 16384 x 16384 fp32 layers: 2 GiB of weights plus their biases, so past protobuf's limit."""

    calls = 0

    def __init__(self):
        super().__init__()
        self.first = _toeplitz_linear(16384, seed=0)
        self.second = _toeplitz_linear(16384, seed=1)

    def forward(self, x):
        OverTwoGiB.calls += 1
        return self.second(torch.relu(self.first(x)))


def _toeplitz_linear(size: int, seed: int) -> torch.nn.Linear:
    """A square layer whose weight[i, j] = r[i + j] for a random r: every row differs, and filling 1 GiB
    is a copy instead of a random draw per element (several times faster)."""
    generator = torch.Generator().manual_seed(seed)
    layer = torch.nn.Linear(size, size, device="meta").to_empty(device="cpu")
    values = torch.randn(2 * size, generator=generator) / size**0.5
    with torch.no_grad():
        layer.weight.copy_(values.as_strided((size, size), (1, 1)))
        layer.bias.copy_(values[:size])
    return layer


@pytest.fixture(scope="module")
def over_two_gib():
    model = OverTwoGiB().eval()
    assert serialize.weight_bytes(model) > 2**31
    return model


def test_a_real_model_past_2_gib_is_saved_as_a_pair_that_loads(over_two_gib, tmp_path):
    """No lowered limit: the default call writes m.onnx + m.onnx.data, which onnx.load and onnxruntime
    open (onnxruntime without graph optimizations: prepacking 2 GiB of weights only adds time here)."""
    path = tmp_path / "m.onnx"
    tso.export(over_two_gib, (torch.randn(2, 16384),), path, input_names=["x"],
               dynamic_axes={"x": {0: "batch"}})
    assert sorted(os.listdir(tmp_path)) == ["m.onnx", "m.onnx.data"]
    assert os.path.getsize(path) < 2**20 and os.path.getsize(tmp_path / "m.onnx.data") > 2**31
    onnx.checker.check_model(os.fspath(path))
    loaded = onnx.load(os.fspath(path))
    assert sum(len(t.raw_data) for t in loaded.graph.initializer) == serialize.weight_bytes(over_two_gib)
    del loaded
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(os.fspath(path), options, providers=["CPUExecutionProvider"])
    x = torch.randn(3, 16384)
    (got,) = session.run(None, {"x": x.numpy()})
    with torch.no_grad():
        expected = over_two_gib(x)
    np.testing.assert_allclose(got, expected.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("f", [io.BytesIO, lambda: None], ids=["BytesIO", "None"])
def test_a_real_model_past_2_gib_to_a_file_object_refuses_before_work(over_two_gib, f):
    OverTwoGiB.calls = 0
    with pytest.raises(ValueError, match=r"weights are 2\.00 GiB .*2 GiB limit.* save it to a path"):
        tso.export(over_two_gib, (torch.randn(2, 16384),), f())
    assert OverTwoGiB.calls == 0
