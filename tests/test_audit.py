"""unconvertible_ops and the audit report: every unsupported op, where it is, and what to do."""

import inspect

import pytest
import torch

import torchscript_onnx
from torchscript_onnx import TrainingMode, audit, unconvertible_ops


class ThreeUnsupported(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = torch.special.i0(self.linear(x))
        z = torch.special.bessel_j0(y) + torch.special.bessel_j0(x)
        return torch.special.erfcx(z)


class NeedsOpset12(torch.nn.Module):
    def forward(self, a, b):
        return torch.einsum("ij,jk->ik", a, b)


def _line_of(model_cls, text: str) -> int:
    lines, start = inspect.getsourcelines(model_cls.forward)
    return start + next(k for k, line in enumerate(lines) if text in line)


def test_unconvertible_ops_lists_names_like_legacy():
    graph, names = unconvertible_ops(ThreeUnsupported(), (torch.randn(2, 4),))
    assert isinstance(graph, torch._C.Graph)
    assert names == ["aten::i0", "aten::special_bessel_j0", "aten::special_erfcx"]


def test_unconvertible_ops_empty_for_supported_model():
    _, names = unconvertible_ops(torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU()), (torch.randn(1, 3),))
    assert names == []


def test_audit_lists_all_three_with_counts_and_source_lines():
    report = audit(ThreeUnsupported(), (torch.randn(2, 4),), opset_version=17)
    assert not report.ok
    by_name = {op.name: op for op in report.ops}
    assert set(by_name) == {"aten::i0", "aten::special_bessel_j0", "aten::special_erfcx"}
    assert len(by_name["aten::special_bessel_j0"].occurrences) == 2
    for name, marker in [("aten::i0", "special.i0"), ("aten::special_bessel_j0", "bessel_j0"),
                         ("aten::special_erfcx", "erfcx")]:
        line = _line_of(ThreeUnsupported, marker)
        sources = {source for _, source in by_name[name].occurrences}
        assert sources == {f"{__file__}:{line}"}, (name, sources)
    text, markdown = report.to_text(), report.to_markdown()
    for name in by_name:
        assert name in text and f"`{name}`" in markdown
    assert "register_custom_op_symbolic" in text


def test_audit_names_the_lowest_opset_and_next_step():
    report = audit(NeedsOpset12(), (torch.randn(2, 3), torch.randn(3, 4)), opset_version=9)
    (op,) = report.ops
    assert op.name == "aten::einsum" and op.lowest_opset == 12
    assert "pass opset_version=12" in report.to_text()
    assert audit(NeedsOpset12(), (torch.randn(2, 3), torch.randn(3, 4)), opset_version=12).ok


def test_audit_scopes_name_the_module():
    class Outer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = ThreeUnsupported()

        def forward(self, x):
            return self.inner(x)

    report = audit(Outer(), (torch.randn(2, 4),), opset_version=17)
    assert all(scope == "/inner" for op in report.ops for scope, _ in op.occurrences)


def test_export_error_lists_every_unsupported_op_at_once():
    with pytest.raises(torchscript_onnx.UnsupportedOperatorError) as info:
        torchscript_onnx.export(ThreeUnsupported(), (torch.randn(2, 4),), None, opset_version=17)
    message = str(info.value)
    for name in ("aten::i0", "aten::special_bessel_j0", "aten::special_erfcx"):
        assert name in message
    assert len(info.value.ops) == 3


@pytest.mark.parametrize("bad, argument", [({"opset_version": 99}, "opset_version"), ({"training": "eval"}, "training")])
def test_audit_validates_arguments(bad, argument):
    with pytest.raises((ValueError, TypeError), match=argument):
        audit(ThreeUnsupported(), (torch.randn(2, 4),), **bad)


def test_audit_training_mode_restores_model():
    model = ThreeUnsupported().train()
    audit(model, (torch.randn(2, 4),), training=TrainingMode.EVAL)
    assert model.training
