"""Opset requirements are data: a conversion that needs a higher opset raises the typed
``OpsetRequirementError`` (``sh.needs_opset``), export collects them over the whole graph and raises
one error naming every node and the opset that converts them all, audit() predicts that opset, and
the registry declares each condition so docs/supported_ops.md can show it next to the op.
"""

from __future__ import annotations

import ast
import dataclasses
import io
import os
import pathlib
import pickle

import pytest
import torch
import torch.nn.functional as F

from tests.optable import Case, Fn, run_case
from torchscript_onnx import SymbolicValueError, audit, export, register_custom_op_symbolic, unregister_custom_op_symbolic
from torchscript_onnx.builder import onnx_ops
from torchscript_onnx.builder.errors import ConversionIssue, OpsetRequirementError
from torchscript_onnx.symbolic import registry
from torchscript_onnx.symbolic import symbolic_helper as sh

SYMBOLIC = pathlib.Path(registry.__file__).parent


def topk_of_ints_and_flip(x, y):
    return torch.topk(x, 2)[0], torch.flip(y, [0])  # TOPK-FLIP-LINE


def dilated_pool_and_bitwise(x, a, b):
    return F.max_pool2d(x, 2, dilation=2), torch.bitwise_and(a, b)


def bilinear_and_tril(x, y):
    return F.interpolate(x, scale_factor=2.0, mode="bilinear"), torch.tril(y)


def volumetric_grid_sample_and_bitwise(x, grid, a, b):
    return F.grid_sample(x, grid, align_corners=False), torch.bitwise_xor(a, b)


@dataclasses.dataclass
class TwoNeeds:
    """A model whose nodes need different opsets: ``needs`` op -> the opset it needs at ``opset``."""

    case: Case
    opset: int
    needs: dict

    @property
    def highest(self) -> int:
        return max(self.needs.values())


def _ints(*shape):
    return torch.randint(-5, 5, shape)


TWO_NEEDS = [
    TwoNeeds(Case("topk_of_ints_and_flip_of_a_dynamic_dim", topk_of_ints_and_flip,
                  lambda: (torch.tensor([3, 1, 4, 1, 5, 9]), torch.randn(4, 3)),
                  export_options={"input_names": ["x", "y"], "dynamic_axes": {"y": {0: "n"}}},
                  other_inputs=lambda: [(torch.tensor([2, 7, 1, 8, 2, 8]), torch.randn(6, 3))]),
             9, {"aten::topk": 11, "aten::flip": 10}),
    TwoNeeds(Case("dilated_pool_and_integer_bitwise_and", dilated_pool_and_bitwise,
                  lambda: (torch.randn(1, 2, 8, 8), _ints(3, 4), _ints(3, 4))),
             9, {"aten::max_pool2d": 10, "aten::bitwise_and": 18}),
    TwoNeeds(Case("bilinear_upsample_and_tril_of_a_dynamic_matrix", bilinear_and_tril,
                  lambda: (torch.randn(1, 2, 3, 3), torch.randn(4, 5)),
                  export_options={"input_names": ["x", "y"], "dynamic_axes": {"y": {0: "n", 1: "m"}}},
                  other_inputs=lambda: [(torch.randn(1, 2, 3, 3), torch.randn(6, 2))]),
             10, {"aten::upsample_bilinear2d": 11, "aten::tril": 14}),
    TwoNeeds(Case("volumetric_grid_sample_and_integer_bitwise_xor", volumetric_grid_sample_and_bitwise,
                  lambda: (torch.randn(1, 2, 3, 4, 4), torch.rand(1, 2, 3, 3, 3) * 2 - 1, _ints(5), _ints(5)),
                  atol=1e-4),
             16, {"aten::grid_sampler": 20, "aten::bitwise_xor": 18}),
]


def _export_error(case: Case, opset: int) -> Exception:
    with pytest.raises(OpsetRequirementError) as info:
        export(case.module(), case.inputs(), io.BytesIO(), opset_version=opset, **case.export_options)
    return info.value


@pytest.mark.parametrize("item", TWO_NEEDS, ids=lambda t: t.case.name)
def test_export_names_every_node_and_the_opset_that_converts_them_all(item):
    error = _export_error(item.case, item.opset)
    assert error.required_opset == item.highest and error.opset == error.target_opset == item.opset
    assert {r.node: r.required_opset for r in error.requirements} == item.needs
    message = str(error)
    assert f"pass opset_version={item.highest}" in message.splitlines()[0]
    for r in error.requirements:
        assert r.node in message and r.reason in message and r.source in message
        assert r.source.startswith(__file__), r.source  # the user's line, not torch's
        assert r.reason in dict((c, o) for o, c in registry.opset_requirements(r.node)), r.reason


@pytest.mark.parametrize("item", TWO_NEEDS, ids=lambda t: t.case.name)
def test_audit_predicts_the_opset_export_needs(item):
    report = audit(item.case.module(), item.case.inputs(), opset_version=item.opset, **item.case.export_options)
    assert not report.ok
    assert {i.op: i.needs_opset for i in report.issues} == item.needs
    assert all(i.category == "opset" for i in report.issues)
    error = _export_error(item.case, item.opset)
    assert report.needs_opset == error.required_opset
    assert [(i.op, i.reason, i.source) for i in report.issues] == [(r.node, r.reason, r.source) for r in error.requirements]


@pytest.mark.parametrize("item", TWO_NEEDS, ids=lambda t: t.case.name)
def test_the_named_opset_exports_and_matches_eager(item):
    report = audit(item.case.module(), item.case.inputs(), opset_version=item.highest, **item.case.export_options)
    assert report.ok, report.to_text()
    run_case(item.case, item.highest)  # onnxruntime against eager, and again at the other sizes


def test_the_line_of_each_node_is_named():
    error = _export_error(TWO_NEEDS[0].case, 9)
    with open(__file__) as source:
        line = next(n for n, text in enumerate(source, 1) if "TOPK-FLIP-LINE" in text and "next(" not in text)
    assert all(r.source.endswith(f"{os.path.basename(__file__)}:{line}") for r in error.requirements)


# -- one node, other errors, nothing written ------------------------------------------------------


def test_one_requirement_is_placed_at_its_node():
    error = _export_error(Case("topk", lambda x: torch.topk(x, 2)[0], lambda: (torch.arange(6),)), 10)
    assert len(error.requirements) == 1 and error.node == "aten::topk" and error.required_opset == 11
    assert "non-float input needs opset 11 or higher (pass opset_version=11)" in str(error)


def _refuse(g, *args):
    sh.value_error("this op is refused for a reason no opset changes")


class RequirementThenRefusal(torch.nn.Module):
    def forward(self, x, y):
        return torch.topk(x, 2)[0], torch.nn.functional.linear(y, torch.ones(2, 3))


class RefusalThenRequirement(torch.nn.Module):
    def forward(self, x, y):
        return torch.nn.functional.linear(y, torch.ones(2, 3)), torch.topk(x, 2)[0]


@pytest.mark.parametrize("model,raised", [
    (RequirementThenRefusal(), OpsetRequirementError),  # the first failure is a requirement: all of them, and the rest listed
    (RefusalThenRequirement(), SymbolicValueError),  # the first failure is of another kind: raised as it is
], ids=["requirement_first", "refusal_first"])
def test_other_failures_keep_the_first_error_rule(model, raised):
    register_custom_op_symbolic("aten::linear", _refuse, 9)
    try:
        with pytest.raises(SymbolicValueError) as info:
            export(model, (torch.arange(6), torch.randn(2, 3)), io.BytesIO(), opset_version=9)
    finally:
        unregister_custom_op_symbolic("aten::linear", 9)
    error = info.value
    assert type(error) is raised
    assert "refused for a reason no opset changes" in str(error)
    if raised is OpsetRequirementError:
        assert [r.node for r in error.requirements] == ["aten::topk"]
        assert "1 other node(s) failed" in str(error) and "aten::linear" in str(error)
    else:
        assert error.node == "aten::linear"


def test_nothing_is_written_when_requirements_fail(tmp_path):
    item = TWO_NEEDS[1]
    target = tmp_path / "model.onnx"
    with pytest.raises(OpsetRequirementError):
        export(item.case.module(), item.case.inputs(), str(target), opset_version=item.opset)
    assert os.listdir(tmp_path) == []


def test_the_error_survives_pickling():
    error = _export_error(TWO_NEEDS[0].case, 9)
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), str(copy), copy.required_opset, copy.opset) == (OpsetRequirementError, str(error), 11, 9)
    assert [(r.node, r.required_opset, r.reason) for r in copy.requirements] == [(r.node, r.required_opset, r.reason)
                                                                       for r in error.requirements]


def test_a_legacy_style_message_still_counts_as_a_requirement():
    """A custom symbolic that words its requirement in a plain message (no typed error)."""
    def legacy_style(g, input, weight, bias):
        if g.opset < 12:
            raise SymbolicValueError("my linear needs opset 12 (pass opset_version=12)", input)
        return g.op("Add", g.op("MatMul", input, g.op("Transpose", weight, perm_i=[1, 0])), bias)

    register_custom_op_symbolic("aten::linear", legacy_style, 9)
    try:
        report = audit(torch.nn.Linear(3, 2), (torch.randn(2, 3),), opset_version=9)
        with pytest.raises(OpsetRequirementError, match="pass opset_version=12") as info:
            export(torch.nn.Linear(3, 2), (torch.randn(2, 3),), io.BytesIO(), opset_version=9)
        export(torch.nn.Linear(3, 2), (torch.randn(2, 3),), io.BytesIO(), opset_version=12)  # not raised there
    finally:
        unregister_custom_op_symbolic("aten::linear", 9)
    (issue,) = report.issues
    assert (issue.category, issue.needs_opset, issue.reason) == ("opset", 12, None)
    assert (info.value.required_opset, info.value.node) == (report.needs_opset, "aten::linear")
    assert "my linear needs opset 12" in str(info.value)


@pytest.mark.parametrize("message,opset,needs", [
    ("a plain message without the phrase", 9, None),
    ("x (pass opset_version=13)", 9, 13),
    ("x (pass opset_version=13)", 13, None),  # not higher than the target: not a requirement
])
def test_conversion_issue_reads_a_plain_message(message, opset, needs):
    assert ConversionIssue("aten::x", opset, "", "", message).needs_opset == needs


# -- the declarations -----------------------------------------------------------------------------


def _literal_requirements() -> list[tuple[str, int, int, str]]:
    """(file, line, opset, reason) of every requirement stated in symbolic/ and in the builder's
    schema helpers (onnx_ops): ``OPSET.require(g, reason)`` with a literal reason (or a choice
    between literals), its opset from the module's table, and ``needs_opset(N, reason)`` with both
    literal (the builder's and the legacy helpers' way)."""
    import importlib

    found = []
    for path in sorted(SYMBOLIC.rglob("*.py")) + [pathlib.Path(onnx_ops.__file__)]:
        module = None
        if path.parent.name == "ops":
            module = importlib.import_module(f"torchscript_onnx.symbolic.ops.{path.stem}")
        elif path.parent == SYMBOLIC and "OPSET = " in path.read_text():
            module = importlib.import_module(f"torchscript_onnx.symbolic.{path.stem}")
        for node in ast.walk(ast.parse(path.read_text())):
            helper = ast.unparse(node.func) if isinstance(node, ast.Call) else ""
            if helper in ("sh.needs_opset", "needs_opset"):
                if len(node.args) >= 2 and all(isinstance(a, ast.Constant) for a in node.args[:2]):
                    found.append((path.name, node.lineno, node.args[0].value, node.args[1].value))
            elif helper == "OPSET.require" and module is not None:
                for reason in _choices(node.args[1]):
                    found.append((path.name, node.lineno, module.OPSET.opset(reason), reason))
    return found


def _choices(node) -> list[str]:
    if isinstance(node, ast.IfExp):
        return _choices(node.body) + _choices(node.orelse)
    return [node.value] if isinstance(node, ast.Constant) else []


def test_raise_sites_use_the_typed_requirement():
    """No conversion words an opset requirement in a plain error any more."""
    assert len(_literal_requirements()) > 40
    plain = []
    for path in sorted(SYMBOLIC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] in (
                    "value_error", "unimplemented", "SymbolicValueError"):
                if "opset_version" in ast.unparse(node):
                    plain.append(f"{path.name}:{node.lineno}")
    assert not plain


def test_every_declared_condition_is_raised_somewhere_and_every_op_is_registered():
    registered = {name for name, _, _ in registry.all_functions()}
    literal = {(opset, reason) for _, _, opset, reason in _literal_requirements()}
    for name, requirements in registry.all_opset_requirements().items():
        assert name in registered, name
        lowest = registry.lowest_supporting_opset(name)
        for opset, condition in requirements:
            assert opset > 9 and opset > lowest, (name, condition, opset)  # more than its registration serves
            # a literal raise, or one of the few whose reason is built from the op's arguments
            assert (opset, condition) in literal or condition.startswith(
                ("a list of runtime length", "pads known only", "integer inputs (ONNX Bitwise", "reduce=",
                 "linear mode", "cubic mode", "nearest-exact mode")), (name, condition)


# raised while the graph inputs are added, before any node: no op to declare it for
OF_GRAPH_INPUTS = {"a quantized graph input (ONNX QuantizeLinear/DequantizeLinear)"}
# the legacy exporter's helpers, which only custom symbolics call: no built-in op to declare theirs for
LEGACY_HELPER_FILES = {"legacy_helpers.py", "legacy_lowerings.py"}
# raised by the builder's constructors for axes known only at runtime, which only the legacy helpers
# pass (a built-in conversion states its own condition first: "a dim known only at runtime ...")
FOR_LEGACY_HELPERS = {"Unsqueeze with axes known only at runtime", "Squeeze with axes known only at runtime"}


def test_requirements_above_opset_9_are_declared_for_some_op():
    declared = {requirement for requirements in registry.all_opset_requirements().values()
                for requirement in requirements}
    missing = [(f, line, o, r) for f, line, o, r in _literal_requirements() if o > 9 and (o, r) not in declared
               and r not in OF_GRAPH_INPUTS | FOR_LEGACY_HELPERS and f not in LEGACY_HELPER_FILES]
    assert not missing, missing


def test_supported_ops_doc_shows_the_conditions():
    from torchscript_onnx.supported_ops_doc import render

    lines = {line.split("|")[1].strip(" `"): line for line in render().splitlines() if line.startswith("| `")}
    assert "k known only at runtime: 10+; non-float input: 11+" in lines["aten::topk"]
    assert "a 5-D (volumetric) input: 20+" in lines["aten::grid_sampler"]
    assert lines["aten::abs"].endswith("|  |")


class PadByList(torch.nn.Module):
    def forward(self, x, pads: list[int]):
        return F.pad(x, pads)


def test_a_list_graph_input_states_its_requirement():
    """Raised while the graph inputs are added, before any node: typed too."""
    with pytest.raises(OpsetRequirementError) as info:
        export(torch.jit.script(PadByList()), (torch.randn(1, 2, 3), [1, 1]), io.BytesIO(), opset_version=10)
    assert info.value.required_opset == 11 and "the list input" in str(info.value) and "pass opset_version=11" in str(info.value)


@pytest.mark.parametrize("stated,error", [
    ('"declared"', None),
    ('"declared" if x else "also declared"', None),
    ('"not declared"', "'not declared' is not declared"),
    ('"declared" if x else "not declared"', "'not declared' is not declared"),
    ("f'{x}'", "state the opset condition as a literal"),
])
def test_a_stated_condition_is_checked_against_the_table_at_import(tmp_path, stated, error):
    """A conversion states its condition; the opset comes from the module's table, and a condition
    the table lacks fails the import, not the export that first meets it."""
    import importlib.util

    source = tmp_path / "topic.py"
    source.write_text(
        "from torchscript_onnx.symbolic.registry import declare_opset_requirements\n"
        "OPSET = declare_opset_requirements({}, unlisted={'declared': 9, 'also declared': 9})\n"
        f"def conversion(g, x):\n    OPSET.require(g, {stated})\n")
    spec = importlib.util.spec_from_file_location("topic", source)
    if error is None:
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    else:
        with pytest.raises(ValueError, match=error):
            spec.loader.exec_module(importlib.util.module_from_spec(spec))


def test_a_stated_condition_raises_below_its_opset_only():
    table = registry.OpsetRequirements({"ONNX Expand": 8})
    table.require(dataclasses.make_dataclass("G", ["opset"])(8), "ONNX Expand")
    with pytest.raises(OpsetRequirementError) as info:
        table.require(dataclasses.make_dataclass("G", ["opset"])(7), "ONNX Expand")
    assert info.value.required_opset == 8 and "ONNX Expand needs opset 8" in str(info.value)


@pytest.mark.parametrize("op_type,opset,exists", [
    ("Sign", 8, False), ("Sign", 9, True),  # came at 9
    ("Round", 10, False), ("Round", 11, True),
    ("Resize", 9, False), ("Resize", 10, True),
    ("Upsample", 9, True), ("Upsample", 20, True),  # deprecated at 10, still a schema
    ("Relu", 7, True),
    ("NoSuchOp", 20, False),
])
def test_has_op_answers_from_the_schema_at_the_opset(op_type, opset, exists):
    assert onnx_ops.has_op(dataclasses.make_dataclass("G", ["opset"])(opset), op_type) is exists
