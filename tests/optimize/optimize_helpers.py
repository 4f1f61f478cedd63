"""Build small graphs by hand (or wrap a function as a module to export), run them in onnxruntime,
compare before and after a pass."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import torch

from torchscript_onnx.pipeline import serialize
from torchscript_onnx.builder.context import GraphContext
from torchscript_onnx.builder.ir import Graph
from torchscript_onnx.builder.options import ExportOptions

OPSET = 17


def context(opset: int = OPSET) -> GraphContext:
    return GraphContext(Graph(), opset, ExportOptions(opset_version=opset))


def model_bytes(graph: Graph, opset: int = OPSET) -> bytes:
    model = serialize.model_proto_without_weights(graph, opset, {}, False, "test")
    data = serialize.to_bytes(model, graph)
    onnx.checker.check_model(onnx.load_from_string(data), full_check=True)
    return data


def run(graph: Graph, feeds: dict[str, np.ndarray], opset: int = OPSET) -> list[np.ndarray]:
    session = ort.InferenceSession(model_bytes(graph, opset), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def op_types(graph: Graph) -> list[str]:
    return [node.op_type for node in graph.nodes]


class Fn(torch.nn.Module):
    """A module whose forward is ``fn``: export a lambda as a model."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)
