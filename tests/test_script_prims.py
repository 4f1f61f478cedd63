"""TorchScript built-ins that only exist in scripted graphs (prim::layout, prim::type, prim::data,
prim::tolist) and aten::set_, each in a scripted model checked against the model through onnxruntime."""

from typing import List

import numpy as np
import onnxruntime as ort
import pytest
import torch

import torchscript_onnx as tso


class NormWithDefaults(torch.nn.Module):
    def forward(self, x):  # torch.norm's scripted body asks the layout and the device type
        return torch.norm(x, p=1, dim=1) + torch.norm(x)


class DataSize(torch.nn.Module):
    def forward(self, x):
        return x.new_zeros(x.data.size()) + x.data


class ToList(torch.nn.Module):
    def forward(self, x):
        values: List[int] = x.tolist()
        return torch.tensor(values) * 2


class NumberOfOneElement(torch.nn.Module):
    def forward(self, x):  # float()/int() of a one-element tensor of rank 1 is a number (0-d)
        return torch.tensor([float(x), float(int(x * 10))])


class DeviceCompare(torch.nn.Module):
    def forward(self, x):  # a Device constant is stored as its name: it must still equal x.device
        if x.device != torch.device("cpu"):
            return x
        return torch.zeros_like(x) + x.sum()


class SetSource(torch.nn.Module):
    def forward(self, x, y):
        x.set_(y)
        return x + 1


# (id, module, args, other args)
CASES = [
    ("norm-layout-and-device-type", NormWithDefaults, (torch.randn(3, 4),), [(torch.randn(5, 4),)]),
    ("data", DataSize, (torch.randn(3, 4),), []),
    ("tolist", ToList, (torch.randint(100, (4,)),), []),
    ("number-of-one-element", NumberOfOneElement, (torch.randn(1),), []),
    ("device-compare", DeviceCompare, (torch.randn(3, 4),), [(torch.randn(5, 4),)]),
    ("set_", SetSource, (torch.ones(2, 3), torch.randn(4, 6)), []),
]


@pytest.mark.parametrize("opset", [9, 17])
@pytest.mark.parametrize("make, args, others", [pytest.param(*row[1:], id=row[0]) for row in CASES])
def test_scripted_prims(make, args, others, opset):
    scripted = torch.jit.script(make())
    dynamic = dict(input_names=["x"], dynamic_axes={"x": {0: "n"}}) if others else {}
    proto = tso.export(scripted, args, None, opset_version=opset, **dynamic)
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    for inputs in [args, *others]:
        feeds = {i.name: v.numpy() for i, v in zip(proto.graph.input, inputs[-len(proto.graph.input):])}
        (got,) = session.run(None, feeds)
        want = scripted(*[v.clone() for v in inputs])
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-6)
