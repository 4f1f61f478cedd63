"""Initializer deduplication: initializers holding the same data share one name.

Cheap first, exact last, and no weight is ever copied:
1. the same memory (dtype, shape, strides and data pointer), or lazy tensors with the same recipe
   (``LazyTensor.key``): the same values without reading them;
2. by value (``by_value``): only among real tensors of equal dtype and shape, bucketed by a hash of
   a few kilobytes sampled from the start, middle and end of their bytes, then confirmed by an
   exact comparison of all bytes, a megabyte at a time. Lazy tensors are never computed here.

By-value sharing is for inference exports only: in training, two parameters that happen to hold
the same values (two zero biases) are still two parameters. A duplicate's data goes away but its
name stays, as in the legacy exporter: it becomes the output of an ``Identity`` of the first
initializer (in ``Graph.initializers`` order), placed at the start of the graph, so every
state_dict name is still a value of the graph (readers, graph outputs and subgraphs that read it
by name are unchanged). Runs before CSE, which never merges Identity nodes, so that readers of
two copies of one constant become one node.

Except a constant's initializer (``MADE_CONSTANT_NAME``: ``GraphContext.materialize`` names a folded
value too large for a Constant node ``onnx::Constant_<n>``): no state_dict key, and the legacy
exporter has a Constant node there, so no one can know the name; its readers read the kept
initializer directly, unless the name is a graph output or read inside a subgraph.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np
import torch

from ...builder.ir import UNKNOWN, Graph, Value
from ...builder.lazy import LazyTensor
from ...builder.dtypes import tensor_bytes
from .subgraphs import subgraph_references

SAMPLE_BYTES = 4096
COMPARE_CHUNK_BYTES = 1 << 20
# The names context.GraphContext.materialize gives constants it writes as initializers.
MADE_CONSTANT_NAME = re.compile(r"onnx::Constant(_[0-9]+)?")


def _identity_key(tensor) -> tuple:
    if isinstance(tensor, LazyTensor):
        return ("lazy", tensor.key)
    if tensor.numel() == 0:  # empty tensors of one dtype and shape are all equal
        return ("empty", tensor.dtype, tuple(tensor.shape))
    return ("memory", tensor.dtype, tuple(tensor.shape), tuple(tensor.stride()), tensor.is_quantized,
            tensor.data_ptr(), tensor.device.type)


def _sample_digest(raw: memoryview) -> bytes:
    digest = hashlib.blake2b(digest_size=16)
    n = raw.nbytes
    if n <= 3 * SAMPLE_BYTES:
        digest.update(raw)
    else:
        middle = n // 2 - SAMPLE_BYTES // 2
        digest.update(raw[:SAMPLE_BYTES])
        digest.update(raw[middle:middle + SAMPLE_BYTES])
        digest.update(raw[n - SAMPLE_BYTES:])
    return digest.digest()


def _same_bytes(a: memoryview, b: memoryview) -> bool:
    if a.nbytes != b.nbytes:
        return False
    for start in range(0, a.nbytes, COMPARE_CHUNK_BYTES):
        stop = start + COMPARE_CHUNK_BYTES
        if not np.array_equal(np.frombuffer(a[start:stop], np.uint8), np.frombuffer(b[start:stop], np.uint8)):
            return False
    return True


def _by_value_candidate(tensor) -> bool:
    # Contiguous CPU tensors only: their bytes are read in place, never copied.
    return (isinstance(tensor, torch.Tensor) and not tensor.is_quantized and tensor.numel() > 0
            and tensor.device.type == "cpu" and tensor.is_contiguous())


class DeduplicateInitializers:
    def __init__(self, by_value: bool = True):
        self.by_value = by_value

    def run(self, graph: Graph) -> bool:
        values: dict[str, Value] = {}  # initializer name -> the value nodes read
        for node in graph.nodes:
            for v in node.inputs:
                if v is not None and v.is_param and v.name in graph.initializers:
                    values.setdefault(v.name, v)
        canonical: dict[str, str] = {}  # duplicate name -> the initializer holding its data
        firsts: dict[tuple, str] = {}
        buckets: dict[tuple, list[tuple[str, memoryview]]] = {}
        for name in values:
            tensor = graph.initializers[name]
            first = firsts.setdefault(_identity_key(tensor), name)
            if first != name:
                canonical[name] = first
                continue
            if not self.by_value or not _by_value_candidate(tensor):
                continue
            raw = tensor_bytes(tensor)
            bucket = buckets.setdefault((tensor.dtype, tuple(tensor.shape), _sample_digest(raw)), [])
            match = next((other for other, other_raw in bucket if _same_bytes(raw, other_raw)), None)
            if match is None:
                bucket.append((name, raw))
            else:
                canonical[name] = match
        if not canonical:
            return False
        pinned = subgraph_references(graph) | {v.name for v in graph.outputs}
        merged = {name: values[source] for name, source in canonical.items()
                  if MADE_CONSTANT_NAME.fullmatch(name) and name not in pinned}
        for node in graph.nodes:  # every reader reads the one value that keeps the name
            node.inputs = [merged.get(v.name, values[v.name]) if v is not None and v.is_param and v.name in canonical
                           else v for v in node.inputs]
        for name in merged:
            del graph.initializers[name]
            del canonical[name]
        for name, source in canonical.items():
            value = values[name]
            del graph.initializers[name]
            node = graph.add_node("Identity", "", [values[source]], {}, 0)
            value.is_param, value.producer, value.const = False, node, UNKNOWN
            node.outputs.append(value)
            graph.nodes.insert(0, graph.nodes.pop())  # legacy puts each in front of the graph
        return True
