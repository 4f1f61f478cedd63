"""Errors of ``export``: one table row per validation error, then the conversion errors.

Every validation row asserts the error type, that the message names the argument, that nothing
was written and, for checks that need no graph, that the model never ran (validated before work).
"""

from __future__ import annotations

import io
import os

import onnx
import pytest
import torch

import torchscript_onnx as tso
from torchscript_onnx import OnnxExporterError, SymbolicValueError, UnsupportedOperatorError
from torchscript_onnx.verify import verify

# Two operators no exporter knows, so the "unsupported" tests do not depend on the op tables.
_LIB = torch.library.Library("tso_test", "DEF")
_LIB.define("mystery(Tensor x) -> Tensor")
_LIB.impl("mystery", lambda x: x + 1, "CompositeExplicitAutograd")
_LIB.define("enigma(Tensor x) -> Tensor")
_LIB.impl("enigma", lambda x: x * 3, "CompositeExplicitAutograd")


class Counting(torch.nn.Module):
    """Linear + add; counts forward calls to prove validation ran before any work."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(3, 4)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.linear(x) + 1


def _x():
    return torch.randn(2, 3)


# (id, overrides of export's arguments, error type, text the message must contain, before_work)
# ``before_work``: raised before the model runs. The others need the captured graph (how many
# inputs/outputs, their ranks) and are raised after capture but still before anything is written.
VALIDATION_ERRORS = [
    ("model-int", dict(model=42), TypeError, "model", True),
    ("model-class", dict(model=torch.nn.Linear), TypeError, "model", True),
    ("model-dataparallel", dict(model="dataparallel"), ValueError, "Try torch.onnx.export(model.module, ...)", True),
    ("model-exported-program", dict(model="exported-program"), TypeError, "model", True),
    ("args-object", dict(args=object()), TypeError, "args", True),
    ("args-nested-object", dict(args=(_x(), [object()])), TypeError, "args[1][0]", True),
    ("args-unknown-keyword", dict(args=(_x(), {"nope": 1})), TypeError, "args", True),
    ("args-missing-input", dict(args=()), TypeError, "args", True),
    ("kwargs-not-dict", dict(kwargs=[1, 2]), TypeError, "kwargs", True),
    ("kwargs-key-not-str", dict(kwargs={1: _x()}), TypeError, "kwargs", True),
    ("f-int", dict(f=123), TypeError, "f must be", True),
    ("f-empty-path", dict(f=""), ValueError, "f must be", True),
    ("f-directory", dict(f="<dir>"), IsADirectoryError, "f=", True),
    ("f-missing-folder", dict(f="<dir>/missing/model.onnx"), FileNotFoundError, "f=", True),
    ("f-text-stream", dict(f=io.StringIO()), TypeError, "f must be a binary", True),
    ("f-read-only", dict(f="<read-only>"), ValueError, "f is a file object that is not writable", True),
    ("export_params-str", dict(export_params="yes"), TypeError, "export_params", True),
    ("verbose-int", dict(verbose=1), TypeError, "verbose", True),
    ("training-str", dict(training="eval"), TypeError, "training", True),
    ("training-bool", dict(training=True), TypeError, "training", True),
    ("input_names-str", dict(input_names="x"), TypeError, "input_names", True),
    ("input_names-non-str", dict(input_names=["x", 3]), TypeError, "input_names", True),
    ("input_names-duplicate", dict(input_names=["x", "x"]), ValueError, "input_names", True),
    ("input_names-too-many", dict(input_names=["x", "y"]), ValueError, "input_names", False),
    ("output_names-empty-name", dict(output_names=["y", ""]), TypeError, "output_names", True),
    ("output_names-too-many", dict(output_names=["y", "z"]), ValueError, "output_names", False),
    ("names-shared", dict(input_names=["x"], output_names=["x"]), ValueError, "input_names and output_names", True),
    ("operator_export_type-str", dict(operator_export_type="ONNX"), TypeError, "operator_export_type", True),
    ("opset_version-6", dict(opset_version=6), ValueError, "opset_version", True),
    ("opset_version-27", dict(opset_version=27), ValueError, "opset_version", True),
    ("opset_version-float", dict(opset_version=17.0), TypeError, "opset_version", True),
    ("opset_version-bool", dict(opset_version=True), TypeError, "opset_version", True),
    ("do_constant_folding-none", dict(do_constant_folding=None), TypeError, "do_constant_folding", True),
    ("dynamic_axes-list", dict(dynamic_axes=[0]), TypeError, "dynamic_axes", True),
    # legacy warns about a name that is neither an input nor an output; strict=True makes it an error
    ("dynamic_axes-unknown-name-strict", dict(input_names=["x"], dynamic_axes={"nope": {0: "b"}}, strict=True),
     ValueError, "Provided key nope for dynamic axes", True),
    ("dynamic_axes-axes-int", dict(input_names=["x"], dynamic_axes={"x": 0}), TypeError, "dynamic_axes", True),
    ("dynamic_axes-axis-str", dict(input_names=["x"], dynamic_axes={"x": {"0": "batch"}}), TypeError,
     "dynamic_axes", True),
    ("dynamic_axes-dim-name-int", dict(input_names=["x"], dynamic_axes={"x": {0: 1}}), TypeError,
     "dynamic_axes", True),
    ("dynamic_axes-axis-out-of-rank", dict(input_names=["x"], dynamic_axes={"x": {5: "batch"}}), ValueError,
     "dynamic_axes", False),
    ("keep_initializers_as_inputs-str", dict(keep_initializers_as_inputs="no"), TypeError,
     "keep_initializers_as_inputs", True),
    ("custom_opsets-list", dict(custom_opsets=[("my", 1)]), TypeError, "custom_opsets", True),
    ("custom_opsets-default-domain", dict(custom_opsets={"": 1}), ValueError, "custom_opsets", True),
    ("custom_opsets-version-0", dict(custom_opsets={"my.domain": 0}), ValueError, "custom_opsets", True),
    ("export_modules_as_functions-opset-14", dict(export_modules_as_functions=True, opset_version=14), ValueError,
     "export_modules_as_functions needs ONNX local functions, available from opset 15", True),
    ("export_modules_as_functions-str", dict(export_modules_as_functions="yes"), TypeError,
     "export_modules_as_functions", True),
    ("export_modules_as_functions-set-of-int", dict(export_modules_as_functions={int}), TypeError,
     "export_modules_as_functions", True),
    ("autograd_inlining-none", dict(autograd_inlining=None), TypeError, "autograd_inlining", True),
    ("dynamo-true", dict(dynamo=True), ValueError, "torch.onnx.export(..., dynamo=True)", True),
    ("external_data-str", dict(external_data="yes"), TypeError, "external_data", True),
    # legacy ignored external_data, so a file object only warns; strict=True makes it an error
    ("external_data-file-object-strict", dict(external_data=True, f=io.BytesIO(), strict=True), ValueError,
     "external_data=True needs f as a path", True),
    ("dynamic_shapes-str", dict(dynamic_shapes="batch"), TypeError, "dynamic_shapes", True),
    ("dynamic_shapes-unknown-parameter", dict(dynamic_shapes={"nope": {0: "b"}}), ValueError, "dynamic_shapes", True),
    ("dynamic_shapes-and-axes", dict(dynamic_shapes={"x": {0: "b"}}, dynamic_axes={"x": [0]}), ValueError,
     "not both", True),
    ("custom_translation_table-given", dict(custom_translation_table={torch.relu: torch.sigmoid}), ValueError,
     "register_custom_op_symbolic", True),
    ("report-int", dict(report=1), TypeError, "report", True),
    ("optimize-str", dict(optimize="no"), TypeError, "optimize", True),
    ("verify-int", dict(verify=1), TypeError, "verify", True),
    ("profile-int", dict(profile=1), TypeError, "profile", True),
    ("dump_exported_program-int", dict(dump_exported_program=1), TypeError, "dump_exported_program", True),
    ("artifacts_dir-int", dict(artifacts_dir=3, report=True), TypeError, "artifacts_dir", True),
    ("fallback-str", dict(fallback="no"), TypeError, "fallback", True),
    ("strict-str", dict(strict="no"), TypeError, "strict", True),
    ("value_info-str", dict(value_info="no"), TypeError, "value_info", True),
    ("provenance-none", dict(provenance=None), TypeError, "provenance", True),
    ("metadata_props-list", dict(metadata_props=[("author", "me")]), TypeError, "metadata_props", True),
]


@pytest.mark.parametrize("overrides, error, text, before_work",
                         [pytest.param(*row[1:], id=row[0]) for row in VALIDATION_ERRORS])
def test_validation_error(tmp_path, overrides, error, text, before_work):
    model = Counting()
    target = tmp_path / "model.onnx"
    call = dict(model=model, args=(_x(),), f=str(target))
    call.update(overrides)
    if call["model"] == "dataparallel":
        call["model"] = torch.nn.DataParallel(model)
    elif call["model"] == "exported-program":
        # A bare instance: the check is by type, and torch.export.export() takes ~10 s.
        call["model"] = object.__new__(torch.export.ExportedProgram)
    read_only = None
    if call["f"] == "<read-only>":
        source = tmp_path.parent / f"{tmp_path.name}-read-only.onnx"
        source.write_bytes(b"")
        call["f"] = read_only = open(source, "rb")
    elif isinstance(call["f"], str) and call["f"].startswith("<dir>"):
        call["f"] = call["f"].replace("<dir>", str(tmp_path))
    try:
        with pytest.raises(error) as info:
            tso.export(call.pop("model"), call.pop("args"), call.pop("f"), **call)
    finally:
        if read_only is not None:
            read_only.close()
    assert text in str(info.value)
    assert not target.exists()
    assert os.listdir(tmp_path) == []  # no temporary file left either
    if before_work:
        assert model.calls == 0


def test_every_export_argument_has_a_validation_row():
    import inspect

    named = {key for row in VALIDATION_ERRORS for key in row[1]}
    arguments = set(inspect.signature(tso.export).parameters)
    assert arguments <= named


def test_torch_enum_members_are_accepted():
    proto = tso.export(Counting(), (_x(),), None, training=torch.onnx.TrainingMode.EVAL,
                       operator_export_type=torch.onnx.OperatorExportTypes.ONNX)
    assert isinstance(proto, onnx.ModelProto)


# -- unsupported operators ------------------------------------------------------------------------


class Mystery(torch.nn.Module):
    def forward(self, x):
        return torch.ops.tso_test.mystery(x)  # MYSTERY-LINE


class Enigma(torch.nn.Module):
    def forward(self, x):
        return torch.ops.tso_test.enigma(x)  # ENIGMA-LINE


class TwoUnsupported(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.first = Mystery()
        self.second = Enigma()
        self.linear = torch.nn.Linear(3, 3)

    def forward(self, x):
        return self.second(self.first(self.linear(x)))


def _line_of(marker: str) -> str:
    with open(__file__) as source:
        for number, line in enumerate(source, start=1):
            if marker in line and "_line_of" not in line:
                return f"{os.path.basename(__file__)}:{number}"
    raise AssertionError(marker)


def test_unsupported_operator_error_lists_every_op_with_scope_and_source():
    with pytest.raises(UnsupportedOperatorError) as info:
        tso.export(TwoUnsupported(), (_x(),), None, opset_version=17)
    error = info.value
    assert isinstance(error, OnnxExporterError)
    assert {op.name for op in error.ops} == {"tso_test::mystery", "tso_test::enigma"}
    assert error.opset == 17
    message = str(error)
    assert "opset 17" in message
    assert "tso_test::mystery" in message and "tso_test::enigma" in message
    assert "/first" in message and "/second" in message
    assert _line_of("MYSTERY-LINE") in message
    assert _line_of("ENIGMA-LINE") in message
    assert "register_custom_op_symbolic" in message


def test_unsupported_operator_names_the_opset_that_supports_it():
    def mystery(g, x):
        return g.op("Add", x, g.constant(1.0, torch.float32))

    tso.register_custom_op_symbolic("tso_test::mystery", mystery, 15)
    try:
        with pytest.raises(UnsupportedOperatorError) as info:
            tso.export(Mystery(), (_x(),), None, opset_version=13)
        assert "supported from opset 15: pass opset_version=15" in str(info.value)
        verify(Mystery(), (_x(),), opset_version=15)
    finally:
        tso.unregister_custom_op_symbolic("tso_test::mystery", 15)


def test_failed_export_keeps_an_existing_file(tmp_path):
    target = tmp_path / "model.onnx"
    target.write_bytes(b"previous bytes")
    with pytest.raises(UnsupportedOperatorError):
        tso.export(TwoUnsupported(), (_x(),), target)
    assert target.read_bytes() == b"previous bytes"
    assert os.listdir(tmp_path) == ["model.onnx"]


def test_failed_export_writes_no_new_file(tmp_path):
    target = tmp_path / "model.onnx"
    with pytest.raises(UnsupportedOperatorError):
        tso.export(TwoUnsupported(), (_x(),), str(target))
    assert os.listdir(tmp_path) == []


def test_failed_export_writes_nothing_to_a_stream():
    stream = io.BytesIO()
    with pytest.raises(UnsupportedOperatorError):
        tso.export(TwoUnsupported(), (_x(),), stream)
    assert stream.getvalue() == b""


def test_write_failing_midway_keeps_the_existing_file(tmp_path, monkeypatch):
    from torchscript_onnx.pipeline import serialize

    target = tmp_path / "model.onnx"
    target.write_bytes(b"previous bytes")
    real_write = serialize.write_model

    def write_half_then_fail(model, graph, stream):
        buffer = io.BytesIO()
        real_write(model, graph, buffer)
        stream.write(buffer.getvalue()[: len(buffer.getvalue()) // 2])
        raise OSError("disk full")

    monkeypatch.setattr(serialize, "write_model", write_half_then_fail)
    with pytest.raises(OSError, match="disk full"):
        tso.export(Counting(), (_x(),), target)
    assert target.read_bytes() == b"previous bytes"
    assert os.listdir(tmp_path) == ["model.onnx"]


# -- errors inside conversions --------------------------------------------------------------------


class UsesFunctionalLinear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(4, 3))

    def forward(self, x):
        return torch.nn.functional.linear(x, self.weight)  # LINEAR-LINE


def test_symbolic_value_error_names_value_node_and_user_source_line():
    from torchscript_onnx.symbolic import symbolic_helper as sh

    def refuse(g, input, weight, bias):
        sh.value_error("weights of this kind are refused", weight)

    tso.register_custom_op_symbolic("aten::linear", refuse, 7)
    try:
        with pytest.raises(SymbolicValueError) as info:
            tso.export(UsesFunctionalLinear(), (_x(),), None, opset_version=11)
    finally:
        tso.unregister_custom_op_symbolic("aten::linear", 7)
    error = info.value
    message = str(error)
    assert "weights of this kind are refused" in message
    assert error.node == "aten::linear" and "aten::linear" in message
    assert error.opset == 11 and "opset 11" in message
    # The value with its dtype and shape.
    assert "float32[4, 3]" in message
    # The user's line, not torch/nn/functional.py.
    assert error.source.endswith(_line_of("LINEAR-LINE"))
    assert _line_of("LINEAR-LINE") in message
    assert "torch/nn" not in error.source


def test_unexpected_exception_in_a_symbolic_becomes_symbolic_value_error():
    def broken(g, input, weight, bias):
        raise KeyError("no such thing")

    tso.register_custom_op_symbolic("aten::linear", broken, 7)
    try:
        with pytest.raises(SymbolicValueError) as info:
            tso.export(UsesFunctionalLinear(), (_x(),), None)
    finally:
        tso.unregister_custom_op_symbolic("aten::linear", 7)
    assert isinstance(info.value.__cause__, KeyError)
    assert "KeyError" in str(info.value) and "aten::linear" in str(info.value)
    assert _line_of("LINEAR-LINE") in str(info.value)


def test_source_of_prefers_the_innermost_frame_outside_torch():
    from torchscript_onnx.pipeline.convert import source_of

    torch_dir = os.path.dirname(torch.__file__)

    class FakeNode:
        def __init__(self, text):
            self.text = text

        def sourceRange(self):
            return self.text

    stack = (f"{torch_dir}/nn/functional.py(2000): gelu\n"
             "/home/user/model.py(42): forward\n"
             f"{torch_dir}/nn/modules/module.py(1768): _slow_forward\n"
             "/home/user/train.py(7): main\n")
    assert source_of(FakeNode(stack)) == "/home/user/model.py:42"
    only_torch = f"{torch_dir}/nn/functional.py(2000): gelu\n{torch_dir}/nn/modules/module.py(1768): f\n"
    assert source_of(FakeNode(only_torch)) == f"{torch_dir}/nn/functional.py:2000"
    script = '  File "/home/user/model.py", line 9\n    return torch.sin(y)\n'
    assert source_of(FakeNode(script)) == "/home/user/model.py:9"
    assert source_of(FakeNode("")) == ""


def test_errors_leave_the_model_as_it_was():
    model = TwoUnsupported()
    model.train()
    model.first.eval()
    flags = [m.training for m in model.modules()]
    weight = model.linear.weight.detach().clone()
    model.linear.bias.requires_grad_(False)
    for mode in tso.TrainingMode:
        with pytest.raises(UnsupportedOperatorError):
            tso.export(model, (_x(),), None, training=mode)
        assert [m.training for m in model.modules()] == flags
        assert torch.equal(model.linear.weight, weight)
        assert model.linear.weight.requires_grad and not model.linear.bias.requires_grad
        assert not tso.is_in_onnx_export() and not torch.onnx.is_in_onnx_export()


def test_errors_survive_pickling():
    import pickle

    with pytest.raises(UnsupportedOperatorError) as unsupported:
        tso.export(TwoUnsupported(), (_x(),), None)
    copy = pickle.loads(pickle.dumps(unsupported.value))
    assert str(copy) == str(unsupported.value) and [op.name for op in copy.ops] == ["tso_test::mystery",
                                                                                      "tso_test::enigma"]

    def broken(g, input, weight, bias):
        raise KeyError("no such thing")

    tso.register_custom_op_symbolic("aten::linear", broken, 7)
    try:
        with pytest.raises(SymbolicValueError) as symbolic:
            tso.export(UsesFunctionalLinear(), (_x(),), None)
    finally:
        tso.unregister_custom_op_symbolic("aten::linear", 7)
    copy = pickle.loads(pickle.dumps(symbolic.value))
    assert str(copy) == str(symbolic.value) and copy.node == "aten::linear"


def test_dataparallel_gets_legacys_error():
    """The error type and words of the legacy exporter, which tell to export ``model.module``."""
    model = torch.nn.DataParallel(Counting())
    with pytest.raises(ValueError) as ours:
        tso.export(model, (_x(),), io.BytesIO())
    assert model.module.calls == 0
    if not hasattr(torch.onnx, "utils"):
        assert "torch.onnx.export(model.module, ...)" in str(ours.value)
        return  # no legacy exporter in this torch to compare with
    with pytest.raises(Exception) as legacy:
        torch.onnx.export(model, (_x(),), io.BytesIO(), dynamo=False)
    assert type(ours.value) is type(legacy.value) and str(ours.value) == str(legacy.value)


# -- one hierarchy, one meaning per attribute -----------------------------------------------------

# (error class, the built-in class it also is, so existing ``except`` clauses keep catching it)
HIERARCHY = [
    ("VerificationError", AssertionError),
    ("DynamicAxesError", ValueError),
    ("UnflattenableCacheError", TypeError),
    ("CheckerError", RuntimeError),
    ("UnsupportedOperatorError", RuntimeError),
    ("OpsetRequirementError", RuntimeError),
]


@pytest.mark.parametrize("name, builtin", HIERARCHY, ids=[row[0] for row in HIERARCHY])
def test_every_error_is_an_onnx_exporter_error_and_what_it_was(name, builtin):
    from torchscript_onnx import errors

    cls = getattr(errors, name)
    assert issubclass(cls, OnnxExporterError) and issubclass(cls, builtin)
    assert issubclass(cls, torch.onnx.errors.OnnxExporterError)


def test_the_old_homes_of_moved_errors_still_import():
    from torchscript_onnx import errors
    from torchscript_onnx.pipeline.hf_cache import UnflattenableCacheError
    from torchscript_onnx.verification import VerificationError

    assert (VerificationError, UnflattenableCacheError) == (errors.VerificationError, errors.UnflattenableCacheError)
    assert tso.VerificationError is errors.VerificationError


def test_opset_is_the_target_on_every_error_and_required_opset_what_a_node_needs():
    with pytest.raises(UnsupportedOperatorError) as unsupported:
        tso.export(TwoUnsupported(), (_x(),), None, opset_version=13)
    with pytest.raises(tso.OpsetRequirementError) as requirement:
        tso.export(torch.nn.Upsample(scale_factor=2.5, mode="bilinear"), (torch.randn(1, 1, 4, 4),), None,
                   opset_version=9)
    assert unsupported.value.opset == unsupported.value.target_opset == 13
    assert requirement.value.opset == requirement.value.target_opset == 9
    assert isinstance(requirement.value, SymbolicValueError) and requirement.value.required_opset > 9
