"""The ``export()`` contract: targets, model kinds, argument and output structures, names,
weights, initializers, training modes, verbose output and opsets.

Numbers are always checked against eager PyTorch through onnxruntime (``verify``); input and
output structure is compared with the legacy exporter (``torch.onnx.export(..., dynamo=False)``).
"""

from __future__ import annotations

import io
import os
import pathlib
import subprocess
import warnings

import numpy as np
import onnx
import pytest
import torch

import torchscript_onnx as tso
from torchscript_onnx.verify import check, run_onnxruntime, verify

REPO = pathlib.Path(__file__).resolve().parent.parent


def _x(*shape):
    return torch.randn(*(shape or (2, 3)))


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(3, 4)
        self.head = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.linear(x) * 2 + 1)


def _legacy(model, args, **options) -> onnx.ModelProto:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, buffer, dynamo=False, **options)
    return onnx.load_from_string(buffer.getvalue())


def _input_types(proto: onnx.ModelProto) -> list[int]:
    initializers = {t.name for t in proto.graph.initializer}
    return [i.type.tensor_type.elem_type for i in proto.graph.input if i.name not in initializers]


# -- f -------------------------------------------------------------------------------------------


def test_f_none_returns_the_model_proto():
    proto = tso.export(Net(), (_x(),))
    assert isinstance(proto, onnx.ModelProto)
    onnx.checker.check_model(proto, full_check=True)
    assert "f=None" in tso.export.__doc__ and "ModelProto" in tso.export.__doc__


@pytest.mark.parametrize("kind", ["str", "pathlike", "bytesio", "open-file"])
def test_f_targets_write_the_same_bytes(tmp_path, kind):
    torch.manual_seed(0)
    model, args = Net(), (_x(),)
    expected = tso.export(model, args).SerializeToString(deterministic=True)
    path = tmp_path / "model.onnx"
    if kind == "str":
        assert tso.export(model, args, str(path)) is None
        written = path.read_bytes()
    elif kind == "pathlike":
        tso.export(model, args, path)
        written = path.read_bytes()
    elif kind == "bytesio":
        stream = io.BytesIO()
        tso.export(model, args, stream)
        written = stream.getvalue()
    else:
        with open(path, "wb") as stream:
            tso.export(model, args, stream)
        written = path.read_bytes()
    assert onnx.load_from_string(written).SerializeToString(deterministic=True) == expected
    if kind in ("str", "pathlike"):
        assert os.listdir(tmp_path) == ["model.onnx"]


def test_f_path_replaces_an_existing_file_on_success(tmp_path):
    path = tmp_path / "model.onnx"
    path.write_bytes(b"old")
    tso.export(Net(), (_x(),), path)
    check(path.read_bytes())


# -- model kinds ---------------------------------------------------------------------------------


def _plain_function(x, y):
    return x * y + x


def test_model_plain_function():
    verify(_plain_function, (_x(), _x()))


def test_model_traced_script_module_matches_the_module():
    torch.manual_seed(0)
    model, x = Net().eval(), _x()
    traced = torch.jit.trace(model, (x,))
    verify(traced, (x,))
    ours = run_onnxruntime(tso.export(traced, (x,)).SerializeToString(), [x])
    plain = run_onnxruntime(tso.export(model, (x,)).SerializeToString(), [x])
    np.testing.assert_allclose(ours[0], plain[0], rtol=1e-6, atol=1e-6)
    with torch.no_grad():
        np.testing.assert_allclose(ours[0], model(x).numpy(), rtol=1e-5, atol=1e-6)


def test_model_scripted_module():
    verify(torch.jit.script(Net().eval()), (_x(),))


@torch.jit.script
def _script_function(a, b):
    return a * b + a


class TwoInputs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(3, 4)

    def forward(self, inp, scale):
        return self.linear(inp) * scale


@pytest.mark.parametrize("kind", ["script", "trace", "script-function"])
def test_script_models_keep_their_input_names_as_in_legacy(kind):
    args = (_x(), _x(2, 4))
    if kind == "script":
        model = torch.jit.script(TwoInputs().eval())
    elif kind == "trace":
        model = torch.jit.trace(TwoInputs().eval(), args)
    else:
        model, args = _script_function, (_x(), _x())
    verify(model, args)
    ours = [i.name for i in tso.export(model, args).graph.input]
    assert ours == [i.name for i in _legacy(model, args).graph.input]
    assert not any(name.startswith("onnx::") for name in ours)


# -- args ----------------------------------------------------------------------------------------


class Pair(torch.nn.Module):
    def forward(self, x, y):
        return x * y


class Keywords(torch.nn.Module):
    def forward(self, x, y=None, z=None):
        out = x if y is None else x + y
        return out if z is None else out * z


class Nested(torch.nn.Module):
    def forward(self, x, pair, table):
        a, (b, c) = pair
        return x + a * b - c + table["p"] * table["q"][0] - table["q"][1]


class ListArg(torch.nn.Module):
    def forward(self, xs):
        return xs[0] - xs[1]


class Numbers(torch.nn.Module):
    def forward(self, x, n: int, s: float, flag: bool):
        out = x * n + s
        return out * 2 if flag else out


class BoolArithmetic(torch.nn.Module):
    def forward(self, x, flag: bool, n: int):
        return x * flag + n


class IntShape(torch.nn.Module):
    def forward(self, x, n: int):
        return x.reshape(n, -1)


class Defaults(torch.nn.Module):
    def forward(self, x, y=None, scale=2.0):
        return x * scale if y is None else x + y


class Single(torch.nn.Module):
    def forward(self, x):
        return x * 3


# (id, model, args factory, kwargs factory or None)
ARG_CASES = [
    ("tensor", Single(), lambda: _x(), None),
    ("tuple", Pair(), lambda: (_x(), _x()), None),
    ("trailing-dict", Keywords(), lambda: (_x(), {"z": _x()}), None),
    ("trailing-dict-all", Keywords(), lambda: (_x(), {"y": _x(), "z": _x()}), None),
    ("kwargs", Keywords(), lambda: (_x(),), lambda: {"z": _x()}),
    # A dict as the last positional argument needs a trailing {} (the legacy rule).
    ("nested", Nested(), lambda: (_x(), [_x(), (_x(), _x())], {"p": _x(), "q": [_x(), _x()]}, {}), None),
    ("list-is-one-arg", ListArg(), lambda: [_x(), _x()], None),
    ("list-in-tuple", ListArg(), lambda: ([_x(), _x()],), None),
    ("python-numbers", Numbers(), lambda: (_x(), 3, 0.5, True), None),
    ("bool-and-int-in-arithmetic", BoolArithmetic(), lambda: (_x(), True, 2), None),
    ("int-in-a-shape", IntShape(), lambda: (_x(), 3), None),
    ("float-default-becomes-input", Defaults(), lambda: (_x(),), None),
]


@pytest.mark.parametrize("model, make_args, make_kwargs",
                         [pytest.param(*row[1:], id=row[0]) for row in ARG_CASES])
def test_args_structures(model, make_args, make_kwargs):
    torch.manual_seed(0)
    args = make_args()
    kwargs = make_kwargs() if make_kwargs else None
    verify(model, args, kwargs=kwargs)
    ours = tso.export(model, args, kwargs=kwargs)
    legacy = _legacy(model, args, kwargs=kwargs)
    assert [i.name for i in ours.graph.input] == [i.name for i in legacy.graph.input]
    assert _input_types(ours) == _input_types(legacy)


def test_python_numbers_become_inputs_as_in_legacy():
    proto = tso.export(Numbers(), (_x(), 3, 0.5, True))
    types = _input_types(proto)
    # x, n (int64) and s (double); the bool only steers Python control flow and is dropped.
    assert types == [onnx.TensorProto.FLOAT, onnx.TensorProto.INT64, onnx.TensorProto.DOUBLE]
    x = _x()
    got = run_onnxruntime(proto.SerializeToString(), [x, np.array(5), np.array(-1.5)])[0]
    np.testing.assert_allclose(got, Numbers()(x, 5, -1.5, True).numpy(), rtol=1e-6)


def test_unused_inputs_are_dropped_as_in_legacy():
    class IgnoresY(torch.nn.Module):
        def forward(self, x, y):
            return x + 1

    model, args = IgnoresY(), (_x(), _x())
    proto = tso.export(model, args, input_names=["x", "y"])
    assert [i.name for i in proto.graph.input] == ["x"]
    assert len(proto.graph.input) == len(_legacy(model, args, input_names=["x", "y"]).graph.input)
    verify(model, args)


class BranchOnly(torch.nn.Module):
    def forward(self, x, y):
        if bool(x.sum() > 0):
            return x + y
        return x - 1


def test_inputs_read_only_inside_a_branch_are_kept():
    model, x, y = torch.jit.script(BranchOnly()), torch.ones(2, 3), torch.randn(2, 3)
    proto = tso.export(model, (x, y), opset_version=13)
    assert [i.name for i in proto.graph.input] == ["x.1", "y.1"]
    verify(model, (x, y), opset_version=13, other_inputs=[(-x, y)])


# -- outputs -------------------------------------------------------------------------------------


class Outputs(torch.nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.kind = kind

    def forward(self, x):
        a, b, c = x + 1, x * 2, x - 3
        if self.kind == "tensor":
            return a
        if self.kind == "tuple":
            return a, b
        if self.kind == "list":
            return [a, b, c]
        if self.kind == "dict":
            return {"second": b, "first": a}
        return {"z": (a, [b, {"w": c}]), "y": a * b}


@pytest.mark.parametrize("kind", ["tensor", "tuple", "list", "dict", "nested"])
def test_output_structures_flatten_in_legacy_order(kind):
    model, x = Outputs(kind), _x()
    report = verify(model, (x,))  # compares every flattened output, in order
    assert len(report.comparisons) == len(_legacy(model, (x,)).graph.output)


# -- names ---------------------------------------------------------------------------------------


def test_input_and_output_names_name_a_prefix():
    model, args = Pair(), (_x(), _x())
    proto = tso.export(model, args, input_names=["first"], output_names=["product"])
    legacy = _legacy(model, args, input_names=["first"], output_names=["product"])
    assert [i.name for i in proto.graph.input] == [i.name for i in legacy.graph.input]
    assert proto.graph.input[0].name == "first" and proto.graph.output[0].name == "product"

    outputs = tso.export(Outputs("list"), (_x(),), output_names=["a", "b"])
    assert [o.name for o in outputs.graph.output][:2] == ["a", "b"]
    assert len(outputs.graph.output) == 3


def test_names_given_in_full():
    proto = tso.export(Pair(), (_x(), _x()), input_names=["x", "y"], output_names=["z"])
    assert [i.name for i in proto.graph.input] == ["x", "y"]
    assert [o.name for o in proto.graph.output] == ["z"]


# -- weights and initializers ---------------------------------------------------------------------


def test_export_params_false_makes_weights_inputs():
    torch.manual_seed(0)
    model, x = Net().eval(), _x()
    proto = tso.export(model, (x,), export_params=False, input_names=["x"])
    state = dict(model.state_dict())
    assert list(proto.graph.initializer) == []
    names = [i.name for i in proto.graph.input]
    assert names[0] == "x" and set(names[1:]) == set(state)
    check(proto.SerializeToString())
    feeds = [x] + [state[name] for name in names[1:]]
    got = run_onnxruntime(proto.SerializeToString(), feeds)[0]
    with torch.no_grad():
        np.testing.assert_allclose(got, model(x).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("opset, keep, listed", [
    (9, None, False), (9, False, False), (9, True, True), (20, None, False), (20, True, True),
    (7, None, True), (8, False, True),
])
def test_keep_initializers_as_inputs(opset, keep, listed):
    proto = tso.export(Net(), (_x(),), opset_version=opset, keep_initializers_as_inputs=keep)
    initializers = {t.name for t in proto.graph.initializer}
    inputs = {i.name for i in proto.graph.input}
    assert initializers
    assert (initializers <= inputs) == listed
    if not listed:
        assert not initializers & inputs
    check(proto.SerializeToString())


# -- training ------------------------------------------------------------------------------------


class Regularized(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(3, 4)
        self.drop = torch.nn.Dropout(0.5)
        self.norm = torch.nn.BatchNorm1d(4)

    def forward(self, x):
        return self.norm(self.drop(self.linear(x)))


def _ops(proto):
    return {n.op_type for n in proto.graph.node}


@pytest.mark.parametrize("mode, model_training, exports_training", [
    (tso.TrainingMode.EVAL, True, False),
    (tso.TrainingMode.TRAINING, False, True),
    (tso.TrainingMode.PRESERVE, True, True),
    (tso.TrainingMode.PRESERVE, False, False),
    (torch.onnx.TrainingMode.EVAL, True, False),
    (torch.onnx.TrainingMode.TRAINING, False, True),
])
def test_training_modes(mode, model_training, exports_training):
    model = Regularized().train(model_training)
    model.linear.train(not model_training)  # mixed flags must come back exactly
    flags = [m.training for m in model.modules()]
    stats = [b.clone() for b in model.buffers()]
    proto = tso.export(model, (_x(4, 3),), training=mode, opset_version=13)
    assert [m.training for m in model.modules()] == flags
    assert all(torch.equal(a, b) for a, b in zip(stats, model.buffers()))
    assert ("Dropout" in _ops(proto)) == exports_training
    check(proto.SerializeToString())
    if not exports_training:
        model.eval()
        verify(model, (_x(4, 3),), training=mode, opset_version=13)


def test_select_model_mode_for_export_restores_every_flag():
    model = Regularized().train()
    model.norm.eval()
    flags = [m.training for m in model.modules()]
    with tso.select_model_mode_for_export(model, tso.TrainingMode.EVAL):
        assert not any(m.training for m in model.modules())
    assert [m.training for m in model.modules()] == flags
    with tso.select_model_mode_for_export(model, torch.onnx.TrainingMode.TRAINING):
        assert all(m.training for m in model.modules())
    assert [m.training for m in model.modules()] == flags
    with tso.select_model_mode_for_export(model, tso.TrainingMode.PRESERVE):
        assert [m.training for m in model.modules()] == flags
    with pytest.raises(TypeError, match="mode"):
        with tso.select_model_mode_for_export(model, "eval"):
            pass


# -- autograd.Function --------------------------------------------------------------------------


class ScaledSquare(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k: float, y):
        return x * x * k + y

    @staticmethod
    def backward(ctx, grad):
        return grad, None, grad


class Outer(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return ScaledSquare.apply(x, 2.0, x) - 1

    @staticmethod
    def backward(ctx, grad):
        return grad


class Negate(torch.autograd.Function):
    """Its forward is not what ONNX gets: the symbolic decides, as in legacy."""

    @staticmethod
    def forward(ctx, x, shift: float):
        return -x + shift

    @staticmethod
    def symbolic(g, x, shift):
        return g.op("Add", g.op("Neg", x), g.op("Constant", value_t=torch.tensor(shift, dtype=torch.float32)))

    @staticmethod
    def backward(ctx, grad):
        return -grad, None


class UsesFunctions(torch.nn.Module):
    def forward(self, x):
        return ScaledSquare.apply(x, 3.0, x) * 2 + Outer.apply(x)


class UsesSymbolic(torch.nn.Module):
    def forward(self, x):
        return Negate.apply(x, 0.5) * 2


def test_autograd_functions_are_inlined():
    verify(UsesFunctions(), (_x(),))


@pytest.mark.parametrize("inlining", [True, False])
def test_autograd_function_symbolic_is_used_as_in_legacy(inlining):
    model, x = UsesSymbolic(), _x()
    proto = tso.export(model, (x,), autograd_inlining=inlining)
    ops = [n.op_type for n in proto.graph.node]
    assert "Neg" in ops
    assert [op for op in ops if op != "Constant"] == [
        n.op_type for n in _legacy(model, (x,), autograd_inlining=inlining).graph.node if n.op_type != "Constant"]
    verify(model, (x,), autograd_inlining=inlining)


def test_autograd_inlining_false_names_the_function():
    with pytest.raises(tso.SymbolicValueError, match="ScaledSquare.*autograd_inlining"):
        tso.export(UsesFunctions(), (_x(),), autograd_inlining=False)


# -- in-export flag, verbose, pretty string -------------------------------------------------------


class ExportAware(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.seen = []

    def forward(self, x):
        self.seen.append((tso.is_in_onnx_export(), torch.onnx.is_in_onnx_export()))
        return x * 2 if tso.is_in_onnx_export() else x


def test_is_in_onnx_export_inside_forward_only():
    model, x = ExportAware(), _x()
    assert not tso.is_in_onnx_export() and not torch.onnx.is_in_onnx_export()
    proto = tso.export(model, (x,))
    assert model.seen == [(True, True)]
    assert not tso.is_in_onnx_export() and not torch.onnx.is_in_onnx_export()
    got = run_onnxruntime(proto.SerializeToString(), [x])[0]
    np.testing.assert_allclose(got, (x * 2).numpy())


def test_verbose_prints_a_readable_graph_with_scopes(capsys):
    tso.export(Net(), (_x(),), verbose=True)
    printed = capsys.readouterr().out
    assert "graph (opset 20)" in printed
    assert "Gemm" in printed and "/linear" in printed and "/head" in printed
    assert os.path.basename(__file__) in printed
    tso.export(Net(), (_x(),), verbose=False)
    tso.export(Net(), (_x(),), verbose=None)  # torch's public default, meaning False
    assert capsys.readouterr().out == ""


def test_export_to_pretty_string():
    text = tso.export_to_pretty_string(Net(), (_x(),), opset_version=13, input_names=["x"])
    assert "graph (opset 13)" in text and "%x" in text and "Gemm" in text and "/head" in text
    with pytest.raises(TypeError, match="unexpected option"):
        tso.export_to_pretty_string(Net(), (_x(),), opset=13)
    with pytest.raises(ValueError, match="opset_version"):
        tso.export_to_pretty_string(Net(), (_x(),), opset_version=99)


# -- opsets --------------------------------------------------------------------------------------


def test_default_opset_is_20():
    assert tso.DEFAULT_OPSET == 20
    proto = tso.export(Net(), (_x(),))
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", 20)]
    assert "default 20" in tso.export.__doc__


@pytest.mark.parametrize("opset", range(tso.MIN_OPSET, tso.MAX_OPSET + 1))
def test_every_opset_exports_and_runs(opset):
    report = verify(Net(), (_x(),), opset_version=opset)
    assert report.opset == opset


# -- stand-alone ---------------------------------------------------------------------------------


def _code_references(path: pathlib.Path, needle: str) -> list[str]:
    """Lines of ``path`` whose code (not comments or docstrings) names ``needle``, as a dotted name
    or inside a string literal that is not a docstring (e.g. an importlib path)."""
    import tokenize

    found, previous = [], None
    with open(path, "rb") as source:
        tokens = list(tokenize.tokenize(source.readline))
    run, run_line = "", 0  # the dotted name being read (``torch.onnx.export``)
    for token in tokens:
        if token.type == tokenize.NAME and run.endswith("."):
            run += token.string
        elif token.type == tokenize.NAME:
            run, run_line = token.string, token.start[0]
        elif token.type == tokenize.OP and token.string == "." and run:
            run += "."
        else:
            run = ""
        if run.startswith(needle):
            found.append(f"{path.name}:{run_line}")
            run = ""
        if token.type == tokenize.STRING and needle in token.string and previous not in (tokenize.INDENT, tokenize.NEWLINE):
            if token.line[: token.start[1]].strip():  # an expression's string, not a docstring standing alone
                found.append(f"{path.name}:{token.start[0]}")
        previous = token.type
    return found


# The only places the package may touch torch.onnx, each allowed by the design: torch's "in ONNX
# export" flag during capture (the legacy exporter's in_onnx_export), torch's error classes as our
# bases, and the opt-in install(); and the
# metadata keys the dynamo exporter writes ("pkg.torch.onnx.name_scopes"), which provenance writes
# under the same names so that tools reading them work (strings, no reference to torch.onnx).
TORCH_ONNX_ALLOWED = {"pipeline/capture.py": "torchscript_exporter._globals", "builder/errors.py": 'import_module("torch.onnx.errors")',
                      "install.py": None, "pipeline/provenance.py": '"pkg.torch.onnx.'}


def test_no_torch_onnx_in_the_exporter():
    for path in sorted((REPO / "torchscript_onnx").rglob("*.py")):
        text = path.read_text()
        for forbidden in ("_jit_pass_onnx", "_export_onnx", "torchscript_exporter.utils", "symbolic_opset"):
            if forbidden == "symbolic_opset":
                forbidden = "torch.onnx.symbolic_opset"
            assert forbidden not in text, f"{path}: {forbidden}"
        references = _code_references(path, "torch.onnx")
        where = path.relative_to(REPO / "torchscript_onnx").as_posix()
        if where not in TORCH_ONNX_ALLOWED:
            assert references == [], references
            continue
        allowed = TORCH_ONNX_ALLOWED[where]
        lines = text.splitlines()
        for reference in references:
            line = lines[int(reference.split(":")[1]) - 1]
            assert allowed is None or allowed in line, reference + ": " + line
