"""Common-subexpression elimination: nodes with the same op, inputs and attributes become one.

Two nodes are the same when their domain, op type, inputs (the same values, in order), number of
outputs and attributes (kind and exact value: floats by bit pattern, tensors by dtype, shape and
bytes) are equal. Duplicate Constant nodes merge the same way. The later node goes; its readers read
the earlier node's outputs. Nodes never merged:

- random ops (``NONDETERMINISTIC_OPS``): two draws are two different tensors;
- ops of custom domains: their semantics are unknown (they may be random or stateful);
- nodes with subgraph attributes (If/Loop/Scan bodies);
- Identity nodes, which are left only where they keep a name;
- a node whose output is a graph output or is read by name inside a subgraph (the name must stay).
"""

from __future__ import annotations

import hashlib
import struct

import torch

from ...builder.ir import Graph, Node
from ...builder.dtypes import tensor_bytes
from .subgraphs import bodies, has_subgraph, subgraph_references

# Ops whose every run draws new values. Dropout is random in training (opsets >= 12 choose the mode
# with an input that may be computed at runtime), so it is never merged.
NONDETERMINISTIC_OPS: frozenset[str] = frozenset({
    "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
    "Bernoulli", "Multinomial", "Dropout",
})


def _tensor_key(tensor: torch.Tensor) -> tuple:
    raw = tensor_bytes(tensor)
    data = bytes(raw) if raw.nbytes <= 256 else hashlib.sha256(raw).digest()
    return ("tensor", tensor.dtype, tuple(tensor.shape), data)


def _float_key(value: float) -> bytes:
    # -0.0 and 0.0 differ; NaN payloads compare by bits, so equal NaN attributes merge too.
    return struct.pack("<d", value)


def _attr_key(kind: str, value):
    if kind == "f":
        return _float_key(value)
    if kind == "fs":
        return tuple(_float_key(v) for v in value)
    if kind == "t":
        return _tensor_key(value)
    if kind == "ts":
        return tuple(_tensor_key(v) for v in value)
    if kind in ("is", "ss"):
        return tuple(value)
    return value


def node_key(node: Node) -> tuple:
    """What makes two nodes compute the same values (inputs by identity)."""
    attrs = tuple(sorted((name, kind, _attr_key(kind, value)) for name, (kind, value) in node.attrs.items()))
    inputs = tuple(None if v is None else id(v) for v in node.inputs)
    return node.domain, node.op_type, inputs, len(node.outputs), attrs


def _exact_same_attrs(a: Node, b: Node) -> bool:
    """Confirm a key match that went through a hash (large tensor attributes)."""
    for name, (kind, value) in a.attrs.items():
        other = b.attrs[name][1]
        tensors = [(value, other)] if kind == "t" else list(zip(value, other)) if kind == "ts" else []
        for x, y in tensors:
            if tensor_bytes(x).tobytes() != tensor_bytes(y).tobytes():
                return False
    return True


def mergeable(node: Node) -> bool:
    # An Identity that survives RemoveIdentity is there to keep a name (a graph output, or a
    # deduplicated initializer's state_dict name): merging two would lose one.
    return (not node.domain and node.op_type not in NONDETERMINISTIC_OPS and node.op_type != "Identity"
            and not has_subgraph(node))


class CommonSubexpressions:
    def run(self, graph: Graph) -> bool:
        changed = False
        for body in bodies(graph):  # each body on its own: a body node never merges with an outer one
            changed |= self.run(body)
        return self.run_one(graph) or changed

    def run_one(self, graph: Graph) -> bool:
        pinned = {id(v) for v in graph.outputs}
        inner = subgraph_references(graph)
        seen: dict[tuple, Node] = {}
        replace: dict[int, object] = {}
        kept: list[Node] = []
        for node in graph.nodes:
            node.inputs = [replace.get(id(v), v) if v is not None else None for v in node.inputs]
            if not mergeable(node) or not node.outputs:
                kept.append(node)
                continue
            key = node_key(node)
            first = seen.get(key)
            removable = not any(id(v) in pinned or v.name in inner for v in node.outputs)
            if first is None or not removable or not _exact_same_attrs(first, node):
                seen.setdefault(key, node)
                kept.append(node)
                continue
            for old, new in zip(node.outputs, first.outputs):
                replace[id(old)] = new
        changed = len(kept) != len(graph.nodes)
        graph.nodes = kept
        return changed
