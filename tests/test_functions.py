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


# -- the functions legacy emits ---------------------------------------------------------------------


class Scale(torch.nn.Module):
    factor: float

    def __init__(self, factor: float):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return x * self.factor


class Scales(torch.nn.Module):
    """One class called three times with two attribute values: one function, its constant an
    attribute (legacy: inferred::Constant_value)."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = Scale(2.0), Scale(3.0), Scale(2.0)

    def forward(self, x):
        return self.c(self.b(self.a(x)))


class Norms(torch.nn.Module):
    """LayerNorms differing in eps (one function, epsilon an attribute) and in having weights
    (a second function, legacy's LayerNorm.1)."""

    def __init__(self):
        super().__init__()
        self.n1, self.n2 = torch.nn.LayerNorm(4), torch.nn.LayerNorm(4, eps=1e-3)
        self.n3 = torch.nn.LayerNorm(4, elementwise_affine=False)

    def forward(self, x):
        return self.n3(self.n2(self.n1(x)))


class PreNorm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm, self.lin, self.act = torch.nn.LayerNorm(4), torch.nn.Linear(4, 4), torch.nn.GELU()

    def forward(self, x):
        return x + self.act(self.lin(self.norm(x)))


class Nested(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks, self.head = torch.nn.Sequential(PreNorm(), PreNorm()), torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.blocks(x))


class ConvBn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.c2, self.bn = torch.nn.Conv2d(3, 4, 3), torch.nn.Conv2d(4, 4, 1, stride=2), torch.nn.BatchNorm2d(4)

    def forward(self, x):
        return self.bn(self.c2(torch.relu(self.c1(x))))


def _encoder():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
    return torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)


LN, LINEAR, ENCODER_LAYER = torch.nn.LayerNorm, torch.nn.Linear, torch.nn.TransformerEncoderLayer
# (case, model, inputs, selection, whether legacy's layers share values)
LEGACY_CASES = [
    ("layernorm-variants", Norms, lambda: (_x(2, 4),), {LN}, False),
    ("layernorm-variants-all", Norms, lambda: (_x(2, 4),), True, False),
    ("one-class-two-attribute-values", Scales, lambda: (_x(2, 4),), {Scale}, False),
    ("nested-outer", Nested, lambda: (_x(2, 4),), {PreNorm}, False),
    ("nested-outer-and-inner", Nested, lambda: (_x(2, 4),), {PreNorm, LINEAR}, False),
    ("nested-all", Nested, lambda: (_x(2, 4),), True, False),
    ("conv-all", ConvBn, lambda: (_x(1, 3, 8, 8),), True, False),
    ("conv", ConvBn, lambda: (_x(1, 3, 8, 8),), {torch.nn.Conv2d}, False),
    # a ModuleList's children: the tracer scopes them "layers.0" under the encoder
    ("encoder-layernorm", _encoder, lambda: (_x(5, 2, 8),), {LN}, False),
    ("encoder-layers", _encoder, lambda: (_x(5, 2, 8),), {ENCODER_LAYER, LN}, True),
    ("encoder-all", _encoder, lambda: (_x(5, 2, 8),), True, True),
]


def _layout(proto, dropped=frozenset(), variants_merged=False):
    """(domain, class name, attribute names) of each function and of the calls of the graph and of
    the functions, with the attribute names in ``dropped`` left out. A variant (``LayerNorm.1``)
    counts under its class name: which variant legacy names ``.1`` follows its hash order, not the
    model. With ``variants_merged``, a class's variants count once."""
    def name(n):
        base, _, suffix = n.rpartition(".")
        return base if suffix.isdigit() else n

    functions, bodies = [], {}
    for f in proto.functions:
        key = (f.domain, name(f.name), tuple(sorted(set(f.attribute) - dropped)))
        if not variants_merged or key not in bodies:
            functions.append(key)
            bodies[key] = f
    calls = sorted((n.domain, name(n.op_type), sorted({a.name for a in n.attribute} - dropped))
                   for nodes in [proto.graph.node, *(f.node for f in bodies.values())] for n in nodes if n.domain)
    return sorted(functions), calls


def _weight_attributes(proto) -> set[str]:
    """Names of the call attributes that hold weights: legacy copies each module's weights into
    its call nodes (weight, bias, and inferred::Linear_weight where two calls' weights differ);
    here the weights are only the functions' inputs, not a second copy in the file. A constant's
    value (inferred::Constant_value) is graph content: both record it."""
    return {a.name for nodes in [proto.graph.node, *(f.node for f in proto.functions)] for n in nodes if n.domain
            for a in n.attribute if a.type == onnx.AttributeProto.TENSOR and not a.name.startswith("inferred::Constant")}


@pytest.mark.parametrize(("case", "model", "inputs", "selection", "shared"), LEGACY_CASES,
                         ids=[c[0] for c in LEGACY_CASES])
def test_the_functions_legacy_emits(case, model, inputs, selection, shared):
    args = inputs()
    torch.manual_seed(0)
    ours = tso.export(model().eval(), args, opset_version=17, export_modules_as_functions=selection)
    names = [f.name for f in ours.functions]
    assert names and len(names) == len(set(names))
    verify(model().eval(), args, opset_version=17, export_modules_as_functions=selection)
    if shared:  # two identical layers: one function for both
        assert "TransformerEncoderLayer.1" not in names and "TransformerEncoderLayer" in names
    if not hasattr(torch.onnx, "utils"):
        return  # no legacy exporter in this torch to compare with
    torch.manual_seed(0)  # a fresh model: legacy leaves its forward hooks on the one it exports
    legacy = _legacy(model().eval(), args, opset_version=17, export_modules_as_functions=selection)
    # Legacy's common-subexpression pass lets the second layer read shape values the first one
    # computed: the first call gets extra outputs, the second extra inputs, and legacy makes the
    # second a variant (TransformerEncoderLayer.1, MultiheadAttention.1). Layers stay self-contained
    # here; everything else is compared as is.
    dropped = _weight_attributes(legacy)
    assert _layout(ours, variants_merged=shared) == _layout(legacy, dropped, variants_merged=shared)


def test_legacy_variant_and_attribute_names():
    proto = tso.export(Norms().eval(), (_x(2, 4),), opset_version=17, export_modules_as_functions={LN})
    functions = {f.name: f for f in proto.functions}
    assert sorted(functions) == ["LayerNorm", "LayerNorm.1"]  # the one without weights is the variant
    assert sorted(functions["LayerNorm"].attribute) == ["elementwise_affine", "eps",
                                                         "inferred::LayerNormalization_epsilon"]
    calls = [n for n in proto.graph.node if n.op_type == "LayerNorm"]
    assert [{a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}["eps"] for n in calls] == \
        pytest.approx([1e-5, 1e-3])


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
