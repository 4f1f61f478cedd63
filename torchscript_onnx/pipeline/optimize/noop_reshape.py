"""Remove Reshape nodes that provably give their input's shape back.

Models reshape to the shape a tensor already has (transformers' attention reshapes the
``(B, H, L, D)`` output of ``scaled_dot_product_attention`` to ``(B, -1, L, D)`` before moving the
heads); the node stays in onnxruntime's optimised graph. A Reshape is a no-op when its target is
a known constant of the input's rank whose every entry is the input's static size there, a 0
(copy the dim, without ``allowzero``), or one -1 (then it is the one dim left, which must equal the
input's). Decided from the constant target and the input's static sizes only, so a dim that is
dynamic at runtime can never make the rewrite wrong.

The output is kept when it is a graph output or read by an If/Loop body (by name).
"""

from __future__ import annotations

import torch

from ...builder.ir import Graph, Node
from .bypass import bypass


def _target(graph: Graph, node: Node):
    shape = node.inputs[1] if len(node.inputs) > 1 else None
    if shape is None or not shape.is_const or shape.const is None:
        return None
    value = shape.const
    if isinstance(value, torch.Tensor):
        return value.reshape(-1).tolist() if value.dim() == 1 else None
    return list(value) if isinstance(value, (list, tuple)) else None


def is_noop(graph: Graph, node: Node) -> bool:
    if node.op_type != "Reshape" or node.domain or len(node.outputs) != 1:
        return False
    source = node.inputs[0]
    dims = source.shape if source is not None else None
    target = _target(graph, node)
    if dims is None or target is None or len(target) != len(dims):
        return False
    allowzero = node.attr("allowzero", 0)
    inferred = 0
    for dim, want in zip(dims, target):
        if want == -1:
            inferred += 1
        elif want == 0 and not allowzero:
            continue
        elif not (isinstance(dim, int) and dim == want):
            return False
    return inferred <= 1


class RemoveNoopReshape:
    def run(self, graph: Graph) -> bool:
        return bypass(graph, lambda g, node: node.inputs[0] if is_noop(g, node) else None)
