"""register_custom_op_symbolic / unregister_custom_op_symbolic, custom domains, setType, and
torch.library custom ops converted through registered symbolics."""

from __future__ import annotations

import pytest
import torch

import torchscript_onnx as tso
from torchscript_onnx.verify import verify


class ReluModel(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) + 1


def _x(*shape):
    torch.manual_seed(0)
    return torch.randn(*shape)


def _ops(proto):
    return [(n.domain, n.op_type) for n in proto.graph.node]


def relu_as_clip(g, x):
    """A custom lowering of relu: Max(x, 0)."""
    return g.op("Max", x, g.op("Constant", value_t=torch.tensor(0.0)))


@pytest.fixture
def registered():
    """Registrations made by a test, removed afterwards even when it fails."""
    made = []

    def register(name, fn, opset):
        tso.register_custom_op_symbolic(name, fn, opset)
        made.append((name, opset))

    yield register
    for name, opset in made:
        try:
            tso.unregister_custom_op_symbolic(name, opset)
        except ValueError:
            pass  # the test unregistered it itself


def test_override_builtin_and_unregister_restores_it(registered):
    model, x = ReluModel(), _x(3, 4)
    registered("aten::relu", relu_as_clip, 9)
    proto = tso.export(model, (x,), opset_version=17)
    assert ("", "Max") in _ops(proto) and ("", "Relu") not in _ops(proto)
    verify(model, (x,), opset_version=17)
    tso.unregister_custom_op_symbolic("aten::relu", 9)
    proto = tso.export(model, (x,), opset_version=17)
    assert ("", "Relu") in _ops(proto) and ("", "Max") not in _ops(proto)


def test_double_colon_means_aten(registered):
    registered("::relu", relu_as_clip, 9)
    assert ("", "Max") in _ops(tso.export(ReluModel(), (_x(2, 3),), opset_version=13))
    tso.unregister_custom_op_symbolic("::relu", 9)
    assert ("", "Relu") in _ops(tso.export(ReluModel(), (_x(2, 3),), opset_version=13))


@pytest.mark.parametrize("opset, custom", [(7, False), (13, False), (14, True), (20, True), (26, True)])
def test_registration_serves_its_opset_and_above(registered, opset, custom):
    registered("aten::relu", relu_as_clip, 14)
    ops = _ops(tso.export(ReluModel(), (_x(2, 3),), opset_version=opset))
    assert (("", "Max") in ops) == custom
    assert (("", "Relu") in ops) == (not custom)


def test_a_higher_registration_wins_from_its_opset(registered):
    registered("aten::relu", relu_as_clip, 9)
    registered("aten::relu", lambda g, x: g.op("LeakyRelu", x, alpha_f=0.0), 15)
    assert ("", "Max") in _ops(tso.export(ReluModel(), (_x(2, 3),), opset_version=14))
    assert ("", "LeakyRelu") in _ops(tso.export(ReluModel(), (_x(2, 3),), opset_version=15))
    verify(ReluModel(), (_x(2, 3),), opset_version=15)


def test_supported_ops_lists_custom_names(registered):
    registered("tso_test::thing", relu_as_clip, 12)
    assert "tso_test::thing" in tso.supported_ops(12)
    assert "tso_test::thing" in tso.supported_ops(26)
    assert "tso_test::thing" not in tso.supported_ops(11)


@pytest.mark.parametrize("name, error", [
    ("relu", ValueError), ("aten:relu", ValueError), ("aten::", ValueError), ("a b::c", ValueError),
    ("onnx::Relu", ValueError), (42, ValueError),
])
def test_invalid_names_are_refused(name, error):
    with pytest.raises(error):
        tso.register_custom_op_symbolic(name, relu_as_clip, 9)


def test_onnx_namespace_is_reserved():
    with pytest.raises(ValueError, match="reserved"):
        tso.register_custom_op_symbolic("onnx::Relu", relu_as_clip, 9)


def test_non_callable_and_bad_opset_are_refused():
    with pytest.raises(TypeError, match="callable"):
        tso.register_custom_op_symbolic("tso_test::x", "not a function", 9)
    with pytest.raises(ValueError, match="start at 1"):
        tso.register_custom_op_symbolic("tso_test::x", relu_as_clip, 0)
    with pytest.raises(TypeError, match="int"):
        tso.register_custom_op_symbolic("tso_test::x", relu_as_clip, "13")


def test_unregistering_what_is_not_registered_is_an_error():
    with pytest.raises(ValueError, match="no custom symbolic"):
        tso.unregister_custom_op_symbolic("aten::relu", 11)


# -- custom domains ------------------------------------------------------------------------------

def relu_in_my_domain(g, x):
    return g.op("my.domain::MyRelu", x, alpha_f=0.5)


@pytest.mark.parametrize("custom_opsets, version", [(None, 1), ({"my.domain": 3}, 3)])
def test_custom_domain_recorded_in_opset_import(registered, custom_opsets, version):
    registered("aten::relu", relu_in_my_domain, 9)
    proto = tso.export(ReluModel(), (_x(2, 3),), opset_version=17, custom_opsets=custom_opsets)
    assert ("my.domain", "MyRelu") in _ops(proto)
    imports = {i.domain: i.version for i in proto.opset_import}
    assert imports["my.domain"] == version and imports[""] == 17


class SizeAfterCustom(torch.nn.Module):
    def forward(self, x, z):
        y = torch.relu(x)
        return y.reshape(y.size(0) * y.size(1)), z + 1


@pytest.mark.parametrize("set_type", [True, False])
def test_set_type_gives_static_sizes_downstream(registered, set_type):
    def custom(g, x):
        y = g.op("my.domain::MyRelu", x)
        return y.setType(x.type()) if set_type else y

    registered("aten::relu", custom, 9)
    # dynamic_axes on z: sizes recorded by the trace are not trusted, only what setType gives
    proto = tso.export(SizeAfterCustom(), (_x(2, 3), _x(4)), opset_version=17, input_names=["x", "z"],
                       dynamic_axes={"z": {0: "n"}})
    has_shape = ("", "Shape") in _ops(proto)
    assert has_shape == (not set_type)
    if set_type:
        reshape = next(n for n in proto.graph.node if n.op_type == "Reshape")
        shape_producer = next(n for n in proto.graph.node if reshape.input[1] in n.output)
        assert shape_producer.op_type == "Constant"


# -- torch.library custom ops ---------------------------------------------------------------------

@torch.library.custom_op("tso_test::fast_gelu", mutates_args=())
def fast_gelu(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x)


@fast_gelu.register_fake
def _(x):
    return torch.empty_like(x)


class UsesLibraryOp(torch.nn.Module):
    def forward(self, x):
        return torch.ops.tso_test.fast_gelu(x * 2) - 1


def gelu_in_com_microsoft(g, x):
    y = g.op("com.microsoft::Gelu", x)
    return y.setType(x.type())


@pytest.mark.parametrize("opset", [9, 17, 26])
def test_library_op_runs_in_onnxruntime_through_its_symbolic(registered, opset):
    registered("tso_test::fast_gelu", gelu_in_com_microsoft, 9)
    model, x = UsesLibraryOp(), _x(3, 5)
    proto = tso.export(model, (x,), opset_version=opset, custom_opsets={"com.microsoft": 1})
    assert ("com.microsoft", "Gelu") in _ops(proto)
    assert {i.domain: i.version for i in proto.opset_import}["com.microsoft"] == 1
    verify(model, (x,), opset_version=opset, custom_opsets={"com.microsoft": 1})


def test_library_op_without_symbolic_is_reported():
    with pytest.raises(tso.UnsupportedOperatorError, match="tso_test::fast_gelu"):
        tso.export(UsesLibraryOp(), (_x(3, 5),), opset_version=17)


def test_library_op_with_scalar_arguments(registered):
    @torch.library.custom_op("tso_test::scaled_add", mutates_args=())
    def scaled_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
        return x + alpha * y

    @scaled_add.register_fake
    def _(x, y, alpha):
        return torch.empty_like(x)

    def symbolic(g, x, y, alpha):
        # as in legacy, the float argument arrives as a constant value
        alpha = alpha.const
        return g.op("Add", x, g.op("Mul", y, g.op("Constant", value_t=torch.tensor(float(alpha)))))

    registered("tso_test::scaled_add", symbolic, 9)

    class M(torch.nn.Module):
        def forward(self, x, y):
            return torch.ops.tso_test.scaled_add(x, y, 0.25)

    verify(M(), (_x(2, 3), _x(2, 3) + 1), opset_version=17)
