"""audit() tells the truth: its verdict is export()'s outcome.

A table of models, each with what audit must report (ops and problem categories) and export's
outcome, then a sweep over the op tables of tests/ops: for each (case, opset), audit(...).ok is
whether export succeeds, every op export's error names is one audit reported, the opset export's
OpsetRequirementError names is audit's ``needs_opset``, and every requirement found above what an
op's registration serves is declared in the registry (so docs/supported_ops.md shows it).

The sweep covers every case below its lowest opset and at its xfail'ed opsets (where exports
fail) and a fixed sample of the passing (case, opset) pairs; TSO_AUDIT_SWEEP=all runs every pair
at every opset the case declares (about 6 minutes on one core).
"""

from __future__ import annotations

import dataclasses
import importlib
import io
import os
import pathlib
import zlib

import pytest
import torch

from tests.optable import Case, Fn
from torchscript_onnx import SymbolicValueError, UnsupportedOperatorError, audit, export, unconvertible_ops
from torchscript_onnx.builder.errors import OpsetRequirementError


@dataclasses.dataclass
class Truth:
    name: str
    model: object
    inputs: tuple
    opset: int
    problems: dict  # op -> category ("no conversion", "opset", "runtime size", "complex", "autograd.Function", ...)
    options: dict = dataclasses.field(default_factory=dict)
    not_reached: tuple = ()


def rfft_magnitude(x):
    return torch.fft.rfft(x).abs()


class Several(torch.nn.Module):
    """Three problems in one model: an op without conversion, a complex value into exp, and an fft
    over a dim sized at runtime."""

    def forward(self, x, y):
        a = torch.special.erfcx(x)
        b = torch.fft.rfft(x).exp().abs()
        c = torch.fft.rfft(y, dim=1).abs()
        return a, b, c


class AfterAFailure(torch.nn.Module):
    """exp of a complex fails; what reads its (placeholder) result is not reached, and an op without
    conversion further on is still found."""

    def forward(self, x):
        z = torch.fft.rfft(x).exp()
        return torch.special.erfcx(torch.view_as_real(z).sum(-1))


class Scoped(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.spectrum = Fn(lambda x: torch.fft.rfft(x).sin())

    def forward(self, x):
        return torch.view_as_real(self.spectrum(x))


class Softsign(torch.autograd.Function):  # no symbolic staticmethod
    @staticmethod
    def forward(ctx, x):
        return x / (1 + x.abs())


class CallsAFunction(torch.nn.Module):
    def forward(self, x):
        return Softsign.apply(x) * 2


BATCH_AND_LENGTH = {"input_names": ["x"], "dynamic_axes": {"x": [0, 1]}}
TRUTHS = [
    Truth("linear_ok", torch.nn.Linear(4, 3), (torch.randn(2, 4),), 13, {}),
    Truth("rfft_abs_ok", Fn(rfft_magnitude), (torch.randn(2, 16),), 17, {}),
    Truth("fft_real_ok", Fn(lambda x: torch.fft.fft(x).real), (torch.randn(2, 16),), 20, {}),
    Truth("stft_magnitude_ok", Fn(lambda x: torch.stft(x, 16, window=torch.hann_window(16), return_complex=True).abs()),
          (torch.randn(2, 64),), 17, {}),
    Truth("angle_ok", Fn(lambda x: torch.fft.rfft(x).angle()), (torch.randn(2, 15),), 18, {}),
    Truth("unsupported_op", Fn(lambda x: torch.special.erfcx(x)), (torch.randn(3),), 17,
          {"aten::special_erfcx": "no conversion"}),
    Truth("opset_too_low_for_op", Fn(lambda a, b: torch.einsum("ij,jk->ik", a, b)),
          (torch.randn(2, 3), torch.randn(3, 4)), 11, {"aten::einsum": "no conversion"}),
    Truth("opset_too_low_for_fft", Fn(rfft_magnitude), (torch.randn(2, 16),), 16, {"aten::fft_rfft": "no conversion"}),
    Truth("opset_too_low_for_a_lowering", Fn(lambda x: torch.topk(x, 2)[0]), (torch.arange(6),), 10,
          {"aten::topk": "opset"}),
    Truth("runtime_size", Fn(rfft_magnitude), (torch.randn(2, 16),), 17, {"aten::fft_rfft": "runtime size"},
          BATCH_AND_LENGTH),
    Truth("complex_output", Fn(lambda x: torch.fft.rfft(x)), (torch.randn(2, 16),), 17, {"a graph output": "complex"}),
    Truth("complex_into_sin", Scoped(), (torch.randn(2, 16),), 17, {"aten::sin": "complex"}),
    Truth("several_at_once", Several(), (torch.randn(2, 16), torch.randn(2, 16)), 17,
          {"aten::special_erfcx": "no conversion", "aten::exp": "complex", "aten::fft_rfft": "runtime size"},
          {"input_names": ["x", "y"], "dynamic_axes": {"y": [1]}}),
    Truth("after_a_failure", AfterAFailure(), (torch.randn(2, 16),), 17,
          {"aten::special_erfcx": "no conversion", "aten::exp": "complex"}),
    Truth("function_inlined", CallsAFunction(), (torch.randn(2, 3),), 17, {}),
    Truth("function_without_symbolic", CallsAFunction(), (torch.randn(2, 3),), 17,
          {"prim::PythonOp": "autograd.Function"}, {"autograd_inlining": False}),
]


def _reported(report) -> dict:
    found = {op.name: "no conversion" for op in report.ops}
    found.update({issue.op: issue.category for issue in report.issues})
    return found


def _export(model, inputs, opset, options):
    """None when export succeeds, else its error."""
    try:
        export(model, inputs, io.BytesIO(), opset_version=opset, **options)
    except Exception as error:  # noqa: BLE001 - the outcome under test
        return error
    return None


def _ops_named_by(error) -> set:
    if isinstance(error, UnsupportedOperatorError):
        return {op.name for op in error.ops}
    if isinstance(error, OpsetRequirementError) and error.requirements:
        return {r.node for r in error.requirements}
    if isinstance(error, SymbolicValueError) and error.node:
        return {error.node}
    return set()


@pytest.mark.parametrize("truth", TRUTHS, ids=lambda t: t.name)
def test_audit_verdict_is_exports_outcome(truth):
    report = audit(truth.model, truth.inputs, opset_version=truth.opset, **truth.options)
    assert _reported(report) == truth.problems, report.to_text()
    _check_declared(report, truth.opset)
    error = _export(truth.model, truth.inputs, truth.opset, truth.options)
    assert report.ok == (error is None), error
    if error is not None:
        assert _ops_named_by(error) and _ops_named_by(error) <= set(truth.problems), error
        text = report.to_text()
        assert all(op in text for op in truth.problems)


def test_every_issue_has_place_and_next_step():
    report = audit(Scoped(), (torch.randn(2, 16),), opset_version=17)
    (issue,) = report.issues
    assert issue.scope == "/spectrum"
    assert issue.source.startswith(f"{__file__}:")
    assert "view_as_real" in issue.next_step()
    low = audit(Fn(lambda x: torch.topk(x, 2)[0]), (torch.arange(6),), opset_version=10).issues[0]
    assert low.needs_opset == 11 and "pass opset_version=11" in low.next_step()
    markdown = audit(Several(), (torch.randn(2, 16), torch.randn(2, 16)), opset_version=17,
                     input_names=["x", "y"], dynamic_axes={"y": [1]}).to_markdown()
    for fragment in ("`aten::special_erfcx`", "`aten::exp`", "complex", "runtime size"):
        assert fragment in markdown


def test_a_function_without_symbolic_gets_its_own_next_step():
    (issue,) = audit(CallsAFunction(), (torch.randn(2, 3),), opset_version=17, autograd_inlining=False).issues
    step = issue.next_step()
    for remedy in ("give Softsign a symbolic(g, *args) staticmethod",
                   "register_custom_op_symbolic('prim::PythonOp', fn, 17)", "autograd_inlining=True"):
        assert remedy in step, step
    assert "dynamic_axes" not in step and "size" not in step
    assert issue.source.startswith(f"{__file__}:")
    with pytest.raises(SymbolicValueError) as raised:  # export's error offers the same remedies
        export(CallsAFunction(), (torch.randn(2, 3),), io.BytesIO(), opset_version=17, autograd_inlining=False)
    assert step in str(raised.value)


def test_failures_behind_a_failure_are_not_reached_not_reported():
    report = audit(AfterAFailure(), (torch.randn(2, 16),), opset_version=17)
    assert [issue.op for issue in report.issues] == ["aten::exp"]
    assert "aten::special_erfcx" in [op.name for op in report.ops]


def test_audit_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    audit(Several(), (torch.randn(2, 16), torch.randn(2, 16)), opset_version=17)
    assert os.listdir(tmp_path) == []


def test_unconvertible_ops_stays_legacy_shaped():
    graph, names = unconvertible_ops(Several(), (torch.randn(2, 16), torch.randn(2, 16)), opset_version=17)
    assert isinstance(graph, torch._C.Graph)
    assert names == ["aten::special_erfcx"]  # the legacy question: ops without a conversion, by name


# -- the op tables ------------------------------------------------------------------------------


def _table_cases() -> list[tuple[str, Case]]:
    found = []
    for path in sorted((pathlib.Path(__file__).parent / "ops").glob("test_*.py")):
        module = importlib.import_module(f"tests.ops.{path.stem}")
        seen = set()
        for value in vars(module).values():
            if isinstance(value, (list, tuple)) and value and all(isinstance(c, Case) for c in value):
                for case in value:
                    if id(case) not in seen:
                        seen.add(id(case))
                        found.append((path.stem, case))
    return found


def _sweep_params() -> list:
    everything = os.environ.get("TSO_AUDIT_SWEEP") == "all"
    params = []
    for stem, case in _table_cases():
        pick = zlib.crc32(f"{stem}/{case.name}".encode())
        opsets = set(case.test_opsets()) if everything else set()
        if not everything:
            failing = set(case.xfails) | ({case.min_opset - 1} if case.min_opset > 7 else set())
            opsets |= failing if pick % 3 == 0 else set()
            passing = case.test_opsets()
            if pick % 16 == 1:
                opsets.add(passing[pick // 16 % len(passing)])
        else:
            opsets |= set(case.xfails) | ({case.min_opset - 1} if case.min_opset > 7 else set())
        params += [pytest.param(case, opset, id=f"{stem}-{case.name}-opset{opset}") for opset in sorted(opsets)]
    return params


@pytest.mark.parametrize("case,opset", _sweep_params())
def test_audit_predicts_export_for_op_table_case(case, opset):
    torch.manual_seed(0)
    error = _export(case.module(), case.inputs(), opset, case.export_options)
    try:
        report = audit(case.module(), case.inputs(), opset_version=opset, **case.export_options)
    except Exception as audit_error:  # noqa: BLE001 - capture itself failed: export must fail too
        assert error is not None, f"audit raised {audit_error!r} but export succeeds"
        return
    assert report.ok == (error is None), f"export: {error!r}\naudit: {report.to_text()}"
    if error is not None:
        assert _ops_named_by(error) <= set(_reported(report)), f"export: {error}\naudit: {report.to_text()}"
    if isinstance(error, OpsetRequirementError):  # audit predicted exactly the opset export names
        assert report.needs_opset == error.required_opset, f"export: {error}\naudit: {report.to_text()}"
    _check_declared(report, opset)


def _check_declared(report, opset: int) -> None:
    """Every requirement above what the op's registration serves is declared in the registry (so
    docs/supported_ops.md shows it)."""
    from torchscript_onnx.symbolic import registry

    for issue in report.issues:
        if issue.reason is None or issue.needs_opset is None:
            continue
        version = registry.builtin_version(issue.op, opset)
        if version is not None and issue.needs_opset > max(version, 9):
            assert (issue.needs_opset, issue.reason) in registry.opset_requirements(issue.op), \
                f"{issue.op}: {issue.reason!r} (opset {issue.needs_opset}) is not declared"
