"""An eager-mode statically quantized convnet (QuantStub, conv, relu, linear, DeQuantStub; fbgemm
and qnnpack) exports as QDQ ONNX that computes, within one output step, the float reference of the
quantized model (``tests.ops.test_quantized.check_quantized``: dequantized int weights, float64 ops,
requantized with each layer's scale and zero point; eager PyTorch is held to the same reference)."""

import io
import warnings

import onnx
import pytest
import torch
from torch import nn

from tests.ops.test_quantized import check_quantized, restore_quantized_engine  # noqa: F401 (an autouse fixture)
from torchscript_onnx import export

warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", category=UserWarning)


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        from torch.ao.quantization import DeQuantStub, QuantStub

        self.quant, self.dequant = QuantStub(), DeQuantStub()
        self.conv1, self.relu1 = nn.Conv2d(3, 8, 3, padding=1), nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.conv2, self.relu2 = nn.Conv2d(8, 4, 3), nn.ReLU()
        self.fc = nn.Linear(4 * 2 * 2, 5)

    def forward(self, x):
        x = self.pool(self.relu1(self.conv1(self.quant(x))))
        x = self.relu2(self.conv2(x))
        return self.dequant(self.fc(x.flatten(1)))


def quantized_convnet(engine: str, fuse: bool):
    from torch.ao import quantization as tq

    torch.backends.quantized.engine = engine
    torch.manual_seed(0)
    model = ConvNet().eval()
    if fuse:  # conv+relu -> quantized::conv2d_relu
        tq.fuse_modules(model, [["conv1", "relu1"], ["conv2", "relu2"]], inplace=True)
    model.qconfig = tq.get_default_qconfig(engine)
    tq.prepare(model, inplace=True)
    for _ in range(8):
        model(torch.randn(4, 3, 8, 8))
    return tq.convert(model, inplace=True)


@pytest.mark.parametrize("engine,opset", [("fbgemm", 13), ("fbgemm", 26), ("qnnpack", 13), ("qnnpack", 21)])
@pytest.mark.parametrize("fuse", [False, True])
def test_quantized_convnet(engine, opset, fuse):
    model = quantized_convnet(engine, fuse)
    x = torch.randn(4, 3, 8, 8)
    proto = onnx.load_from_string(check_quantized(model, x, opset, saturating=torch.randn(4, 3, 8, 8) * 3))
    ops = {n.op_type for n in proto.graph.node}
    assert {"QuantizeLinear", "DequantizeLinear", "Conv", "MatMul"} <= ops
    assert any(i.data_type == onnx.TensorProto.INT8 for i in proto.graph.initializer) or any(
        n.op_type == "Constant" and n.attribute[0].t.data_type == onnx.TensorProto.INT8 for n in proto.graph.node)


def test_per_channel_weights_need_opset_13():
    model = quantized_convnet("fbgemm", False)
    with pytest.raises(Exception, match="opset_version=13"):
        export(model, (torch.randn(1, 3, 8, 8),), io.BytesIO(), opset_version=12)


def test_model_unchanged_after_export():
    model = quantized_convnet("fbgemm", True)
    x = torch.randn(2, 3, 8, 8)
    before = model(x)
    export(model, (x,), io.BytesIO(), opset_version=13)
    assert not isinstance(model, torch.jit.ScriptModule)
    assert torch.equal(model(x), before)
