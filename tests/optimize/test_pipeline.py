"""The optimizer as a whole: the pass order, deterministic files, and a ResNet-18 against legacy."""

from __future__ import annotations

import io
import logging
from collections import Counter

import onnx
import pytest
import torch

from bench import zoo
from torchscript_onnx import export
from torchscript_onnx.pipeline.optimize import passes
from torchscript_onnx.verify import verify


def _names(order):
    return [type(p).__name__ for p in order]


def test_pass_order():
    assert _names(passes()) == ["RemoveIdentity", "DeadCode", "FoldConvBatchNorm", "FoldWeightTranspose",
                                "RemoveNoopReshape", "RemoveNoopArithmetic", "DeduplicateInitializers",
                                "CommonSubexpressions", "DeadCode"]
    assert _names(passes(training=True)) == ["RemoveIdentity", "DeadCode", "RemoveNoopReshape",
                                             "RemoveNoopArithmetic", "DeduplicateInitializers",
                                             "CommonSubexpressions", "DeadCode"]
    assert passes(training=True)[4].by_value is False
    inputs = _names(passes(initializers_are_inputs=True))
    assert "DeduplicateInitializers" not in inputs and "FoldWeightTranspose" not in inputs
    assert "FoldWeightTranspose" not in _names(passes(constant_folding=False))
    # SlicesToSplit writes the Split of the target opset: only when the optimizer is told it
    assert _names(passes(opset=17))[-4:] == ["DeduplicateInitializers", "CommonSubexpressions", "SlicesToSplit",
                                             "DeadCode"]


def _bytes(model, args, **options) -> bytes:
    buffer = io.BytesIO()
    export(model, args, buffer, **options)
    return buffer.getvalue()


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
def test_deterministic_files(name, tmp_path):
    model, args = zoo.MODELS[name]()
    first = _bytes(model, args, opset_version=17)
    export(model, args, str(tmp_path / "m.onnx"), opset_version=17)
    assert (tmp_path / "m.onnx").read_bytes() == first
    # Rebuilt from scratch (new tensors, new ids): still the same bytes.
    model, args = zoo.MODELS[name]()
    assert _bytes(model, args, opset_version=17) == first


def test_resnet18_like_legacy(caplog):
    """Every BatchNormalization folded: the same ops and initializer count as torch.onnx (dynamo=False)."""
    model, args = zoo.MODELS["resnet18"]()
    with caplog.at_level(logging.DEBUG, logger="torchscript_onnx.optimize"):
        ours = onnx.load_from_string(_bytes(model, args, opset_version=17))
    legacy_buffer = io.BytesIO()
    torch.onnx.export(model, args, legacy_buffer, dynamo=False, opset_version=17)
    legacy = onnx.load_from_string(legacy_buffer.getvalue())
    assert Counter(n.op_type for n in ours.graph.node) == Counter(n.op_type for n in legacy.graph.node)
    assert len(ours.graph.initializer) == len(legacy.graph.initializer)
    assert "FoldConvBatchNorm: 69 -> 49 nodes" in caplog.text
    verify(model, args, opset_version=17, rtol=1e-3, atol=1e-4)


class Twice(torch.nn.Module):
    """The same expression twice, and two layers holding equal (copied) weights."""

    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)
        self.b.load_state_dict(self.a.state_dict())

    def forward(self, x):
        return torch.relu(x * 2) + torch.relu(x * 2) + self.a(x) - self.b(x)


@pytest.mark.parametrize("opset", [9, 13, 26])
def test_cse_and_dedup_end_to_end(opset):
    from torchscript_onnx import TrainingMode

    model, args = Twice().eval(), (torch.randn(3, 8),)
    verify(model, args, opset_version=opset)
    proto = onnx.load_from_string(_bytes(model, args, opset_version=opset))
    ops = Counter(n.op_type for n in proto.graph.node)
    assert ops["Relu"] == 1 and ops["Mul"] == 1
    assert sorted(i.name for i in proto.graph.initializer if i.name.startswith(("a.", "b."))) == ["a.bias", "a.weight"]
    # Training keeps both layers' parameters: equal values, but two parameters.
    proto = onnx.load_from_string(_bytes(model.train(), args, opset_version=opset, training=TrainingMode.TRAINING))
    names = {i.name for i in proto.graph.initializer}
    assert {"a.weight", "a.bias", "b.weight", "b.bias"} <= names


class RebuiltMask(torch.nn.Module):
    """Each layer builds the same constant mask again (as T5's decoder layers do): folded, the
    copies are initializers of equal values, and what reads them is one node once they are one."""

    def __init__(self, layers=3):
        super().__init__()
        self.layers = layers

    def forward(self, x):
        out = x
        for _ in range(self.layers):
            mask = torch.ones(16, 16, dtype=torch.bool).tril()
            out = out + torch.where(mask, x, torch.zeros(()))
        return out


@pytest.mark.parametrize("opset", [9, 17])
def test_readers_of_one_constant_rebuilt_per_layer_merge(opset):
    model, args = RebuiltMask(), (torch.randn(2, 16, 16),)
    verify(model, args, opset_version=opset)
    proto = onnx.load_from_string(_bytes(model, args, opset_version=opset))
    assert Counter(n.op_type for n in proto.graph.node)["Where"] == 1
