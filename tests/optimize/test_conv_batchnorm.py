"""Conv/ConvTranspose + BatchNormalization folding: exact structure, numerics against eager PyTorch,
no folding outside eval mode, and folded weights computed only while being written."""

from __future__ import annotations

import io

import numpy as np
import onnx
import pytest
import torch
from optimize_helpers import context, op_types, run

from torchscript_onnx import TrainingMode, export
from torchscript_onnx.builder.lazy import CHUNK_BYTES, LazyTensor
from torchscript_onnx.pipeline.optimize.conv_batchnorm import FoldConvBatchNorm
from torchscript_onnx.verify import verify

OPSETS = (7, 13, 26)


def _randomize(model: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """Non-trivial BN statistics and affine parameters, so a wrong fold cannot pass."""
    generator = torch.Generator().manual_seed(seed)
    for module in model.modules():
        if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
            n = module.num_features
            module.running_mean.copy_(torch.randn(n, generator=generator))
            module.running_var.copy_(torch.rand(n, generator=generator) + 0.5)
            if module.affine:
                module.weight.data.copy_(torch.randn(n, generator=generator))
                module.bias.data.copy_(torch.randn(n, generator=generator))
    return model


def _seq(*layers) -> torch.nn.Module:
    return _randomize(torch.nn.Sequential(*layers))


nn = torch.nn
# name, model, input shape
MODELS = [
    ("conv2d", lambda: _seq(nn.Conv2d(3, 8, 3, bias=False), nn.BatchNorm2d(8), nn.ReLU()), (2, 3, 10, 10)),
    ("conv2d_bias", lambda: _seq(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8)), (2, 3, 10, 10)),
    ("conv1d", lambda: _seq(nn.Conv1d(4, 6, 3), nn.BatchNorm1d(6)), (2, 4, 12)),
    ("conv3d", lambda: _seq(nn.Conv3d(2, 4, 3, bias=False), nn.BatchNorm3d(4)), (1, 2, 6, 6, 6)),
    ("depthwise", lambda: _seq(nn.Conv2d(6, 6, 3, groups=6, bias=False), nn.BatchNorm2d(6)), (2, 6, 8, 8)),
    ("grouped", lambda: _seq(nn.Conv2d(4, 8, 3, groups=2), nn.BatchNorm2d(8)), (2, 4, 8, 8)),
    ("bn_no_affine", lambda: _seq(nn.Conv2d(3, 5, 3), nn.BatchNorm2d(5, affine=False)), (2, 3, 8, 8)),
    ("conv_transpose", lambda: _seq(nn.ConvTranspose2d(3, 6, 3, stride=2), nn.BatchNorm2d(6)), (2, 3, 5, 5)),
    ("conv_transpose_grouped",
     lambda: _seq(nn.ConvTranspose2d(4, 6, 3, groups=2, bias=False), nn.BatchNorm2d(6)), (2, 4, 5, 5)),
    ("two_blocks", lambda: _seq(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 4, 1),
                                nn.BatchNorm2d(4)), (2, 3, 8, 8)),
]


def _ops(proto: onnx.ModelProto) -> list[str]:
    return [node.op_type for node in proto.graph.node]


def _export(model, args, **options) -> onnx.ModelProto:
    buffer = io.BytesIO()
    export(model, args, buffer, **options)
    return onnx.load_from_string(buffer.getvalue())


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("make, shape", [pytest.param(m, s, id=n) for n, m, s in MODELS])
def test_folded_in_eval(make, shape, opset):
    torch.manual_seed(0)
    model, args = make().eval(), (torch.randn(shape),)
    verify(model, args, opset_version=opset, rtol=1e-4, atol=1e-5)
    proto = _export(model, args, opset_version=opset)
    assert "BatchNormalization" not in _ops(proto)
    names = [i.name for i in proto.graph.initializer]
    assert not any(name.endswith(("running_mean", "running_var")) for name in names)
    # Opsets 7-8 list initializers as inputs; the folded ones too, the replaced ones not.
    listed = [i.name for i in proto.graph.input[1:]]
    assert listed == (names if opset < 9 else [])


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16])
@pytest.mark.parametrize("transposed", [False, True], ids=["conv", "conv_transpose"])
def test_folded_values_match_torch_fusion(transposed, dtype):
    """The lazy weight and bias equal torch.nn.utils.fusion's (onnxruntime has no double Conv)."""
    from torch.nn.utils.fusion import fuse_conv_bn_eval

    conv = (nn.ConvTranspose2d(3, 4, 3) if transposed else nn.Conv2d(3, 4, 3)).to(dtype).eval()
    bn = _randomize(nn.BatchNorm2d(4)).to(dtype).eval()
    g = context()
    x = g.graph.add_input("x", dtype, (1, 3, 6, 6))
    params = [g.graph.add_initializer(n, t.detach(), const=False)
              for n, t in [("w", conv.weight), ("c", conv.bias), ("s", bn.weight), ("b", bn.bias),
                           ("m", bn.running_mean), ("v", bn.running_var)]]
    out = g.op("ConvTranspose" if transposed else "Conv", x, *params[:2], kernel_shape_i=[3, 3])
    g.graph.outputs = [g.op("BatchNormalization", out, *params[2:], epsilon_f=bn.eps)]
    assert FoldConvBatchNorm().run(g.graph)
    weight, bias = (g.graph.initializers[v.name] for v in g.graph.nodes[0].inputs[1:])
    fused = fuse_conv_bn_eval(conv.float(), bn.float(), transpose=transposed)
    tolerance = dict(rtol=1e-3, atol=1e-3) if dtype == torch.float16 else dict(rtol=1e-6, atol=1e-6)
    assert weight.dtype == bias.dtype == dtype
    torch.testing.assert_close(weight.materialize().float(), fused.weight.detach(), **tolerance)
    torch.testing.assert_close(bias.materialize().float(), fused.bias.detach(), **tolerance)


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("mode, train_flag", [
    (TrainingMode.TRAINING, False), (TrainingMode.TRAINING, True), (TrainingMode.PRESERVE, True),
], ids=["training-eval_model", "training-train_model", "preserve-train_model"])
def test_not_folded_in_training(mode, train_flag, opset):
    model = _seq(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8)).train(train_flag)
    args = (torch.randn(2, 3, 6, 6),)
    proto = _export(model, args, opset_version=opset, training=mode)
    names = {i.name for i in proto.graph.initializer}
    # The conv keeps its own parameters; nothing was folded into new initializers.
    assert {"0.weight", "0.bias"} <= names
    assert not any(name.startswith("onnx::Conv") for name in names)
    assert model.training == train_flag  # the user's mode is restored


def test_preserve_with_eval_model_folds():
    model = _seq(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8)).eval()
    args = (torch.randn(2, 3, 6, 6),)
    verify(model, args, opset_version=17, training=TrainingMode.PRESERVE)
    assert "BatchNormalization" not in _ops(_export(model, args, opset_version=17, training=TrainingMode.PRESERVE))


def test_not_folded_when_parameters_are_inputs():
    model = _seq(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8)).eval()
    proto = _export(model, (torch.randn(2, 3, 6, 6),), opset_version=17, export_params=False)
    assert "BatchNormalization" in _ops(proto)


class TwoReaders(nn.Module):
    """The conv output is also read elsewhere: folding would change that reader's values."""

    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)

    def forward(self, x):
        y = self.conv(x)
        return self.bn(y) + y


class ConvOutputReturned(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)

    def forward(self, x):
        y = self.conv(x)
        return y, self.bn(y)


class SharedBlockTwice(nn.Module):
    """The same conv + BN applied twice: folded twice, one set of folded weights in the file."""

    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(4, 4, 3, padding=1), nn.BatchNorm2d(4)

    def forward(self, x):
        return self.bn(self.conv(torch.relu(self.bn(self.conv(x)))))


@pytest.mark.parametrize("model_class, batchnorms", [(TwoReaders, 1), (ConvOutputReturned, 1), (SharedBlockTwice, 0)])
def test_structure(model_class, batchnorms):
    model = _randomize(model_class()).eval()
    args = (torch.randn(2, 3 if model_class is not SharedBlockTwice else 4, 6, 6),)
    verify(model, args, opset_version=17)
    proto = _export(model, args, opset_version=17)
    assert _ops(proto).count("BatchNormalization") == batchnorms
    if model_class is SharedBlockTwice:
        assert len(proto.graph.initializer) == 2  # one folded weight and bias, shared by both convs


# -- hand-built graphs: what the pass refuses -------------------------------------------------


def _conv_bn_graph(opset=17, bn_attrs=None, bn_outputs=1, conv_output_is_graph_output=False):
    g = context(opset)
    x = g.graph.add_input("x", torch.float32, (1, 2, 5, 5))
    weight = g.graph.add_initializer("w", torch.randn(3, 2, 3, 3), const=False)
    conv = g.op("Conv", x, weight, kernel_shape_i=[3, 3])
    params = [g.graph.add_initializer(n, torch.rand(3) + 0.5, const=False) for n in ("s", "b", "m", "v")]
    result = g.op("BatchNormalization", conv, *params, outputs=bn_outputs, **(bn_attrs or {}))
    first = result if bn_outputs == 1 else result[0]
    g.graph.outputs = [first, conv] if conv_output_is_graph_output else [first]
    return g.graph


@pytest.mark.parametrize("options, folds", [
    (dict(), True),
    (dict(bn_attrs=dict(training_mode_i=1), bn_outputs=3), False),
    (dict(bn_attrs=dict(training_mode_i=1)), False),
    (dict(opset=7, bn_attrs=dict(spatial_i=0)), False),
    (dict(conv_output_is_graph_output=True), False),
], ids=["inference", "training_mode_outputs", "training_mode", "spatial_0", "conv_is_output"])
def test_hand_built(options, folds):
    graph = _conv_bn_graph(**options)
    assert FoldConvBatchNorm().run(graph) == folds
    assert ("BatchNormalization" in op_types(graph)) != folds


def test_hand_built_matches_unfolded():
    torch.manual_seed(0)
    feeds = {"x": np.random.default_rng(0).standard_normal((1, 2, 5, 5), dtype=np.float32)}
    torch.manual_seed(1)
    reference = run(_conv_bn_graph(), feeds)[0]
    torch.manual_seed(1)
    graph = _conv_bn_graph()
    FoldConvBatchNorm().run(graph)
    assert op_types(graph) == ["Conv"]
    assert all(isinstance(graph.initializers[v.name], LazyTensor) for v in graph.nodes[0].inputs[1:])
    np.testing.assert_allclose(run(graph, feeds)[0], reference, rtol=1e-5, atol=1e-6)


# -- memory: folded weights are computed a row block at a time while they are written --------


def test_folded_weights_streamed_in_row_blocks(monkeypatch, tmp_path):
    blocks = []
    rows = LazyTensor._rows

    def recording_rows(self, start, stop):
        out = rows(self, start, stop)
        blocks.append(out.numel() * out.element_size())
        return out

    def forbidden(self):
        raise AssertionError("a folded weight was materialised whole")

    monkeypatch.setattr(LazyTensor, "_rows", recording_rows)
    monkeypatch.setattr(LazyTensor, "materialize", forbidden)
    model = _seq(nn.Conv2d(256, 256, 3), nn.BatchNorm2d(256)).eval()  # a 2.4 MB weight
    export(model, (torch.randn(1, 256, 4, 4),), str(tmp_path / "m.onnx"), opset_version=17)
    assert sum(blocks) >= 256 * 256 * 9 * 4
    assert max(blocks) <= CHUNK_BYTES
    monkeypatch.undo()
    session_outputs = verify(model, (torch.randn(1, 256, 4, 4),), opset_version=17)
    assert session_outputs.nodes == 1


@pytest.mark.parametrize("training", [False, True], ids=["eval", "training"])
def test_pipeline_folds_only_in_eval(training):
    """The guard itself (training exports lower BN with batch statistics today, so an export
    alone would not notice a fold in training mode)."""
    from torchscript_onnx.pipeline.optimize import optimize

    graph = _conv_bn_graph()
    optimize(graph, training=training)
    assert ("BatchNormalization" in op_types(graph)) == training
    assert set(graph.initializers) == ({"w", "s", "b", "m", "v"} if training else {"onnx::Conv", "onnx::Conv_1"})
