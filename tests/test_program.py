"""The object ``build()`` returns, used as dynamo's ``ONNXProgram`` is: called on the model's
inputs (onnxruntime, CPU), optimised, saved with its weights beside it.

Every call is compared with eager PyTorch on the same inputs.
"""

from __future__ import annotations

import os
import sys

import onnx
import pytest
import torch

from bench import zoo
from torchscript_onnx.pipeline import serialize
from torchscript_onnx.api import build
from torchscript_onnx.verify import run_onnxruntime


class ConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.bn = torch.nn.BatchNorm2d(4)
        self.head = torch.nn.Linear(6, 64)  # a weight of 1.5 KB: past external data's threshold

    def forward(self, x):
        return self.head(torch.relu(self.bn(self.conv(x))))


class Keywords(torch.nn.Module):
    """Optional arguments by keyword, one unused (the export drops its input)."""

    def forward(self, x, mask=None, unused=None, scale: float = 2.0):
        y = x * scale
        return (y if mask is None else y.masked_fill(mask, 0.0)), y.sum(-1)


class Pair(torch.nn.Module):
    def forward(self, pair):
        return [pair[0] + pair[1], pair[0] * pair[1]]


def _keywords():
    return Keywords(), (torch.randn(2, 3),), {"mask": torch.rand(2, 3) > 0.5}


# id, factory -> (model, args, kwargs), export options, the call's args and kwargs (None: the export's)
CALL_CASES = [
    ("module", lambda: (ConvNet().eval(), (torch.randn(1, 3, 8, 8),), {}), {}, None),
    ("keywords", _keywords, {}, None),
    ("list-argument-list-outputs", lambda: (Pair(), ([torch.randn(3), torch.randn(3)],), {}), {}, None),
    ("dict-and-list-inputs", lambda: (*zoo.MODELS["mlp_dict_list"](), {}), {}, None),
    ("dynamic-batch", lambda: (ConvNet().eval(), (torch.randn(1, 3, 8, 8),), {}),
     {"input_names": ["x"], "dynamic_axes": {"x": {0: "batch"}}}, ((torch.randn(5, 3, 8, 8),), {})),
]


def _flat(outputs) -> list[torch.Tensor]:
    if isinstance(outputs, torch.Tensor):
        return [outputs]
    return [t for item in outputs for t in _flat(item)]


@pytest.mark.parametrize("make, options, call", [pytest.param(*row[1:], id=row[0]) for row in CALL_CASES])
def test_calling_runs_onnxruntime_like_the_model(make, options, call):
    torch.manual_seed(0)
    model, args, kwargs = make()
    exported = build(model, args, kwargs=kwargs or None, **options)
    call_args, call_kwargs = call or (args, kwargs)
    actual = exported(*call_args, **call_kwargs)
    with torch.no_grad():
        expected = _flat(model(*call_args, **call_kwargs))
    assert isinstance(actual, tuple) and len(actual) == len(expected)
    for got, want in zip(actual, expected):
        assert isinstance(got, torch.Tensor) and got.dtype == want.dtype
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_the_session_is_made_once_and_released():
    torch.manual_seed(0)
    model, x = ConvNet().eval(), torch.randn(1, 3, 8, 8)
    exported = build(model, (x,))
    first = exported(x)
    session = exported._session
    assert session is not None
    torch.testing.assert_close(exported(x * 2)[0], model(x * 2).detach(), rtol=1e-4, atol=1e-5)
    assert exported._session is session
    exported.release()
    assert exported._session is None
    torch.testing.assert_close(exported(x)[0], first[0])


def test_a_model_past_protobufs_limit_runs_from_a_temporary_file(monkeypatch):
    torch.manual_seed(0)
    model, x = torch.nn.Linear(64, 64), torch.randn(2, 64)
    exported = build(model, (x,))
    # this model is "too large" for one proto now, not with its weights in a data file
    monkeypatch.setattr(serialize, "PROTOBUF_LIMIT", serialize.model_size(exported.model, exported.graph))
    torch.testing.assert_close(exported(x)[0], model(x).detach(), rtol=1e-4, atol=1e-5)
    folder = exported._session_dir.name
    assert sorted(os.listdir(folder)) == ["model.onnx", "model.onnx.data"]
    exported.release()
    assert not os.path.exists(folder)


def test_calling_without_onnxruntime_says_how_to_install_it(monkeypatch):
    exported = build(ConvNet().eval(), (torch.randn(1, 3, 8, 8),))
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime now fails
    with pytest.raises(ImportError, match="pip install onnxruntime"):
        exported(torch.randn(1, 3, 8, 8))


def test_calling_a_model_exported_without_weights_is_refused():
    exported = build(ConvNet().eval(), (torch.randn(1, 3, 8, 8),), export_params=False)
    with pytest.raises(ValueError, match="export_params=False"):
        exported(torch.randn(1, 3, 8, 8))


def test_optimize_runs_the_passes_a_build_skipped():
    torch.manual_seed(0)
    model, x = ConvNet().eval(), torch.randn(1, 3, 8, 8)
    optimized = build(model, (x,))
    plain = build(model, (x,), optimize=False)
    assert [n.op_type for n in plain.model.graph.node].count("BatchNormalization") == 1
    before = plain(x)
    plain.optimize()
    assert plain.optimized
    # the same file as an export that optimised: nodes, names, weights
    assert plain.to_bytes() == optimized.to_bytes()
    assert "BatchNormalization" not in [n.op_type for n in plain.model.graph.node]
    torch.testing.assert_close(plain(x)[0], before[0], rtol=1e-4, atol=1e-5)


def test_optimize_after_an_optimising_build_changes_nothing():
    model, x = ConvNet().eval(), torch.randn(1, 3, 8, 8)
    exported = build(model, (x,))
    data = exported.to_bytes()
    exported.optimize()
    assert exported.to_bytes() == data


def test_save_with_external_data_writes_the_weights_beside_the_model(tmp_path):
    torch.manual_seed(0)
    model, x = ConvNet().eval(), torch.randn(1, 3, 8, 8)
    exported = build(model, (x,))
    path = tmp_path / "model.onnx"
    exported.save(path, external_data=True)
    assert sorted(os.listdir(tmp_path)) == ["model.onnx", "model.onnx.data"]
    proto = onnx.load(str(path), load_external_data=False)
    external = {t.name for t in proto.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL}
    large = {name for name, t in exported.graph.initializers.items()
             if t.numel() * t.element_size() >= serialize.EXTERNAL_THRESHOLD}
    assert external == large and large
    (actual,) = run_onnxruntime(str(path), [x])
    torch.testing.assert_close(torch.from_numpy(actual), exported(x)[0])


def test_model_proto_is_the_model_with_its_weights():
    exported = build(ConvNet().eval(), (torch.randn(1, 3, 8, 8),))
    proto = exported.model_proto
    assert proto.SerializeToString() == exported.to_model_proto().SerializeToString()
    assert {t.name for t in proto.graph.initializer} == set(exported.graph.initializers)
