"""Frozen scripted modules (``torch.jit.freeze(torch.jit.script(m))``, a common deployment form)
export as the legacy exporter exports them. (``torch.jit.optimize_for_inference`` adds MKLDNN ops
that neither exporter converts; ours names them all in one clear error.)

A frozen module has no ``training`` flag and no parameters left: its weights are constants of its
graph (legacy writes them as Constant nodes, numbered as such, which is where its output names come
from). Each model runs in onnxruntime against the frozen module at the traced size and another.
"""

from __future__ import annotations

import io
import warnings

import pytest
import torch
from torch import nn

import torchscript_onnx as tso
from torchscript_onnx.verify import verify


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(torch.relu(self.bn(self.conv(x))).mean([2, 3]))


class ControlFlow(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.dropout = nn.Dropout(0.5)

    def forward(self, x, n: int):
        for _ in range(n):
            x = torch.tanh(self.lin(self.dropout(x)))
        if bool(x.sum() > 0):
            x = x * 2
        else:
            x = x - 1
        return x


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 6, batch_first=True)
        self.head = nn.Linear(6, 2)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


def _frozen(model):
    torch.manual_seed(0)
    model = model.eval()
    for module in model.modules():  # non-trivial batch norm statistics, folded by freezing
        if isinstance(module, nn.BatchNorm2d):
            module.running_mean.uniform_(-1, 1), module.running_var.uniform_(0.5, 2)
    return torch.jit.freeze(torch.jit.script(model))


def _x(*shape):
    torch.manual_seed(1)
    return torch.randn(*shape)


# (case, frozen module, example args, dynamic axes, args of other sizes)
CASES = [
    ("conv-net", lambda: _frozen(ConvNet()), lambda: (_x(1, 3, 8, 8),), {"x": {0: "b", 2: "h", 3: "w"}},
     lambda: (_x(2, 3, 12, 10),)),
    ("control-flow", lambda: _frozen(ControlFlow()), lambda: (_x(2, 4), 3), {"x": {0: "b"}},
     lambda: (-_x(5, 4), 1)),
    ("lstm", lambda: _frozen(Recurrent()), lambda: (_x(2, 5, 4),), {"x": {0: "b", 1: "t"}},
     lambda: (_x(3, 7, 4),)),
]


@pytest.mark.parametrize("opset", [11, 17])
@pytest.mark.parametrize(("case", "model", "args", "axes", "other"), CASES, ids=[c[0] for c in CASES])
def test_frozen_module_matches_itself_in_onnxruntime(case, model, args, axes, other, opset):
    model = model()
    assert not hasattr(model, "training")  # what failed: the frozen module has no flag to set
    verify(model, args(), other_inputs=[other()], opset_version=opset, input_names=["x"], dynamic_axes=axes)


@pytest.mark.parametrize("training", [tso.TrainingMode.EVAL, tso.TrainingMode.PRESERVE, tso.TrainingMode.TRAINING])
def test_every_training_mode_exports_a_frozen_module(training):
    model = _frozen(ConvNet())
    verify(model, (_x(1, 3, 8, 8),), opset_version=17, training=training)


def test_names_as_legacy_names_them():
    """Legacy keeps a frozen module's weights as Constant nodes: they count when it numbers values,
    so its unnamed output is "8" here (a graph with those weights as initializers would say "6")."""
    model, args = _frozen(ConvNet()), (_x(1, 3, 8, 8),)
    ours = tso.export(model, args, opset_version=17)
    assert [i.name for i in ours.graph.input] == ["x.1"] and [o.name for o in ours.graph.output] == ["8"]
    if not hasattr(torch.onnx, "utils"):
        return  # no legacy exporter in this torch to compare with
    import onnx

    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, buffer, dynamo=False, opset_version=17)
    legacy = onnx.load_from_string(buffer.getvalue())
    assert [i.name for i in ours.graph.input] == [i.name for i in legacy.graph.input]
    assert [o.name for o in ours.graph.output] == [o.name for o in legacy.graph.output]


def test_a_large_traced_constant_is_numbered_as_legacy_numbers_it():
    class AddRange(nn.Module):
        def forward(self, x):
            return (x + torch.arange(100.0)).relu()

    proto = tso.export(AddRange(), (torch.randn(100),), opset_version=17)
    assert [i.name for i in proto.graph.initializer] == ["onnx::Constant"]  # not a Constant node ...
    assert [o.name for o in proto.graph.output] == ["3"]  # ... yet numbered as legacy's Constant node
