"""``install()``: torch's legacy ONNX entry points served by this exporter, on today's torch and on a
torch without its TorchScript-based exporter (the ``installed_on_both_torches`` fixture runs each
test on both); ``uninstall()`` puts back exactly what was there."""

from __future__ import annotations

import contextlib
import importlib
import io
import pathlib
import subprocess
import sys
import types
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

import torchscript_onnx as tso
from torch_without_legacy import legacy_exporter_removed
from torchscript_onnx.pipeline.serialize import PRODUCER_NAME
from torchscript_onnx.symbolic import symbolic_helper as our_helper

PROGRAM = pathlib.Path(__file__).parent / "programs" / "written_for_torch_2_0.py"


def _run(model_bytes: bytes, feeds: dict) -> list:
    return ort.InferenceSession(model_bytes, providers=["CPUExecutionProvider"]).run(None, feeds)


def _small_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()).eval(), torch.randn(2, 4)


def _exported_by_torch_onnx(model, args, **options) -> onnx.ModelProto:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(model, args, buffer, **options)
    return onnx.load_from_string(buffer.getvalue())


# -- the legacy names are ours ------------------------------------------------------------------------

# (import statement a program runs, the name it binds, what it must be after install())
LEGACY_IMPORTS = [
    ("import torch.onnx.symbolic_opset11", "torch.onnx.symbolic_opset11.clamp", "symbolic.symbolic_opset11.clamp"),
    ("from torch.onnx import symbolic_helper", "symbolic_helper", "symbolic.symbolic_helper"),
    ("from torch.onnx import utils", "utils", "utils"),
    ("from torch.onnx.symbolic_helper import parse_args", "parse_args", "symbolic.symbolic_helper.parse_args"),
    ("from torch.onnx.symbolic_opset9 import gelu", "gelu", "symbolic.symbolic_opset9.gelu"),
    ("from torch.onnx import symbolic_opset20", "symbolic_opset20", "symbolic.symbolic_opset20"),
    ("import torch.onnx.utils", "torch.onnx.utils.unconvertible_ops", "utils.unconvertible_ops"),
    ("import torch.onnx", "torch.onnx.utils.export", "utils.export"),
    ("import torch.onnx", "torch.onnx.register_custom_op_symbolic", "register_custom_op_symbolic"),
    ("import torch.onnx", "torch.onnx.unregister_custom_op_symbolic", "unregister_custom_op_symbolic"),
    ("import torch.onnx", "torch.onnx.select_model_mode_for_export", "select_model_mode_for_export"),
]


def _ours(path: str):
    target = tso
    for part in path.split("."):
        target = getattr(target, part)
    return target


@pytest.mark.parametrize("statement, name, ours", LEGACY_IMPORTS, ids=[row[0] + " " + row[1] for row in LEGACY_IMPORTS])
def test_legacy_imports_give_ours(installed_on_both_torches, statement, name, ours):
    namespace: dict = {}
    exec(f"{statement}\nfound = {name}", namespace)
    assert namespace["found"] is _ours(ours)


@pytest.mark.parametrize("name", ["TrainingMode", "OperatorExportTypes", "JitScalarType", "TensorProtoDataType"])
def test_legacy_enums_work(installed_on_both_torches, name):
    """Ours where torch has none any more; where torch still has them, its own (ours accept their members)."""
    enum = getattr(torch.onnx, name)
    if installed_on_both_torches == "without legacy":
        assert enum.__module__.startswith("torchscript_onnx")
    assert enum.__name__ == name


def test_legacy_enums_reach_the_export(installed_on_both_torches):
    model, x = _small_model()
    proto = _exported_by_torch_onnx(model, (x,), training=torch.onnx.TrainingMode.EVAL,
                                    operator_export_type=torch.onnx.OperatorExportTypes.ONNX)
    assert proto.producer_name == PRODUCER_NAME
    jit_type = torch.onnx.JitScalarType.from_value(x)
    assert (jit_type.scalar_name(), int(jit_type.onnx_type())) == ("Float", onnx.TensorProto.FLOAT)
    assert int(torch.onnx.TensorProtoDataType.INT64) == onnx.TensorProto.INT64


def test_every_facade_name_is_our_conversion(installed_on_both_torches):
    """``torch.onnx.symbolic_opsetN`` is our facade, and every name of it answers (test_legacy_facades.py
    checks each is our conversion at that opset)."""
    for opset in range(7, 21):
        torch_facade = importlib.import_module(f"torch.onnx.symbolic_opset{opset}")
        ours = importlib.import_module(f"torchscript_onnx.symbolic.symbolic_opset{opset}")
        assert torch_facade is ours
        for name in ours.__all__:
            getattr(torch_facade, name)


def test_names_imported_before_install_are_routed():
    """A library that bound torch's functions before install() (``from torch.onnx import export``)
    reaches ours, and gets torch's back after uninstall()."""
    library = types.ModuleType("library_imported_before_install")
    from torch.onnx import symbolic_helper as torch_helper

    library.onnx_export = torch.onnx.export
    library.register = torch.onnx.register_custom_op_symbolic
    library.parse_args = torch_helper.parse_args
    before = dict(vars(library))
    sys.modules[library.__name__] = library
    try:
        with tso.installed():
            assert library.register is tso.register_custom_op_symbolic
            assert library.parse_args is our_helper.parse_args
            assert library.onnx_export is torch.onnx.export and library.onnx_export is not before["onnx_export"]
        assert dict(vars(library)) == before
    finally:
        del sys.modules[library.__name__]


def test_a_legacy_decorator_applied_before_install_reads_our_values():
    """torch's own ``parse_args`` wraps a symbolic at import time; after install() its wrapper parses
    our values (it calls ``_parse_arg``, which is routed to ours)."""
    from torch.onnx.symbolic_helper import parse_args  # torch's, as a library imported early holds it

    seen = []

    @parse_args("v", "i", "none")
    def softmax_as_exp(g, self, dim, dtype=None):
        seen.append(dim)
        return g.op("Exp", g.op("LogSoftmax", self, axis_i=dim))

    model, x = torch.nn.Softmax(dim=1), torch.randn(2, 5)
    with tso.installed():
        torch.onnx.register_custom_op_symbolic("aten::softmax", softmax_as_exp, 13)
        try:
            proto = _exported_by_torch_onnx(model, (x,), opset_version=17)
        finally:
            torch.onnx.unregister_custom_op_symbolic("aten::softmax", 13)
    assert seen == [1]
    assert [n.op_type for n in proto.graph.node] == ["LogSoftmax", "Exp"]
    (got,) = _run(proto.SerializeToString(), {proto.graph.input[0].name: x.numpy()})
    np.testing.assert_allclose(got, model(x).numpy(), rtol=1e-5, atol=1e-6)


# -- uninstall() --------------------------------------------------------------------------------------


def _torch_onnx_state() -> dict:
    """Everything install() may change: torch.onnx's namespaces and sys.modules' torch.onnx entries,
    by identity."""
    import torch.onnx._internal

    modules = {name: id(m) for name, m in sys.modules.items() if name.startswith("torch.onnx")}
    return dict(onnx={k: id(v) for k, v in vars(torch.onnx).items()},
                internal={k: id(v) for k, v in vars(torch.onnx._internal).items()}, modules=modules)


@pytest.mark.parametrize("legacy", ["with legacy", "without legacy"])
def test_uninstall_restores_exactly(legacy):
    with legacy_exporter_removed() if legacy == "without legacy" else contextlib.nullcontext():
        before = _torch_onnx_state()
        tso.install()
        installed = _torch_onnx_state()
        tso.uninstall()
        after = _torch_onnx_state()
    assert installed != before
    assert after == before


def test_install_is_idempotent_and_refuses_a_second_routing():
    with tso.installed():
        state = _torch_onnx_state()
        tso.install()
        assert _torch_onnx_state() == state
        with pytest.raises(ValueError, match="uninstall"):
            tso.install(dynamo_default=True)
    assert not importlib.import_module("torchscript_onnx.install").is_installed()


def test_a_name_the_program_replaced_since_is_left_alone():
    def program_own_register(*args):
        pass

    tso.install()
    try:
        torch.onnx.register_custom_op_symbolic = program_own_register
    finally:
        tso.uninstall()
    try:
        assert torch.onnx.register_custom_op_symbolic is program_own_register
    finally:
        torch.onnx.register_custom_op_symbolic = importlib.import_module(
            "torch.onnx._internal.torchscript_exporter.utils").register_custom_op_symbolic


def test_importing_the_package_touches_nothing_of_torch():
    code = ("import sys, torch, torch.onnx\n"
            "before = {k: id(v) for k, v in vars(torch.onnx).items()}, set(sys.modules)\n"
            "import torchscript_onnx\n"
            "after = {k: id(v) for k, v in vars(torch.onnx).items()}\n"
            "assert after == before[0], set(after) ^ set(before[0])\n"
            "assert not [m for m in set(sys.modules) - before[1] if m.startswith('torch.onnx')]\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=pathlib.Path(__file__).parents[1])


# -- torch.onnx.export after install() -----------------------------------------------------------------

# (call options, exported by us?)
ROUTING = [
    (dict(dynamo=False), True),
    ({}, True),  # a program written for torch <= 2.8 does not pass dynamo
    (dict(dynamo=True), False),
]


@pytest.mark.parametrize("options, ours", ROUTING, ids=["dynamo=False", "no dynamo", "dynamo=True"])
def test_export_routing(monkeypatch, tmp_path, options, ours):
    calls = []

    def torch_export(model, args=(), f=None, *, dynamo=True, **kwargs):  # stands in for torch's own
        calls.append(dynamo)

    monkeypatch.setattr(torch.onnx, "export", torch_export)
    model, x = _small_model()
    with tso.installed():
        torch.onnx.export(model, (x,), str(tmp_path / "m.onnx"), **options)
    assert calls == ([] if ours else [True])
    assert (tmp_path / "m.onnx").exists() == ours
    assert torch.onnx.export is torch_export


def test_dynamo_default_keeps_torch_2_9_routing(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(torch.onnx, "export", lambda model, args=(), f=None, **kwargs: calls.append(kwargs))
    model, x = _small_model()
    with tso.installed(dynamo_default=True):
        torch.onnx.export(model, (x,), str(tmp_path / "a.onnx"))
        torch.onnx.export(model, (x,), str(tmp_path / "b.onnx"), dynamo=False)
    assert calls == [{"dynamo": True}]
    assert not (tmp_path / "a.onnx").exists() and (tmp_path / "b.onnx").exists()


def test_exported_programs_still_go_to_torch(monkeypatch):
    calls = []
    monkeypatch.setattr(torch.onnx, "export", lambda model, args=(), f=None, **kwargs: calls.append(type(model)))
    model, x = _small_model()
    program = torch.export.export(model, (x,))
    with tso.installed():
        torch.onnx.export(program, (x,), None, dynamo=False)
    assert calls == [type(program)]


def test_export_without_dynamo_matches_eager(installed_on_both_torches, tmp_path):
    model, x = _small_model()
    for k, call in enumerate([torch.onnx.export, torch.onnx.utils.export]):
        path = str(tmp_path / f"{k}.onnx")
        call(model, (x,), path, input_names=["x"], dynamic_axes={"x": {0: "batch"}})
        proto = onnx.load(path)
        assert proto.producer_name == PRODUCER_NAME
        other = torch.randn(5, 4)
        (got,) = _run(proto.SerializeToString(), {"x": other.numpy()})
        np.testing.assert_allclose(got, model(other).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_options_passed_positionally_as_in_torch_2_0(installed_on_both_torches):
    model, x = _small_model()
    buffer = io.BytesIO()
    # export_params, verbose, training, input_names, output_names
    torch.onnx.export(model, (x,), buffer, True, False, torch.onnx.TrainingMode.EVAL, ["features"], ["scores"])
    proto = onnx.load_from_string(buffer.getvalue())
    assert [i.name for i in proto.graph.input] == ["features"]
    assert [o.name for o in proto.graph.output] == ["scores"]
    with pytest.raises(TypeError, match="multiple values"):
        torch.onnx.export(model, (x,), io.BytesIO(), True, export_params=False)


def test_is_in_onnx_export_answers_inside_forward(installed_on_both_torches):
    seen = []

    class Probe(torch.nn.Module):
        def forward(self, x):
            seen.append(torch.onnx.is_in_onnx_export())
            return x + 1

    torch.onnx.export(Probe(), (torch.randn(2),), io.BytesIO())
    assert seen == [True] and torch.onnx.is_in_onnx_export() is False


def test_is_in_onnx_export_answers_where_torch_reads_only_its_dynamo_flag(monkeypatch):
    """A torch whose is_in_onnx_export() reads only the dynamo exporter's flag (the legacy flag
    gone with the legacy exporter): installed, it answers True inside our export as well."""
    from torch.onnx._internal.exporter import _flags

    monkeypatch.setattr(torch.onnx, "is_in_onnx_export", lambda: _flags._is_onnx_exporting)
    seen = []

    class Probe(torch.nn.Module):
        def forward(self, x):
            seen.append(torch.onnx.is_in_onnx_export())
            return x + 1

    with tso.installed():
        torch.onnx.export(Probe(), (torch.randn(2),), io.BytesIO(), dynamo=False)
        assert torch.onnx.is_in_onnx_export() is False
    tso.export(Probe(), (torch.randn(2),), io.BytesIO())
    assert seen == [True, False]  # not installed: torch's own answer, which our export leaves alone


# -- custom symbolics through torch.onnx's names ---------------------------------------------------------


def scaled_relu(g, x):
    return g.op("Mul", g.op("Relu", x), g.op("Constant", value_t=torch.tensor(2.0)))


class ReluModel(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) - 1


# (registration opset, export opset, served by the registration?): legacy's rule, registrations
# below 9 serve targets 7 and 8 only when made at 7..9
FROM_OPSET = [(1, 9, True), (1, 13, True), (1, 20, True), (1, 26, True), (1, 8, False), (5, 17, True), (8, 7, True),
              (18, 17, False)]


@pytest.mark.parametrize("registered_at, opset, served", FROM_OPSET)
def test_custom_symbolic_serves_from_its_opset(installed_on_both_torches, registered_at, opset, served):
    x = torch.tensor([-1.0, 0.5, 2.0])
    torch.onnx.register_custom_op_symbolic("aten::relu", scaled_relu, registered_at)
    try:
        proto = tso.export(ReluModel(), (x,), None, opset_version=opset)
    finally:
        torch.onnx.unregister_custom_op_symbolic("aten::relu", registered_at)
    (got,) = _run(proto.SerializeToString(), {proto.graph.input[0].name: x.numpy()})
    expected = torch.relu(x) * (2 if served else 1) - 1
    np.testing.assert_allclose(got, expected.numpy())


@pytest.mark.parametrize("opset", [0, -3])
def test_registration_opset_below_1_is_refused(opset):
    with pytest.raises(ValueError, match="start at 1"):
        tso.register_custom_op_symbolic("aten::relu", scaled_relu, opset)


@torch.library.custom_op("tso_install_test::double", mutates_args=())
def double(x: torch.Tensor) -> torch.Tensor:
    return x * 2


def test_unconvertible_ops_sees_custom_registrations(installed_on_both_torches):
    class UsesLibraryOp(torch.nn.Module):
        def forward(self, x):
            return torch.ops.tso_install_test.double(x) + 1

    args = (torch.randn(3),)
    _, missing = torch.onnx.utils.unconvertible_ops(UsesLibraryOp(), args, opset_version=17)
    assert missing == ["tso_install_test::double"]
    torch.onnx.register_custom_op_symbolic("tso_install_test::double", lambda g, x: g.op("Add", x, x), 1)
    try:
        _, missing = torch.onnx.utils.unconvertible_ops(UsesLibraryOp(), args, opset_version=17)
    finally:
        torch.onnx.unregister_custom_op_symbolic("tso_install_test::double", 1)
    assert missing == []


def test_legacy_symbolic_file_runs_through_torch_onnx(installed_on_both_torches):
    """tests/legacy_symbolics.py with its imports from torch.onnx, registered through torch.onnx's
    names, gives the same graph as with its imports from torchscript_onnx."""
    import legacy_symbolics as ours
    import test_compat

    legacy = test_compat._as_torch_onnx()
    model, args = test_compat.UsesAll().eval(), test_compat._args()
    options = dict(opset_version=17, custom_opsets={"com.microsoft": 1})
    graphs = []
    for module, register, unregister in [(ours, tso.register_custom_op_symbolic, tso.unregister_custom_op_symbolic),
                                         (legacy, torch.onnx.register_custom_op_symbolic,
                                          torch.onnx.unregister_custom_op_symbolic)]:
        for name, fn, _ in ours.REGISTRATIONS:
            register(name, getattr(module, fn.__name__), 17)
        try:
            graphs.append(_exported_by_torch_onnx(model, args, **options).graph)
        finally:
            for name, _, _ in ours.REGISTRATIONS:
                unregister(name, 17)
    assert graphs[0] == graphs[1]


class Clamped(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, low):
        return x.clamp(min=low)


class UsesClamped(torch.nn.Module):
    def forward(self, x, low):
        return Clamped.apply(x, low) * 2


class ClampedWithSymbolic(Clamped):
    @staticmethod
    def symbolic(g, x, low):
        return g.op("Max", x, low)


class UsesBoth(torch.nn.Module):
    def forward(self, x, low):
        return Clamped.apply(x, low) + ClampedWithSymbolic.apply(x * 2, low)


def test_autograd_functions_export(installed_on_both_torches):
    """The tracer records each Function with the ops its forward ran when the legacy exporter's
    GLOBALS say so; without the legacy exporter, install() provides them (legacy_globals.py)."""
    from torch.onnx._internal.torchscript_exporter._globals import GLOBALS

    assert GLOBALS.autograd_inlining is True and GLOBALS.in_onnx_export is False
    x, low = torch.randn(3, 4), torch.tensor([0.1])
    proto = tso.export(UsesBoth(), (x, low), None, opset_version=17)
    assert "Max" in [n.op_type for n in proto.graph.node]  # the symbolic's
    feeds = {i.name: v.numpy() for i, v in zip(proto.graph.input, (x, low))}
    np.testing.assert_allclose(_run(proto.SerializeToString(), feeds)[0], UsesBoth()(x, low).numpy())


def test_symbolic_context_convention_of_torch_2_0(installed_on_both_torches):
    """torch <= 2.0 passed a ``SymbolicContext`` first to a symbolic annotated with it."""
    seen = []

    def python_op(ctx: torch.onnx.SymbolicContext, g, *args, **kwargs):
        seen.append((ctx.cur_node.kind(), kwargs["name"]))
        return g.op("Max", args[0], args[1], outputs=ctx.cur_node.outputsSize())

    x, low = torch.randn(3, 3), torch.tensor([0.25])
    torch.onnx.register_custom_op_symbolic("prim::PythonOp", python_op, 1)
    try:
        proto = tso.export(UsesClamped(), (x, low), None, opset_version=17)
    finally:
        torch.onnx.unregister_custom_op_symbolic("prim::PythonOp", 1)
    assert seen == [("prim::PythonOp", "Clamped")]
    (got,) = _run(proto.SerializeToString(), {i.name: v.numpy() for i, v in zip(proto.graph.input, (x, low))})
    np.testing.assert_allclose(got, UsesClamped()(x, low).numpy())


# -- a program written for torch 2.0 ------------------------------------------------------------------


RUN_PROGRAM = """
import contextlib, runpy, sys
sys.path.insert(0, {tests!r})
import torchscript_onnx
from torch_without_legacy import legacy_exporter_removed
with legacy_exporter_removed() if {removed!r} else contextlib.nullcontext():
    torchscript_onnx.install()
    sys.argv = [{program!r}, {path!r}]
    runpy.run_path({program!r}, run_name="__main__")
"""


@pytest.mark.parametrize("legacy", ["with legacy", "without legacy"])
def test_program_written_for_torch_2_0_runs_unchanged(legacy, tmp_path):
    """Run as a program (in its own process: it defines a torch.library op once per process)."""
    path = str(tmp_path / "model.onnx")
    code = RUN_PROGRAM.format(tests=str(PROGRAM.parents[1]), removed=legacy == "without legacy",
                              program=str(PROGRAM), path=path)
    done = subprocess.run([sys.executable, "-W", "ignore::DeprecationWarning", "-c", code], capture_output=True,
                          text=True, cwd=PROGRAM.parents[2])
    assert done.returncode == 0, done.stderr
    assert "matches eager" in done.stdout
    assert onnx.load(path).producer_name == PRODUCER_NAME
