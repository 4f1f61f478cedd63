"""Scripted forwards whose parameters are tuples: each element becomes its own graph input, in the
order args flatten to (as legacy lays them out), and the export matches the scripted model."""

from typing import Tuple

import numpy as np
import onnxruntime as ort
import pytest
import torch
from torch import Tensor

import torchscript_onnx as tso


class PairInput(torch.nn.Module):
    def forward(self, x, pair: Tuple[Tensor, Tensor]):
        return x * pair[0] - pair[1]


class NestedInput(torch.nn.Module):
    def forward(self, x, nested: Tuple[Tensor, Tuple[Tensor, Tensor]]):
        first, (second, third) = nested
        return x + first * second + third


class NumberInTuple(torch.nn.Module):
    def forward(self, pair: Tuple[int, Tensor], y):
        return pair[1] * pair[0] + y


def _flat(args):
    out = []
    for a in args:
        out += _flat(a) if isinstance(a, tuple) else [a]
    return out


# (id, module, args)
CASES = [
    ("pair", PairInput, (torch.randn(2, 3), (torch.randn(2, 3), torch.randn(1, 3)))),
    ("nested", NestedInput, (torch.randn(4, 5), (torch.randn(4, 5), (torch.randn(1, 5), torch.randn(4, 1))))),
    ("number-in-tuple", NumberInTuple, ((3, torch.randn(4, 3)), torch.randn(4, 3))),
]


@pytest.mark.parametrize("opset", [9, 17])
@pytest.mark.parametrize("make, args", [pytest.param(*row[1:], id=row[0]) for row in CASES])
def test_tuple_parameters_become_one_input_per_element(make, args, opset):
    scripted = torch.jit.script(make())
    proto = tso.export(scripted, args, None, opset_version=opset)
    flat = _flat(args)
    assert len(proto.graph.input) == len(flat)
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {i.name: np.asarray(v.numpy() if isinstance(v, torch.Tensor) else v) for i, v in zip(proto.graph.input, flat)}
    (got,) = session.run(None, feeds)
    np.testing.assert_allclose(got, scripted(*args).numpy(), rtol=1e-5, atol=1e-6)
