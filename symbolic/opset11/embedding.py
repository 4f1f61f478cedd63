"""Embeddings at opset 11: embedding_renorm_ writes the renormalized rows back with ScatterND over
the unique indices, instead of opset 9's (vocabulary x indices) membership mask."""

from __future__ import annotations

import torch

from .. import onnx_ops
from .. import symbolic_helper as sh
from ..opset9.embedding import only_lookups, renormed_rows
from ..registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(11)

__all__ = ["embedding_renorm"]


@_onnx_symbolic("aten::embedding_renorm")
@sh.parse_args("v", "v", "f", "f")
def embedding_renorm(g, self, indices, max_norm, norm_type):
    """embedding_renorm_(Tensor(a!) self, Tensor indices, float max_norm, float norm_type) -> Tensor(a!)"""
    if g.original_node is not None and only_lookups(g.original_node):
        return self  # the lookups renormalize the rows they gather (see opset9/embedding.py)
    flat = g.op("Reshape", onnx_ops.cast(g, indices, torch.int64), g.constant([-1], torch.int64))
    unique = g.op("Unique", flat)
    rows = renormed_rows(g, g.op("Gather", self, unique, axis_i=0), max_norm, norm_type)
    return g.op("ScatterND", self, onnx_ops.unsqueeze(g, unique, [1]), rows)
