"""The export report (``export(report=True)``) of a failed export names the step that failed, its
error, and the options in effect (the opset the export used, not the ``None`` it was given)."""

from __future__ import annotations

import re

import pytest
import torch

import torchscript_onnx as tso
from torchscript_onnx.verification import VerificationError


class UsesEinsum(torch.nn.Module):  # einsum converts from opset 12
    def forward(self, a, b):
        return torch.einsum("ij,jk->ik", a, b)


class Conv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)

    def forward(self, x):
        return self.conv(x)


def _sigmoid_for_relu(g, input):  # a deliberately wrong conversion: verification must catch it
    return g.op("Sigmoid", input)


@pytest.fixture
def wrong_relu():
    tso.register_custom_op_symbolic("aten::relu", _sigmoid_for_relu, 9)
    yield
    tso.unregister_custom_op_symbolic("aten::relu", 9)


EINSUM = (UsesEinsum(), (torch.randn(2, 3), torch.randn(3, 4)))
# (case, model and args, export options, error, the steps and outcomes, the opset the options show)
FAILURES = [
    ("no-conversion-at-the-opset", EINSUM, dict(opset_version=9), tso.UnsupportedOperatorError,
     [("check the options and arguments", "ok"), ("capture (TorchScript graph)", "ok"),
      ("conversion to ONNX opset 9", "failed: UnsupportedOperatorError: 1 operator(s) cannot be exported")], "9"),
    ("the-model-fails-on-its-input", (Conv(), (torch.randn(1, 1, 3, 8, 8),)), {}, RuntimeError,
     [("check the options and arguments", "ok"), ("capture (TorchScript graph)", "failed: RuntimeError: ")], "20"),
    ("bad-option", EINSUM, dict(opset_version=99), ValueError,
     [("check the options and arguments", "failed: ValueError: opset_version")], "99"),
    ("verification", (torch.nn.ReLU(), (torch.randn(2, 3),)), dict(verify=True), VerificationError,
     [("check the options and arguments", "ok"), ("capture (TorchScript graph)", "ok"),
      ("conversion to ONNX opset 20", "ok"), ("optimisation", "ok"),
      ("ONNX model (inputs kept, local functions, metadata)", "ok"),
      ("verification with onnxruntime", "failed: VerificationError: ")], "20"),
]


@pytest.mark.parametrize("model_args, options, error, steps, opset", [c[1:] for c in FAILURES],
                         ids=[c[0] for c in FAILURES])
def test_a_failure_report_names_the_failed_step_its_error_and_the_options_in_effect(
        tmp_path, request, model_args, options, error, steps, opset):
    model, args = model_args
    if options.get("verify"):
        request.getfixturevalue("wrong_relu")
    with pytest.raises(error) as raised:
        tso.export(model, args, str(tmp_path / "m.onnx"), report=True, artifacts_dir=tmp_path, **options)
    (report,) = tmp_path.glob("*_failure.md")
    text = report.read_text()
    rows = re.findall(r"^\| (.+?) \| (.+?) \|$", text.split("## Steps", 1)[1].split("##", 1)[0], re.M)[2:]
    assert len(rows) == len(steps), rows
    for (step, outcome), (want_step, want_outcome) in zip(rows, steps):
        assert step == want_step
        assert outcome.replace("**", "").startswith(want_outcome), outcome
    options_text = text.split("## Options", 1)[1].split("##", 1)[0]
    assert f"opset_version = {opset}\n" in options_text
    assert ("(as given: checking them failed)" in options_text) == (error is ValueError)
    assert type(raised.value).__name__ in text.split("## Error", 1)[1]
    assert not (tmp_path / "m.onnx").exists()


def test_a_successful_report_lists_every_step_ok_and_the_default_opset(tmp_path):
    tso.export(torch.nn.Linear(2, 2), (torch.randn(1, 2),), str(tmp_path / "m.onnx"), report=True,
               artifacts_dir=tmp_path)
    (report,) = tmp_path.glob("*_success.md")
    text = report.read_text()
    rows = re.findall(r"^\| (.+?) \| (.+?) \|$", text.split("## Steps", 1)[1].split("##", 1)[0], re.M)[2:]
    assert [step for step, _ in rows] == [
        "check the options and arguments", "capture (TorchScript graph)", "conversion to ONNX opset 20",
        "optimisation", "ONNX model (inputs kept, local functions, metadata)", "save"]
    assert {outcome for _, outcome in rows} == {"ok"}
    assert "opset_version = 20\n" in text
