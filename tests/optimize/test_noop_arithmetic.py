"""RemoveNoopArithmetic: multiplying or dividing by a constant one, and adding or subtracting an
integer zero, leave no node; anything that is not exactly neutral stays."""

from __future__ import annotations

import io

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from optimize_helpers import Fn
from torchscript_onnx import export


class OnesWeight(torch.nn.Module):
    """A weight that holds ones (a freshly initialised norm's) is a parameter, not a constant."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(4))

    def forward(self, x):
        return torch.relu(x * self.weight)


def _sdpa_unscaled(x):
    return torch.nn.functional.scaled_dot_product_attention(x, x, x, scale=1.0)


# (name, module, input, dynamic dims, {op type: count expected in our file})
CASES = [
    ("mul_one", Fn(lambda x: torch.relu(x * 1.0)), torch.randn(2, 3, 4), (0,), {"Mul": 0}),
    ("one_mul", Fn(lambda x: torch.relu(1.0 * x)), torch.randn(2, 3, 4), (0,), {"Mul": 0}),
    ("div_one", Fn(lambda x: torch.relu(x / 1)), torch.randn(2, 3, 4), (0,), {"Div": 0}),
    ("mul_one_keepdim", Fn(lambda x: torch.relu(x * torch.ones(1, 1, 1))), torch.randn(2, 3, 4), (0,), {"Mul": 0}),
    ("int_add_zero", Fn(lambda x: (x + 0) * 3), torch.arange(12).reshape(3, 4), (0,), {"Add": 0}),
    ("int_sub_zero", Fn(lambda x: (x - 0) * 3), torch.arange(12).reshape(3, 4), (0,), {"Sub": 0}),
    ("sdpa_scale_one", Fn(_sdpa_unscaled), torch.randn(1, 2, 5, 8), (2,), {"Mul": 0}),
    # not neutral, or not exact: kept
    ("mul_two", Fn(lambda x: torch.relu(x * 2.0)), torch.randn(2, 3, 4), (0,), {"Mul": 1}),
    ("one_div", Fn(lambda x: torch.relu(1.0 / x)), torch.randn(2, 3, 4), (0,), {"Reciprocal": 1}),
    # -0.0 + 0.0 is +0.0: a float sum with zero is not the identity
    ("float_add_zero", Fn(lambda x: torch.relu(x + 0.0)), torch.randn(2, 3, 4), (0,), {"Add": 1}),
    # ones of a higher rank broadcast the input to a larger shape
    ("mul_ones_broadcast", Fn(lambda x: torch.relu(x * torch.ones(1, 1, 1))), torch.randn(3, 4), (0,), {"Mul": 1}),
    # int * 1.0 is float: the Cast that makes the float stays, the product goes
    ("int_mul_float_one", Fn(lambda x: x * 1.0 + 0.5), torch.arange(12).reshape(3, 4), (0,), {"Cast": 1, "Mul": 0}),
    ("weight_of_ones", OnesWeight(), torch.randn(2, 4), (0,), {"Mul": 1}),
    # a graph output keeps its node (and its name)
    ("graph_output", Fn(lambda x: x * 1.0), torch.randn(2, 3), (0,), {"Mul": 1}),
]


@pytest.mark.parametrize("name,module,x,dynamic,expected", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("opset", [9, 17])
def test_noop_arithmetic(name, module, x, dynamic, expected, opset):
    axes = {d: f"d{d}" for d in dynamic}
    f = io.BytesIO()
    export(module.eval(), (x,), f, opset_version=opset, input_names=["x"],
           dynamic_axes={"x": axes} if axes else None)
    ops = [n.op_type for n in onnx.load_from_string(f.getvalue()).graph.node]
    for op, count in expected.items():
        assert ops.count(op) == count, ops
    session = ort.InferenceSession(f.getvalue(), providers=["CPUExecutionProvider"])
    other = x.clone()
    for d in dynamic:
        other = torch.cat([other, other.narrow(d, 0, 1)], d)
    for inp in (x, other):
        with torch.no_grad():
            want = module(inp).numpy()
        got = session.run(None, {"x": inp.numpy()})[0]
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
