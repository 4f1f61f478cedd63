"""ConvTranspose's output_padding: folded into a smaller end pad where the end pad covers it (the
extra outputs are values the pad would crop), kept as output_padding past the full output, and
padded on before the bias where onnxruntime refuses it (quantized torch allows output_padding up
to the kernel's reach, onnxruntime only below max(stride, dilation)). Numerics against eager
PyTorch through onnxruntime, traced and scripted, spatial dims dynamic and rerun at other sizes."""

import io

import onnx
import pytest
import torch
from torch import nn

from tests.optable import Case, run_case
from torchscript_onnx import MAX_OPSET, export


def _conv(cls, dims, **options):
    def inputs(size=5, batch=1):
        return lambda: (torch.randn(batch, 2, *[size + k for k in range(dims)]),)

    names = ["x"]
    axes = {"x": list(range(dims + 2))}
    label = "_".join(f"{k}{v}" for k, v in options.items())
    return Case(f"{cls.__name__}_{label}", cls(2, 3, 3, **options), inputs(), opsets=(9, 13, MAX_OPSET),
                min_opset=9, export_options=dict(input_names=names, dynamic_axes=axes),
                other_inputs=lambda: [inputs(7, 2)(), inputs(3, 1)()])


CASES = [
    # end pad >= output_padding: folded into the end pad
    _conv(nn.ConvTranspose1d, 1, stride=2, padding=1, output_padding=1),
    _conv(nn.ConvTranspose2d, 2, stride=3, padding=2, output_padding=2),
    _conv(nn.ConvTranspose3d, 3, stride=2, padding=2, output_padding=1, dilation=2),
    # end pad < output_padding: the rest stays output_padding (bias-only outputs past the full one)
    _conv(nn.ConvTranspose2d, 2, stride=3, padding=0, output_padding=2),
    _conv(nn.ConvTranspose2d, 2, stride=3, padding=1, output_padding=2, bias=False),
    _conv(nn.ConvTranspose1d, 1, stride=1, padding=1, output_padding=0),
]


@pytest.mark.parametrize("script", [False, True], ids=["trace", "script"])
@pytest.mark.parametrize("case,opset", [(c, o) for c in CASES for o in c.test_opsets()],
                         ids=[f"{c.name}-opset{o}" for c in CASES for o in c.test_opsets()])
def test_conv_transpose_output_padding(case, opset, script):
    run_case(case, opset, script=script)


def _conv_transpose_attrs(model, x, opset=13):
    buffer = io.BytesIO()
    export(model, (x,), buffer, opset_version=opset)
    nodes = [n for n in onnx.load_from_string(buffer.getvalue()).graph.node if n.op_type == "ConvTranspose"]
    assert len(nodes) == 1
    return {a.name: list(a.ints) for a in nodes[0].attribute}


def test_covered_output_padding_becomes_a_smaller_end_pad():
    attrs = _conv_transpose_attrs(nn.ConvTranspose2d(2, 3, 3, stride=2, padding=(2, 1), output_padding=(1, 1)),
                                  torch.randn(1, 2, 4, 5))
    assert "output_padding" not in attrs
    assert attrs["pads"] == [2, 1, 1, 0]


class QuantizedTransposed(nn.Module):
    """A quantized ConvTranspose3d whose output_padding reaches past max(stride, dilation)."""

    def __init__(self, with_bias=True):
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.ao.nn.quantized.ConvTranspose3d(4, 5, [2, 3, 4], output_padding=(0, 1, 2),
                                                          stride=[3, 1, 2])
        weight = torch.quantize_per_tensor(torch.randn(4, 5, 2, 3, 4), 0.5, 0, torch.qint8)
        self.conv.set_weight_bias(weight, torch.arange(5.0) - 2 if with_bias else None)

    def forward(self, x):
        return self.conv(torch.quantize_per_tensor(x, 0.5, 128, torch.quint8)).dequantize()


HAS_FBGEMM = "fbgemm" in torch.backends.quantized.supported_engines
needs_fbgemm = pytest.mark.skipif(not HAS_FBGEMM, reason="this torch build has no fbgemm quantized engine")


@pytest.fixture
def fbgemm():
    previous = torch.backends.quantized.engine
    torch.backends.quantized.engine = "fbgemm"
    yield
    torch.backends.quantized.engine = previous


@needs_fbgemm
@pytest.mark.parametrize("opset", [10, 13, MAX_OPSET])
@pytest.mark.parametrize("with_bias", [True, False], ids=["bias", "no_bias"])
def test_quantized_output_padding_past_the_stride(fbgemm, opset, with_bias):
    case = Case("q", QuantizedTransposed(with_bias), lambda: (torch.randn(2, 4, 4, 4, 4),))
    run_case(case, opset)
