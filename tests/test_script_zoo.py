"""Zoo models scripted instead of traced (what a torch.jit.save archive of them holds): each exports,
matches eager PyTorch in onnxruntime, and gives the traced export's graph, node for node and name for
name, or a smaller one."""

from __future__ import annotations

import collections
import io

import onnx
import pytest
import torch

from tests.test_models import ATOL, NOISE_FACTOR, RTOL, build
from torchscript_onnx import export
from torchscript_onnx.verify import verify

# (model, opset): the small ones at both opsets, the larger ones (float64 reference runs of tens of
# seconds) at 17 only
SCRIPTED = [(name, opset) for name in ("resnet18", "squeezenet1_1", "dcgan_generator", "mnist") for opset in (11, 17)] \
    + [(name, 17) for name in ("mobilenet_v2", "densenet121", "inception_v3")]


def _nodes(model, args, opset: int) -> list[onnx.NodeProto]:
    buffer = io.BytesIO()
    export(model, args, buffer, opset_version=opset)
    return list(onnx.load_from_string(buffer.getvalue()).graph.node)


@pytest.mark.parametrize("name, opset", SCRIPTED)
def test_scripted_zoo_model(name, opset):
    model, args, noise = build(name)  # the zoo model in eval mode and its own float32 rounding error
    scripted = torch.jit.script(model)
    verify(scripted, args, opset_version=opset, rtol=RTOL, atol=max(ATOL, NOISE_FACTOR * noise))  # as test_models
    traced, from_script = _nodes(model, args, opset), _nodes(scripted, args, opset)
    traced_ops = collections.Counter(n.op_type for n in traced)
    scripted_ops = collections.Counter(n.op_type for n in from_script)
    assert not scripted_ops - traced_ops, f"scripted export has more nodes: {dict(scripted_ops - traced_ops)}"
    if scripted_ops == traced_ops:  # the same graph: node names follow the same module scopes
        assert [n.name for n in from_script] == [n.name for n in traced]
