"""Graphs onnxruntime runs fast: after its own graph optimisations (the session default,
ORT_ENABLE_ALL) our exported patterns become onnxruntime's fused kernels, and still match eager
PyTorch, also at sizes other than the traced ones.

onnxruntime fuses only the exact forms its optimizer matches (e.g. ``Pow(x, 2)`` not ``x * x``
before a mean, ``Div(1, Sqrt)`` not ``Reciprocal(Sqrt)`` in an RMS norm); a lowering that drifts
from those forms is slower without being wrong, which only a test like this notices.
"""

from __future__ import annotations

import collections
import dataclasses
import io
import os
import tempfile
from collections.abc import Callable

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from torch import nn

from torchscript_onnx import export


class T5Norm(nn.Module):
    """The RMS norm of T5 and Llama written out (pow, mean, rsqrt, scale)."""

    def __init__(self, size: int):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(size) + 0.5)

    def forward(self, x):
        variance = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + 1e-6))


class Affine(nn.Module):
    """A norm module with non-trivial affine parameters."""

    def __init__(self, norm: nn.Module):
        super().__init__()
        self.norm = norm
        with torch.no_grad():
            for p in norm.parameters():
                p.copy_(torch.randn_like(p))

    def forward(self, x):
        return self.norm(x)


class Attention(nn.Module):
    def __init__(self, hidden: int = 32, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.qkv, self.out = nn.Linear(hidden, 3 * hidden), nn.Linear(hidden, hidden)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4)
        y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, s, h))


class Between(nn.Sequential):
    """An activation between two linear layers (onnxruntime fuses nothing that is a graph output)."""

    def __init__(self, activation: nn.Module, size: int = 16):
        super().__init__(nn.Linear(size, size), activation, nn.Linear(size, size))


@dataclasses.dataclass
class Fusion:
    name: str
    model: Callable[[], nn.Module]
    shape: tuple  # traced
    opsets: tuple
    fused: str  # an op of onnxruntime's optimised graph
    absent: tuple = ()  # ops that must not be left in it
    dynamic: tuple = (0, 1)  # dims exported dynamic and checked again at other sizes


FUSIONS = [
    Fusion("layer_norm_decomposed", lambda: Affine(nn.LayerNorm(16)), (2, 5, 16), (9, 13), "LayerNormalization",
           ("ReduceMean",)),
    Fusion("layer_norm", lambda: Affine(nn.LayerNorm(16)), (2, 5, 16), (17, 20), "LayerNormalization"),
    Fusion("rms_norm_written_out", lambda: T5Norm(16), (2, 5, 16), (9, 17, 20), "SimplifiedLayerNormalization",
           ("ReduceMean", "Reciprocal")),
    Fusion("rms_norm", lambda: Affine(nn.RMSNorm(16, eps=1e-6)), (2, 5, 16), (9, 17, 20),
           "SimplifiedLayerNormalization", ("ReduceMean",)),
    Fusion("group_norm", lambda: Affine(nn.GroupNorm(4, 8)), (2, 8, 6, 5), (9, 17, 20), "InstanceNormalization",
           ("ReduceMean",), dynamic=(0, 2, 3)),
    Fusion("gelu_erf", lambda: Between(nn.GELU()), (2, 5, 16), (9, 13, 20), "BiasGelu", ("Erf",)),
    Fusion("gelu_tanh", lambda: Between(nn.GELU("tanh")), (2, 5, 16), (9, 13), "FastGelu", ("Tanh",)),
    # a static 3-d input: onnxruntime folds the Add into a Gemm between two Reshapes
    Fusion("linear", lambda: nn.Linear(16, 8), (2, 5, 16), (9, 20), "Gemm", ("Add",), dynamic=()),
    Fusion("attention_scale", lambda: Attention(), (2, 5, 32), (13, 20), "FusedMatMul"),
]


def optimized_ops(model_bytes: bytes) -> collections.Counter:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "optimized.onnx")
        options = ort.SessionOptions()
        options.optimized_model_filepath = path
        options.log_severity_level = 3
        ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
        return collections.Counter(node.op_type for node in onnx.load(path).graph.node)


@pytest.mark.parametrize("fusion,opset", [(f, o) for f in FUSIONS for o in f.opsets],
                         ids=lambda v: getattr(v, "name", str(v)))
def test_onnxruntime_fuses(fusion, opset):
    torch.manual_seed(0)
    model = fusion.model().eval()
    axes = {d: f"d{d}" for d in fusion.dynamic}
    f = io.BytesIO()
    export(model, (torch.randn(fusion.shape),), f, opset_version=opset, input_names=["x"], output_names=["y"],
           dynamic_axes={"x": axes, "y": axes} if axes else None)
    ops = optimized_ops(f.getvalue())
    assert ops[fusion.fused] > 0, f"onnxruntime did not fuse to {fusion.fused}: {dict(ops)}"
    assert not [op for op in fusion.absent if ops[op]], f"left unfused: {dict(ops)}"
    session = ort.InferenceSession(f.getvalue(), providers=["CPUExecutionProvider"])
    other = tuple(n + 1 + d if d in fusion.dynamic else n for d, n in enumerate(fusion.shape))
    for shape in (fusion.shape, other):
        x = torch.randn(shape)
        with torch.no_grad():
            want = model(x).numpy()
        got = session.run(None, {"x": x.numpy()})[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
