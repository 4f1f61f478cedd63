"""The export options are defined once (``ExportOptions``): their names, defaults and checks.

``export``'s signature reads each option's default from the dataclass; ``build``, ``audit``,
``verify`` and the CLI take the same options; each option is checked once per export, and the
model and arguments are checked once, also when ``dynamic_shapes`` reads them first.
"""

import dataclasses
import inspect
import sys
import warnings

import pytest
import torch

import torchscript_onnx as tso
from torchscript_onnx import api
from torchscript_onnx.builder.options import OPTION_NAMES, ExportOptions, OperatorExportTypes, TrainingMode
from torchscript_onnx.utils import LEGACY_POSITIONAL_OPTIONS


def test_export_takes_every_option_with_the_dataclass_default():
    parameters = inspect.signature(tso.export).parameters
    for field in dataclasses.fields(ExportOptions):
        assert field.name in parameters, field.name
        assert parameters[field.name].default is field.default, field.name


def test_the_legacy_positional_order_is_the_dataclass_order():
    assert LEGACY_POSITIONAL_OPTIONS == (
        "export_params", "verbose", "training", "input_names", "output_names", "operator_export_type",
        "opset_version", "do_constant_folding", "dynamic_axes", "keep_initializers_as_inputs", "custom_opsets",
        "export_modules_as_functions", "autograd_inlining")
    assert OPTION_NAMES[:len(LEGACY_POSITIONAL_OPTIONS)] == LEGACY_POSITIONAL_OPTIONS


# (option, as given, as stored)
NORMALISED = [
    ("opset_version", None, tso.DEFAULT_OPSET),
    ("verbose", None, False),
    ("input_names", ["a", "b"], ("a", "b")),
    ("output_names", None, ()),
    ("dynamic_axes", {"a": [0]}, {"a": {0: "a_dynamic_axes_1"}}),
    ("keep_initializers_as_inputs", None, False),
    ("custom_opsets", None, {}),
    ("metadata_props", None, {}),
    ("training", torch.onnx.TrainingMode.TRAINING, TrainingMode.TRAINING),
    ("operator_export_type", torch.onnx.OperatorExportTypes.ONNX_ATEN, OperatorExportTypes.ONNX_ATEN),
]


@pytest.mark.parametrize("name, given, stored", NORMALISED, ids=[row[0] for row in NORMALISED])
def test_options_are_stored_normalised_and_a_second_check_keeps_them(name, given, stored):
    extra = {"input_names": ["a"]} if name == "dynamic_axes" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the list form of dynamic_axes warns, as legacy
        options = ExportOptions(**{name: given, **extra})
    assert getattr(options, name) == stored
    again = ExportOptions(**{n: getattr(options, n) for n in OPTION_NAMES})
    assert again == options


def test_opsets_7_and_8_list_the_initializers_as_inputs():
    assert ExportOptions(opset_version=8).keep_initializers_as_inputs is True
    assert ExportOptions(opset_version=9, keep_initializers_as_inputs=True).keep_initializers_as_inputs is True


# (entry point, call)
UNKNOWN_OPTION = [
    ("build", lambda m, x: tso.build(m, (x,), opset=13)),
    ("audit", lambda m, x: tso.audit(m, (x,), opset=13)),
    ("verify", lambda m, x: tso.verify(m, (x,), opset=13)),
    ("export_to_pretty_string", lambda m, x: tso.export_to_pretty_string(m, (x,), opset=13)),
]


@pytest.mark.parametrize("function, call", UNKNOWN_OPTION, ids=[row[0] for row in UNKNOWN_OPTION])
def test_an_unknown_option_names_the_function_and_lists_the_options(function, call):
    with pytest.raises(TypeError, match=rf"{function}\(\) got unexpected option\(s\) \['opset'\].*opset_version"):
        call(torch.nn.Linear(2, 2), torch.randn(1, 2))


@pytest.mark.parametrize("function", [tso.build, tso.audit])
def test_checked_options_and_option_keywords_together_are_refused(function):
    with pytest.raises(TypeError, match="options= and option keywords"):
        function(torch.nn.Linear(2, 2), (torch.randn(1, 2),), options=ExportOptions(), opset_version=13)


def test_checked_options_go_through_build_and_audit():
    model, x = torch.nn.Linear(2, 2).eval(), torch.randn(1, 2)
    options = ExportOptions(opset_version=13, input_names=["x"])
    exported = tso.build(model, (x,), options=options)
    assert exported.options is options
    assert [v.name for v in exported.graph.inputs] == ["x"]
    assert tso.audit(model, (x,), options=options).opset == 13


def _count_calls(monkeypatch, module, name):
    calls = []
    original = getattr(module, name)

    def counted(*args, **kwargs):
        calls.append((args, kwargs))
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


@pytest.mark.parametrize("dynamic", [False, True], ids=["dynamic_axes", "dynamic_shapes"])
def test_an_export_checks_the_model_and_each_option_once(monkeypatch, dynamic):
    model, x = torch.nn.Linear(4, 3).train(), torch.randn(2, 4)
    model_checks = _count_calls(monkeypatch, api, "_check_model")
    option_checks = _count_calls(monkeypatch, ExportOptions, "__post_init__")
    axes = dict(dynamic_shapes={"input": {0: "batch"}}) if dynamic else dict(dynamic_axes={"nope": {0: "b"}})
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        # PRESERVE on a model in training mode converts as TRAINING: a copy of the checked options
        tso.export(model, (x,), None, training=TrainingMode.PRESERVE, **axes)
    assert len(model_checks) == 1
    assert len(option_checks) == 1
    assert len([w for w in record if "Provided key nope" in str(w.message)]) == (0 if dynamic else 1)


def test_the_cli_exports_and_audits_with_one_checked_options(monkeypatch, tmp_path):
    from torchscript_onnx import cli

    seen = []
    original_export_with = api.export_with

    def export_with(model, args, f, options, **rest):
        seen.append(options)
        return original_export_with(model, args, f, options, **rest)

    monkeypatch.setattr(api, "export_with", export_with)
    archive = tmp_path / "m.pt"
    torch.jit.save(torch.jit.script(torch.nn.Linear(3, 2).eval()), str(archive))
    assert cli.main(["export", str(archive), "-o", str(tmp_path / "m.onnx"), "--input", "x:2x3",
                     "--opset", "13"]) == 0
    (options,) = seen
    assert isinstance(options, ExportOptions) and options.opset_version == 13 and options.input_names == ("x",)
    def seen_audit_options(calls):
        return [kwargs["options"] for _, kwargs in calls]

    audited = _count_calls(monkeypatch, sys.modules["torchscript_onnx.audit"], "audit")
    assert cli.main(["audit", str(archive), "--input", "x:2x3", "--opset", "13"]) == 0
    (options,) = seen_audit_options(audited)
    assert options.opset_version == 13 and options.input_names == ("x",)
