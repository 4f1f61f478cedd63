"""Default names: without input_names/output_names, graph inputs, outputs and initializers are
named as ``torch.onnx.export(..., dynamo=False)`` names them (compared with it here, which is the
only use of the legacy exporter in these tests).

The legacy rules being matched: a traced input keeps the name the tracer gave it (``input.1``)
or is named after its first reader (``onnx::Conv_0``); a scripted input keeps its TorchScript
name (``x.1``); an output is named by its value number in legacy's graph (``191``), spelled after
its reader when a node reads it (``onnx::Relu_9``), or by its TorchScript name without the
suffix (``w``); parameters keep their state_dict keys, also when deduplicated (an ``Identity``
of the kept one), and conv + batch norm folding names its weights ``onnx::Conv_<n>``.
"""

from __future__ import annotations

import io
import warnings

import numpy as np
import onnx
import pytest
import torch

from bench import zoo
from torchscript_onnx.api import build
from torchscript_onnx.verify import check, run_onnxruntime, verify


def _legacy(model, args, **options) -> onnx.GraphProto:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, buffer, dynamo=False, **options)
    return onnx.load_from_string(buffer.getvalue()).graph


def _names(graph: onnx.GraphProto) -> tuple[list[str], list[str], list[str]]:
    return ([v.name for v in graph.input], [v.name for v in graph.output],
            sorted(t.name for t in graph.initializer))


def _ours(model, args, **options) -> tuple[list[str], list[str], list[str]]:
    exported = build(model, args, **options)
    graph = exported.graph
    return [v.name for v in graph.inputs], [v.name for v in graph.outputs], sorted(graph.initializers)


def _value_names(model, args, **options) -> set[str]:
    """Every value name of our exported graph (inputs, initializers, node outputs)."""
    graph = build(model, args, **options).graph
    return ({v.name for v in graph.inputs} | set(graph.initializers)
            | {v.name for node in graph.nodes for v in node.outputs})


# Zoo models whose exports have the legacy input, output and initializer names (convolutions
# with folded batch norms, concatenations, dict and list inputs).
ZOO_MODELS = ["resnet18", "squeezenet1_1", "mobilenet_v2", "dcgan_discriminator", "mnist",
              "super_resolution", "mlp_dict_list"]


@pytest.mark.parametrize("name", ZOO_MODELS)
def test_zoo_default_names_are_legacy_names(name):
    model, args = zoo.MODELS[name]()
    model.eval()
    assert _ours(model, args) == _names(_legacy(model, args))


class TwoOutputs(torch.nn.Module):
    """The second output is also read by a node: legacy names it after that reader."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)
        self.unused = torch.nn.BatchNorm1d(4)  # its parameters count in legacy's numbering

    def forward(self, x, y):
        z = self.linear(x)
        w = torch.relu(z) + y
        return w, z


class Doubles(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        return y


class Passthrough(torch.nn.Module):
    """Returns its input (an Identity in the graph) next to a value another output reads."""

    def forward(self, x):
        a = x.sigmoid()
        return a, a.exp(), x


def _pair():
    return torch.randn(2, 4), torch.randn(2, 4)


# id, model, args
SMALL_CASES = [
    ("two-outputs", TwoOutputs, _pair),
    ("doubles", Doubles, lambda: (torch.randn(2, 4),)),
    ("passthrough", Passthrough, lambda: (torch.randn(2, 4),)),
]


@pytest.mark.parametrize("script", [False, True], ids=["traced", "scripted"])
@pytest.mark.parametrize("make, make_args", [pytest.param(m, a, id=i) for i, m, a in SMALL_CASES])
def test_small_models_default_names_are_legacy_names(make, make_args, script):
    model = make().eval()
    if script:
        model = torch.jit.script(model)
    args = make_args()
    assert _ours(model, args) == _names(_legacy(model, args))


def test_given_names_win_and_the_rest_keep_legacy_names():
    model, args = TwoOutputs().eval(), _pair()
    inputs, outputs, _ = _ours(model, args, input_names=["a"], output_names=["out"])
    legacy_inputs, legacy_outputs, _ = _names(_legacy(model, args, input_names=["a"], output_names=["out"]))
    assert (inputs, outputs) == (legacy_inputs, legacy_outputs) == (["a", "onnx::Add_1"], ["out", "onnx::Relu_9"])


# -- shared and equal weights ------------------------------------------------------------------------


class TiedEmbedding(torch.nn.Module):
    """An embedding tied to the output projection: one tensor, two state_dict keys."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(10, 4)
        self.project = torch.nn.Linear(4, 10)
        self.project.weight = self.embed.weight

    def forward(self, ids):
        return self.project(self.embed(ids))


class EqualWeights(torch.nn.Module):
    """Three linears holding equal weights and (zero) biases: deduplicated by value in eval."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = (torch.nn.Linear(4, 4) for _ in range(3))
        with torch.no_grad():
            for layer in (self.b, self.c):
                layer.weight.copy_(self.a.weight)
            for layer in (self.a, self.b, self.c):
                layer.bias.zero_()

    def forward(self, x):
        return self.c(self.b(self.a(x))), self.a(x) * 2


# id, model, args, export options
SHARED_CASES = [
    ("tied-embedding", TiedEmbedding, lambda: (torch.tensor([[1, 2, 3]]),), {}),
    ("equal-weights-eval", EqualWeights, lambda: (torch.randn(2, 4),), {}),
    ("equal-weights-training", EqualWeights, lambda: (torch.randn(2, 4),),
     {"training": torch.onnx.TrainingMode.TRAINING}),
    ("equal-weights-as-inputs", EqualWeights, lambda: (torch.randn(2, 4),), {"keep_initializers_as_inputs": True}),
]


@pytest.mark.parametrize("make, make_args, options", [pytest.param(*row[1:], id=row[0]) for row in SHARED_CASES])
def test_shared_weights_keep_legacy_initializer_names(make, make_args, options):
    torch.manual_seed(0)
    model, args = make().eval(), make_args()
    legacy = _legacy(model, args, **options)
    ours = _ours(model, args, **options)[2]
    # state_dict names, and a weight folded at export (the tied embedding's transpose), named
    # onnx::<reader>_<n>
    assert ours == _names(legacy)[2]
    legacy_values = {v for node in legacy.node for v in node.output} | {t.name for t in legacy.initializer}
    state_names = {k for k in model.state_dict() if k in legacy_values}
    assert state_names <= _value_names(model, args, **options)
    verify(model, args, opset_version=17, **options)


def test_every_state_dict_name_survives_deduplication():
    torch.manual_seed(0)
    model = EqualWeights().eval()
    names = _value_names(model, (torch.randn(2, 4),))
    assert set(model.state_dict()) <= names
    graph = build(model, (torch.randn(2, 4),)).graph
    assert sorted(graph.initializers) == ["a.bias", "a.weight"]
    identities = {n.outputs[0].name: n.inputs[0].name for n in graph.nodes if n.op_type == "Identity"}
    assert identities == {"b.weight": "a.weight", "c.weight": "a.weight", "b.bias": "a.bias", "c.bias": "a.bias"}


# -- weights folded at export ------------------------------------------------------------------------


class Linears(torch.nn.Module):
    """nn.Linear on a 3-D input: MatMul of the transposed weight, which legacy folds into an
    initializer onnx::MatMul_<n> (ours folds small ones while building, large ones after)."""

    def __init__(self, width: int):
        super().__init__()
        self.a, self.b = torch.nn.Linear(width, width), torch.nn.Linear(width, 2 * width)

    def forward(self, x):
        return self.b(torch.relu(self.a(x))).softmax(-1)


class ConvBatchNorms(torch.nn.Module):
    """Conv + BatchNorm pairs folded into Convs that keep the Conv's output name; the last one is
    the graph output, named by the number of the Conv the fold makes."""

    def __init__(self):
        super().__init__()
        self.c1, self.bn1 = torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4)
        self.c2, self.bn2 = torch.nn.Conv2d(4, 4, 3, bias=False), torch.nn.BatchNorm2d(4)

    def forward(self, x):
        return self.bn2(self.c2(torch.relu(self.bn1(self.c1(x)))))


class GroupNormUp(torch.nn.Module):
    """GroupNorm's weight and bias unsqueezed (folded: onnx::Mul_<n>, onnx::Add_<n>), nearest
    upsampling (legacy's scales: a Concat of two Constants) and a second GroupNorm after it."""

    def __init__(self):
        super().__init__()
        self.conv, self.norm = torch.nn.Conv2d(3, 8, 3), torch.nn.GroupNorm(2, 8)
        self.norm2 = torch.nn.GroupNorm(4, 8)

    def forward(self, x):
        h = torch.nn.functional.silu(self.norm(self.conv(x)))
        return self.norm2(torch.nn.functional.interpolate(h, scale_factor=2.0, mode="nearest"))


class NoOpNodes(torch.nn.Module):
    """A concatenation of one tensor and adaptive pooling to the input's size: nodes legacy keeps
    and ours leaves out, before a folded Conv + BatchNorm whose names count them. (Were one of
    them the input's first reader, legacy would name the input after it: not matched.)"""

    def __init__(self):
        super().__init__()
        self.pool = torch.nn.AdaptiveAvgPool2d(6)  # the size of its input
        self.stem = torch.nn.Conv2d(3, 3, 3)
        self.conv, self.norm = torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4)

    def forward(self, x):
        return self.norm(self.conv(self.pool(torch.cat([self.stem(x)], 1)))).relu()


def _image():
    return (torch.randn(1, 3, 8, 8),)


# id, model, args, whether every value name is one of legacy's (not only inputs, outputs and initializers)
FOLDED_CASES = [
    ("small-linears", lambda: Linears(8), lambda: (torch.randn(2, 3, 8),), True),
    ("large-linears", lambda: Linears(200), lambda: (torch.randn(2, 3, 200),), True),
    ("conv-batchnorm", ConvBatchNorms, _image, True),
    # legacy keeps the Shape of the normalised input, ours a Constant: that one name differs
    ("groupnorm-upsample", GroupNormUp, _image, False),
    ("no-op-nodes", NoOpNodes, _image, True),
]


def _value_names_of(graph: onnx.GraphProto) -> list[str]:
    return [v for node in graph.node for v in node.output] + [v.name for v in graph.output]


@pytest.mark.parametrize("opset", [9, 13, 17])
@pytest.mark.parametrize("make, make_args, every_value",
                         [pytest.param(*row[1:], id=row[0]) for row in FOLDED_CASES])
def test_folded_weights_and_their_nodes_take_legacy_names(make, make_args, every_value, opset):
    torch.manual_seed(0)
    model, args = make().eval(), make_args()
    legacy = _legacy(model, args, opset_version=opset)
    assert _ours(model, args, opset_version=opset) == _names(legacy)
    assert any(t.name.startswith("onnx::") for t in legacy.initializer)  # the case folds a weight
    if every_value:
        buffer = io.BytesIO()
        build(model, args, opset_version=opset).save(buffer)
        # legacy's nodes that ours leaves out (no-op-nodes) are the only ones missing
        assert set(_value_names_of(onnx.load_from_string(buffer.getvalue()).graph)) <= set(_value_names_of(legacy))


# -- dynamic_axes keyed by default names -------------------------------------------------------------


class SmallConv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)

    def forward(self, x):
        return self.conv(x).relu().flatten(1)


class Sum(torch.nn.Module):
    def forward(self, x, y):
        return (x * y).sum(0)


# id, model, script?, args, dynamic_axes keyed by default names, inputs of other sizes
DYNAMIC_CASES = [
    ("traced-tracer-name", SmallConv, False, (torch.randn(2, 3, 6, 6),),
     {"input": {0: "batch"}, "5": {0: "batch"}}, [(torch.randn(5, 3, 6, 6),)]),
    ("traced-reader-name", Sum, False, (torch.randn(2, 4), torch.randn(2, 4)),
     {"onnx::Mul_0": {0: "n"}, "onnx::Mul_1": {0: "n"}}, [(torch.randn(7, 4), torch.randn(7, 4))]),
    ("scripted", Sum, True, (torch.randn(2, 4), torch.randn(2, 4)),
     {"x.1": {0: "n"}, "y.1": {0: "n"}}, [(torch.randn(7, 4), torch.randn(7, 4))]),
]


@pytest.mark.parametrize("make, script, args, axes, others", [pytest.param(*row[1:], id=row[0]) for row in DYNAMIC_CASES])
def test_dynamic_axes_keyed_by_default_names(make, script, args, axes, others):
    torch.manual_seed(0)
    model = make().eval()
    if script:
        model = torch.jit.script(model)
    exported = build(model, args, dynamic_axes=axes, opset_version=17)
    graph = exported.graph
    named = {v.name: v.shape for v in graph.inputs + graph.outputs}
    for key, dims in axes.items():
        assert key in named
        for axis, dim in dims.items():
            assert named[key][axis] == dim
    buffer = io.BytesIO()
    exported.save(buffer)
    check(buffer.getvalue())
    for other in others:
        with torch.no_grad():
            expected = model(*other)
        (actual,) = run_onnxruntime(buffer.getvalue(), list(other))
        np.testing.assert_allclose(actual, expected.numpy(), rtol=1e-4, atol=1e-5)
