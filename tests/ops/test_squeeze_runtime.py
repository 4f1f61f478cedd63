"""squeeze of dims whose size is known only at runtime: torch removes such a dim only when it is 1,
so the export must decide at runtime too (an If per dim from opset 11, the axis itself a runtime
value from opset 13). Each case runs on inputs where the dim is 1 and where it is not."""

import numpy as np
import onnxruntime as ort
import pytest
import torch

import torchscript_onnx as tso


class SqueezeDim(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.squeeze(x, dim=self.dim) * 2


class SqueezeRuntimeDim(torch.nn.Module):
    def forward(self, x, dim: int):
        return torch.squeeze(x, dim) + 1


ALL_DYNAMIC = dict(input_names=["x"], dynamic_axes={"x": {0: "a", 1: "b", 2: "c"}})
OTHER_SIZES = [torch.randn(2, 1, 4), torch.randn(2, 2, 3), torch.randn(3, 1, 1), torch.randn(1, 5, 1)]


@pytest.mark.parametrize("opset", [11, 13, 26])
@pytest.mark.parametrize("dim", [1, -2, 0, -1])
def test_squeeze_of_a_dynamic_dim_decides_at_runtime(dim, opset):
    model = SqueezeDim(dim)
    proto = tso.export(model, (torch.randn(2, 1, 4),), None, opset_version=opset, **ALL_DYNAMIC)
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    for x in OTHER_SIZES:
        (got,) = session.run(None, {"x": x.numpy()})
        want = model(x).numpy()
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("opset", [13, 26])
def test_squeeze_with_a_runtime_dim(opset):
    scripted = torch.jit.script(SqueezeRuntimeDim())
    proto = tso.export(scripted, (torch.randn(2, 1, 4), 1), None, opset_version=opset)
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    x = torch.randn(2, 1, 4)
    for dim in (1, 0, -2, -1):
        (got,) = session.run(None, dict(zip([i.name for i in proto.graph.input], [x.numpy(), np.array(dim)])))
        want = scripted(x, dim).numpy()
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_squeeze_with_a_runtime_dim_below_opset_13_says_what_to_do():
    with pytest.raises(tso.SymbolicValueError, match="opset_version=13"):
        tso.export(torch.jit.script(SqueezeRuntimeDim()), (torch.randn(2, 1, 4), 1), None, opset_version=12)
