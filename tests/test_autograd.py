"""torch.autograd.Function calls: their ``symbolic`` staticmethod, inlining of their forward, and a
registered ``prim::PythonOp`` symbolic, as in the legacy exporter."""

from __future__ import annotations

import io
import warnings

import onnx
import pytest
import torch

import torchscript_onnx as tso
from torchscript_onnx.builder.ir import Value
from torchscript_onnx.verify import verify

SEEN: dict = {}


class ClampShift(torch.autograd.Function):
    """A symbolic with tensor and non-tensor arguments of several kinds."""

    @staticmethod
    def forward(ctx, x, low: float, times: int, mode: str, y):
        return torch.clamp(x, min=low) * times + y

    @staticmethod
    def symbolic(g, x, low, times, mode, y):
        SEEN.update(x=type(x), low=low, times=times, mode=mode, y=type(y))
        clamped = g.op("Max", x, g.op("Constant", value_t=torch.tensor(low, dtype=torch.float32)))
        scaled = g.op("Mul", clamped, g.op("Constant", value_t=torch.tensor(float(times))))
        return g.op("Add", scaled, y)

    @staticmethod
    def backward(ctx, grad):
        return grad, None, None, None, grad


class TwoOutputs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.exp(), x.sin()

    @staticmethod
    def symbolic(g, x):
        return g.op("Exp", x), g.op("Sin", x)


class Softsign(torch.autograd.Function):
    """No symbolic: inlined, or a registered prim::PythonOp symbolic converts it."""

    @staticmethod
    def forward(ctx, x):
        return x / (1 + x.abs())

    @staticmethod
    def backward(ctx, grad):
        return grad


class WithSymbolic(torch.nn.Module):
    def forward(self, x, y):
        return ClampShift.apply(x, -0.5, 3, "fast", y) + 1


class WithTwoOutputs(torch.nn.Module):
    def forward(self, x):
        a, b = TwoOutputs.apply(x)
        return a - b


class WithoutSymbolic(torch.nn.Module):
    def forward(self, x):
        return Softsign.apply(x * 2) - 1


class Mixed(torch.nn.Module):
    def forward(self, x):
        return Softsign.apply(x) + ClampShift.apply(x, 0.0, 2, "slow", x)


def _x(*shape):
    torch.manual_seed(0)
    return torch.randn(*shape)


def _ops(proto):
    return [n.op_type for n in proto.graph.node]


def _legacy(model, args, **options):
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, buffer, dynamo=False, **options)
    return onnx.load_from_string(buffer.getvalue())


@pytest.mark.parametrize("inlining", [True, False])
@pytest.mark.parametrize("opset", [9, 17, 26])
def test_symbolic_gets_values_and_python_objects(inlining, opset):
    SEEN.clear()
    model, args = WithSymbolic(), (_x(3, 4), _x(3, 4))
    verify(model, args, opset_version=opset, autograd_inlining=inlining)
    assert (SEEN["low"], SEEN["times"], SEEN["mode"]) == (-0.5, 3, "fast")
    assert issubclass(SEEN["x"], Value) and issubclass(SEEN["y"], Value)
    assert "Max" in _ops(tso.export(model, args, opset_version=opset, autograd_inlining=inlining))


def test_symbolic_with_two_outputs():
    verify(WithTwoOutputs(), (_x(2, 3),), autograd_inlining=False)


@pytest.mark.parametrize("opset", [7, 13, 26])
def test_without_symbolic_the_forward_is_inlined(opset):
    model, x = WithoutSymbolic(), _x(3, 4)
    verify(model, (x,), opset_version=opset)
    ops = _ops(tso.export(model, (x,), opset_version=opset))
    assert "Abs" in ops and "Div" in ops


def test_inlined_ops_match_legacy():
    model, x = WithoutSymbolic(), _x(3, 4)
    ours = [op for op in _ops(tso.export(model, (x,), opset_version=17)) if op != "Constant"]
    legacy = [n.op_type for n in _legacy(model, (x,), opset_version=17).graph.node if n.op_type != "Constant"]
    assert ours == legacy


def test_without_symbolic_and_without_inlining_is_a_clear_error():
    with pytest.raises(tso.SymbolicValueError, match="Softsign.*autograd_inlining"):
        tso.export(WithoutSymbolic(), (_x(3, 4),), autograd_inlining=False)


@pytest.fixture
def python_op_symbolic():
    calls = []

    def symbolic(g, *args, **kwargs):
        calls.append(kwargs)
        if kwargs["name"] == "Softsign":
            x = args[0]
            return g.op("Softsign", x)
        raise AssertionError(f"unexpected Function {kwargs['name']}")

    tso.register_custom_op_symbolic("prim::PythonOp", symbolic, 9)
    torch.onnx.register_custom_op_symbolic("prim::PythonOp", symbolic, 9)  # for the legacy comparison
    yield calls
    tso.unregister_custom_op_symbolic("prim::PythonOp", 9)
    torch.onnx.unregister_custom_op_symbolic("prim::PythonOp", 9)


@pytest.mark.parametrize("inlining", [True, False])
def test_registered_python_op_symbolic_converts_functions_without_symbolic(python_op_symbolic, inlining):
    model, x = WithoutSymbolic(), _x(3, 4)
    proto = tso.export(model, (x,), opset_version=17, autograd_inlining=inlining)
    assert "Softsign" in _ops(proto) and "Abs" not in _ops(proto)
    assert python_op_symbolic[0]["name"] == "Softsign" and python_op_symbolic[0]["inplace"] == 0
    assert python_op_symbolic[0]["module"] == __name__
    python_op_symbolic.clear()
    legacy = _legacy(model, (x,), opset_version=17, autograd_inlining=inlining)
    assert [op for op in _ops(proto) if op != "Constant"] == \
        [n.op_type for n in legacy.graph.node if n.op_type != "Constant"]
    assert python_op_symbolic[0]["name"] == "Softsign"  # legacy passes the same keywords
    verify(model, (x,), opset_version=17, autograd_inlining=inlining)


def test_a_function_symbolic_wins_over_the_registered_python_op(python_op_symbolic):
    model, x = Mixed(), _x(3, 4)
    proto = tso.export(model, (x,), opset_version=17, autograd_inlining=False)
    assert [c["name"] for c in python_op_symbolic] == ["Softsign"]
    assert "Max" in _ops(proto) and "Softsign" in _ops(proto)
    verify(model, (x,), opset_version=17, autograd_inlining=False)


def test_unregistering_the_python_op_symbolic_restores_inlining():
    def symbolic(g, *args, **kwargs):
        return g.op("Softsign", args[0])

    tso.register_custom_op_symbolic("prim::PythonOp", symbolic, 9)
    tso.unregister_custom_op_symbolic("prim::PythonOp", 9)
    assert "Abs" in _ops(tso.export(WithoutSymbolic(), (_x(3, 4),), opset_version=17))
