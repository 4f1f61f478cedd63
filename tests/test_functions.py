"""export_modules_as_functions: module calls as ONNX local functions (FunctionProto), opset 15+."""

from __future__ import annotations

import io
import warnings

import onnx
import pytest
import torch

import torchscript_onnx as tso
from torchscript_onnx.verify import verify

OPSETS = (15, 18, 26)


class Block(torch.nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.l = torch.nn.Linear(4, 4)
        self.scale = scale

    def forward(self, x):
        return torch.relu(self.l(x)) * self.scale


class Stack(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.Sequential(Block(2.0), Block(2.0))
        self.out = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.out(self.blocks(x))


class Convs(torch.nn.Module):
    """Two Conv1d calls with different kernel sizes, and two Linear calls."""

    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)
        self.c, self.d = torch.nn.Conv1d(1, 2, 3), torch.nn.Conv1d(2, 1, 2)

    def forward(self, x):
        return self.d(self.c(self.b(self.a(x)).unsqueeze(1)))


class Reused(torch.nn.Module):
    """One instance called twice."""

    def __init__(self):
        super().__init__()
        self.l = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.l(torch.tanh(self.l(x)))


def _x(*shape):
    torch.manual_seed(0)
    return torch.randn(*shape)


def _calls(proto, name):
    return [n for n in proto.graph.node if n.op_type == name]


def _legacy(model, args, **options):
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, buffer, dynamo=False, **options)
    return onnx.load_from_string(buffer.getvalue())


@pytest.mark.parametrize("opset", OPSETS)
def test_one_function_per_class_shared_by_its_calls(opset):
    model, x = Stack().eval(), _x(3, 4)
    verify(model, (x,), opset_version=opset, export_modules_as_functions={Block})
    proto = tso.export(model, (x,), opset_version=opset, export_modules_as_functions={Block})
    assert [(f.domain, f.name) for f in proto.functions] == [(Block.__module__, "Block")]
    assert len(_calls(proto, "Block")) == 2
    body = [n.op_type for n in proto.functions[0].node]
    assert body == ["Constant", "Gemm", "Relu", "Mul"]
    # weights stay initializers of the main graph, passed as function inputs (as legacy)
    assert len(proto.functions[0].input) == 3
    assert {i.domain: i.version for i in proto.opset_import}[Block.__module__] == 1


def test_matches_legacy_function_layout():
    model, x = Stack().eval(), _x(3, 4)
    ours = tso.export(model, (x,), opset_version=17, export_modules_as_functions={Block})
    legacy = _legacy(model, (x,), opset_version=17, export_modules_as_functions={Block})
    assert [(f.domain, f.name, len(f.input), len(f.output)) for f in ours.functions] == \
        [(f.domain, f.name, len(f.input), len(f.output)) for f in legacy.functions]
    assert [(n.domain, n.op_type) for n in ours.graph.node if n.domain] == \
        [(n.domain, n.op_type) for n in legacy.graph.node if n.domain]


@pytest.mark.parametrize("opset", OPSETS)
def test_differing_attributes_become_function_attributes(opset):
    model, x = Convs().eval(), _x(2, 4)
    chosen = {torch.nn.Linear, torch.nn.Conv1d}
    verify(model, (x,), opset_version=opset, export_modules_as_functions=chosen)
    proto = tso.export(model, (x,), opset_version=opset, export_modules_as_functions=chosen)
    functions = {f.name: f for f in proto.functions}
    assert sorted(functions) == ["Conv1d", "Linear"]
    conv = functions["Conv1d"]
    assert "inferred::Conv_kernel_shape" in conv.attribute
    refs = {a.name: a.ref_attr_name for n in conv.node for a in n.attribute if a.ref_attr_name}
    assert refs == {"kernel_shape": "inferred::Conv_kernel_shape"}
    calls = _calls(proto, "Conv1d")
    kernels = [onnx.helper.get_attribute_value(a) for n in calls for a in n.attribute
               if a.name == "inferred::Conv_kernel_shape"]
    assert kernels == [[3], [2]]
    # annotated scalar hyperparameters are call attributes, as legacy records them
    linear = _calls(proto, "Linear")[0]
    assert {a.name: onnx.helper.get_attribute_value(a) for a in linear.attribute} == \
        {"in_features": 4, "out_features": 4}
    legacy = _legacy(model, (x,), opset_version=min(opset, 20), export_modules_as_functions=chosen)  # legacy stops at 20
    assert sorted(f.name for f in legacy.functions) == sorted(functions)


@pytest.mark.parametrize("selection", [True, {Block, torch.nn.Linear}])
def test_nested_modules_give_nested_functions_as_legacy(selection):
    model, x = Stack().eval(), _x(3, 4)
    verify(model, (x,), opset_version=17, export_modules_as_functions=selection)
    proto = tso.export(model, (x,), opset_version=17, export_modules_as_functions=selection)
    legacy = _legacy(model, (x,), opset_version=17, export_modules_as_functions=selection)

    def layout(p):
        return sorted((f.domain, f.name, sorted((n.domain, n.op_type) for n in f.node if n.domain))
                      for f in p.functions), sorted((n.domain, n.op_type) for n in p.graph.node)

    assert layout(proto) == layout(legacy)


def test_a_reused_instance_calls_its_function_twice():
    model, x = Reused().eval(), _x(2, 4)
    verify(model, (x,), opset_version=15, export_modules_as_functions={torch.nn.Linear})
    proto = tso.export(model, (x,), opset_version=15, export_modules_as_functions={torch.nn.Linear})
    assert len(proto.functions) == 1 and len(_calls(proto, "Linear")) == 2


def test_dynamic_axes_with_functions():
    model = Stack().eval()
    verify(model, (_x(3, 4),), opset_version=18, export_modules_as_functions={Block}, input_names=["x"],
           dynamic_axes={"x": {0: "batch"}}, other_inputs=[(_x(7, 4),)])


def test_classes_not_in_the_model_change_nothing():
    model, x = Stack().eval(), _x(3, 4)
    plain = tso.export(model, (x,), opset_version=17)
    chosen = tso.export(model, (x,), opset_version=17, export_modules_as_functions={torch.nn.Conv2d})
    assert [n.op_type for n in chosen.graph.node] == [n.op_type for n in plain.graph.node]
    assert not chosen.functions


@pytest.mark.parametrize("opset", [7, 14])
def test_below_opset_15_is_a_clear_error(opset):
    with pytest.raises(ValueError, match="available from opset 15"):
        tso.export(Stack().eval(), (_x(3, 4),), opset_version=opset, export_modules_as_functions={Block})


# -- g.onnxscript_op --------------------------------------------------------------------------------

import onnxscript  # noqa: E402  (installed in the test environment; optional for users)
from onnxscript import opset18 as op  # noqa: E402

CUSTOM = onnxscript.values.Opset("com.tso_test", 1)


@onnxscript.script(CUSTOM)
def MySwish(X):  # noqa: N802,N803 - ONNX naming
    return op.Mul(X, op.Sigmoid(X))


def _silu_by_onnxscript(g, x):
    return g.onnxscript_op(MySwish, x).setType(x.type())


@pytest.fixture
def silu_registered():
    tso.register_custom_op_symbolic("aten::silu", _silu_by_onnxscript, 15)
    yield
    tso.unregister_custom_op_symbolic("aten::silu", 15)


@pytest.mark.parametrize("opset", [15, 18, 26])
def test_onnxscript_op_adds_its_function(silu_registered, opset):
    model, x = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.SiLU()), _x(2, 3)
    verify(model, (x,), opset_version=opset)
    proto = tso.export(model, (x,), opset_version=opset)
    assert ("com.tso_test", "MySwish") in [(n.domain, n.op_type) for n in proto.graph.node]
    assert [(f.domain, f.name) for f in proto.functions] == [("com.tso_test", "MySwish")]
    assert {i.domain: i.version for i in proto.opset_import}["com.tso_test"] == 1


def test_onnxscript_op_without_onnxscript_is_a_clear_error(silu_registered, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "onnxscript", None)
    with pytest.raises(tso.SymbolicValueError, match="needs onnxscript"):
        tso.export(torch.nn.SiLU(), (_x(2, 3),), opset_version=17)


def test_onnxscript_op_refuses_plain_functions():
    def symbolic(g, x):
        return g.onnxscript_op(lambda X: X, x)

    tso.register_custom_op_symbolic("aten::silu", symbolic, 15)
    try:
        with pytest.raises(tso.SymbolicValueError, match="expects an onnxscript function"):
            tso.export(torch.nn.SiLU(), (_x(2, 3),), opset_version=17)
    finally:
        tso.unregister_custom_op_symbolic("aten::silu", 15)
