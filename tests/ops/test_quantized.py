"""Quantization: quantize/dequantize/fake_quantize ops and eager-mode quantized modules (packed
weights) as QuantizeLinear/DequantizeLinear, one table run against eager PyTorch via onnxruntime.
Outputs are dequantized floats; tolerance is one quantization step (rounding of ties may differ).
Biases of quantized conv/linear are int32 (scale input_scale * weight_scale, zero point 0), as legacy."""

import io
import warnings

import onnx

import pytest
import torch
from torch import nn

from tests.optable import Case, below_min_params, params, run_below_min, run_case
from torchscript_onnx import export

warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", category=UserWarning)


def randn(*shape):
    return lambda: (torch.randn(*shape),)


def quantized(build, shape, engine="fbgemm", fuse=None):
    """``build()`` (a float module) statically quantized eagerly, calibrated on random data."""
    from torch.ao import quantization as tq

    def make():
        torch.backends.quantized.engine = engine
        torch.manual_seed(0)
        model = tq.QuantWrapper(build()).eval()
        if fuse:  # e.g. conv + relu -> quantized::conv2d_relu
            tq.fuse_modules(model.module, fuse, inplace=True)
        model.qconfig = tq.get_default_qconfig(engine)
        tq.prepare(model, inplace=True)
        for _ in range(4):
            model(torch.randn(*shape))
        return tq.convert(model, inplace=True)
    return make


class Functional(nn.Module):
    def __init__(self, op):
        super().__init__()
        self.f, self.op = nn.quantized.FloatFunctional(), op

    def forward(self, x):
        return getattr(self.f, self.op)(*([[x, x], 1] if self.op == "cat" else [x, x]))


class Lazy(nn.Module):
    """Builds the quantized model only when a test runs it."""

    def __init__(self, make):
        super().__init__()
        self.make, self.model = make, None

    def eval(self):
        return self._get()

    def _get(self):
        if self.model is None:
            self.model = self.make()
        return self.model


def qcase(name, build, shape, min_opset=13, engine="fbgemm", atol=0.05, fuse=None):
    return Case(name, Lazy(quantized(build, shape, engine, fuse)), randn(*shape), min_opset=min_opset, atol=atol,
                rtol=0)


STEP = 0.05
CASES = [
    Case("quantize_per_tensor_uint8",
         lambda x: torch.quantize_per_tensor(x, 0.05, 10, torch.quint8).dequantize(), randn(2, 3, 4),
         min_opset=10, atol=STEP, rtol=0),
    Case("quantize_per_tensor_int8",
         lambda x: torch.quantize_per_tensor(x, 0.02, -3, torch.qint8).dequantize(), randn(2, 5),
         min_opset=10, atol=0.02, rtol=0),
    Case("quantize_per_channel",
         lambda x: torch.quantize_per_channel(x, torch.tensor([0.05, 0.02, 0.1], dtype=torch.float64),
                                              torch.tensor([3, 0, -2]), 1, torch.qint8).dequantize(),
         randn(2, 3, 4), min_opset=13, atol=0.1, rtol=0),
    Case("fake_quantize_per_tensor_uint8",
         lambda x: torch.fake_quantize_per_tensor_affine(x, 0.05, 128, 0, 255), randn(3, 4),
         min_opset=10, atol=STEP, rtol=0),
    Case("fake_quantize_per_tensor_int8",
         lambda x: torch.fake_quantize_per_tensor_affine(x, 0.01, 0, -128, 127), randn(3, 4),
         min_opset=10, atol=0.01, rtol=0),
    Case("fake_quantize_per_channel",
         lambda x: torch.fake_quantize_per_channel_affine(x, torch.tensor([0.05, 0.1]),
                                                          torch.tensor([0, 5], dtype=torch.int32), 0, -128, 127),
         randn(2, 6), min_opset=13, atol=0.1, rtol=0),
    qcase("linear", lambda: nn.Linear(6, 4), (3, 6)),
    qcase("linear_3d", lambda: nn.Linear(6, 4), (2, 3, 6)),
    qcase("linear_qnnpack_per_tensor", lambda: nn.Linear(6, 4), (3, 6), min_opset=10, engine="qnnpack"),
    qcase("conv1d", lambda: nn.Conv1d(2, 3, 3, padding=1), (2, 2, 7)),
    qcase("conv2d", lambda: nn.Conv2d(3, 4, 3, stride=2, padding=1), (1, 3, 8, 8)),
    qcase("conv2d_groups_dilation", lambda: nn.Conv2d(4, 4, 3, groups=2, dilation=2), (1, 4, 9, 9)),
    qcase("conv2d_qnnpack_per_tensor", lambda: nn.Conv2d(3, 4, 3), (1, 3, 6, 6), min_opset=10, engine="qnnpack"),
    qcase("conv3d", lambda: nn.Conv3d(2, 3, 2), (1, 2, 4, 4, 4)),
    qcase("conv_transpose2d", lambda: nn.ConvTranspose2d(3, 2, 3, stride=2), (1, 3, 4, 4), engine="qnnpack",
          min_opset=10),
    qcase("conv_transpose1d", lambda: nn.ConvTranspose1d(3, 2, 3, padding=1), (1, 3, 5), engine="qnnpack",
          min_opset=10),
    qcase("hardswish", lambda: nn.Hardswish(), (2, 6), min_opset=10),
    qcase("leaky_relu", lambda: nn.LeakyReLU(0.1), (2, 6), min_opset=10),
    qcase("sigmoid", lambda: nn.Sigmoid(), (2, 6), min_opset=10),
    qcase("layer_norm", lambda: nn.LayerNorm(6), (2, 3, 6), min_opset=10),
    qcase("group_norm", lambda: nn.GroupNorm(2, 4), (2, 4, 5), min_opset=10),
    qcase("instance_norm", lambda: nn.InstanceNorm2d(3, affine=True), (2, 3, 4, 4), min_opset=10),
    qcase("linear_relu", lambda: nn.Sequential(nn.Linear(6, 4), nn.ReLU()), (3, 6), fuse=[["0", "1"]]),
    qcase("conv1d_relu", lambda: nn.Sequential(nn.Conv1d(2, 3, 3), nn.ReLU()), (2, 2, 7), fuse=[["0", "1"]]),
    qcase("conv2d_relu", lambda: nn.Sequential(nn.Conv2d(2, 3, 3), nn.ReLU()), (1, 2, 6, 6), fuse=[["0", "1"]]),
    qcase("conv3d_relu", lambda: nn.Sequential(nn.Conv3d(2, 3, 2), nn.ReLU()), (1, 2, 4, 4, 4), fuse=[["0", "1"]]),
    qcase("add", lambda: Functional("add"), (2, 5), min_opset=10),
    qcase("add_relu", lambda: Functional("add_relu"), (2, 5), min_opset=10),
    qcase("mul", lambda: Functional("mul"), (2, 5), min_opset=10),
    qcase("cat", lambda: Functional("cat"), (2, 5), min_opset=10),
]


@pytest.mark.parametrize("case,opset", params(CASES))
def test_quantized(case, opset):
    run_case(case, opset)


@pytest.mark.parametrize("case,opset", below_min_params(CASES))
def test_quantized_below_min(case, opset):
    run_below_min(case, opset)


BIAS_CASES = [
    ("linear", lambda: nn.Linear(6, 4), (3, 6), "fbgemm", 13),
    ("linear_qnnpack", lambda: nn.Linear(6, 4), (3, 6), "qnnpack", 10),
    ("conv2d_per_channel", lambda: nn.Conv2d(3, 4, 3), (1, 3, 6, 6), "fbgemm", 13),
    ("conv2d_qnnpack", lambda: nn.Conv2d(3, 4, 3), (1, 3, 6, 6), "qnnpack", 10),
    ("conv_transpose2d", lambda: nn.ConvTranspose2d(3, 2, 3, stride=2), (1, 3, 4, 4), "qnnpack", 13),
]


@pytest.mark.parametrize("name,build,shape,engine,opset", BIAS_CASES, ids=[c[0] for c in BIAS_CASES])
def test_bias_is_int32(name, build, shape, engine, opset):
    """The bias reaches the graph as int32 trunc(bias / (input_scale * weight_scale)) through
    DequantizeLinear (as legacy's requantize_bias_helper); numerics are checked by the table above."""
    model = quantized(build, shape, engine)()
    layer, input_scale = model.module, model.quant.scale.float()
    qweight, float_bias = layer.weight(), layer.bias().detach()
    per_channel = qweight.qscheme() in (torch.per_channel_affine, torch.per_channel_symmetric)
    weight_scale = (qweight.q_per_channel_scales() if per_channel else torch.tensor(qweight.q_scale())).float()
    expected = (float_bias / (weight_scale * input_scale)).to(torch.int32)
    f = io.BytesIO()
    export(model, (torch.randn(*shape),), f, opset_version=opset)
    graph = onnx.load_from_string(f.getvalue()).graph
    tensors = {t.name: t for t in graph.initializer}
    tensors.update({n.output[0]: a.t for n in graph.node if n.op_type == "Constant" for a in n.attribute})
    int32_inputs = [tensors[n.input[0]] for n in graph.node if n.op_type == "DequantizeLinear"
                    and n.input[0] in tensors and tensors[n.input[0]].data_type == onnx.TensorProto.INT32]
    assert len(int32_inputs) == 1, "expected one DequantizeLinear of an int32 bias"
    torch.testing.assert_close(torch.from_numpy(onnx.numpy_helper.to_array(int32_inputs[0]).copy()), expected,
                               rtol=0, atol=0)
