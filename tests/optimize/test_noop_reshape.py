"""RemoveNoopReshape: a Reshape to the shape its input already has is dropped, only when provable."""

from __future__ import annotations

import io

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from optimize_helpers import Fn
from torchscript_onnx import export

# (name, function, input shape, dynamic dims of the input, Reshape nodes expected left)
CASES = [
    ("same_shape_with_minus_one", lambda x: x.reshape(2, -1, 4) + 1, (2, 3, 4), (), 0),
    ("same_shape_spelled_out", lambda x: x.view(2, 3, 4) + 1, (2, 3, 4), (), 0),
    ("real_reshape", lambda x: x.reshape(3, 2, 4) + 1, (2, 3, 4), (), 1),
    ("two_minus_ones_merge", lambda x: x.reshape(2, -1) + 1, (2, 3, 4), (), 1),
    # the target is computed at runtime from the dynamic batch: not provably a no-op
    ("dynamic_batch", lambda x: x.reshape(x.size(0), -1, 4) + 1, (2, 3, 4), (0,), 1),
]


@pytest.mark.parametrize("name,fn,shape,dynamic,reshapes", CASES, ids=[c[0] for c in CASES])
def test_noop_reshape(name, fn, shape, dynamic, reshapes):
    f = io.BytesIO()
    axes = {d: f"d{d}" for d in dynamic}
    export(Fn(fn), (torch.randn(shape),), f, opset_version=17, input_names=["x"],
           dynamic_axes={"x": axes} if axes else None)
    ops = [n.op_type for n in onnx.load_from_string(f.getvalue()).graph.node]
    assert ops.count("Reshape") == reshapes, ops
    session = ort.InferenceSession(f.getvalue(), providers=["CPUExecutionProvider"])
    sizes = [shape] + ([tuple(n + 2 if d in dynamic else n for d, n in enumerate(shape))] if dynamic else [])
    for size in sizes:
        x = torch.randn(size)
        np.testing.assert_allclose(session.run(None, {"x": x.numpy()})[0], fn(x).numpy(), rtol=1e-6)
