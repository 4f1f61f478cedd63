"""Fold ``Transpose`` of a weight into a transposed weight (eval exports with constant folding).

``nn.Linear`` on an input of rank > 2 lowers to ``MatMul(x, Transpose(W))``; weights small enough
are folded while the graph is built, larger ones (``folding.MAX_FOLDED_ELEMENTS``) would need a
copy and are left as a node per layer (72 in BERT-base). Here each becomes an initializer holding
``W`` transposed, as the legacy exporter and dynamo write it: a ``LazyTensor`` computed a row block
at a time while it is written, so no copy of the weights exists during export.

Folded only when every reader of the weight is a Transpose with the same ``perm`` (a weight
also read as it is, such as a tied embedding, would otherwise be written twice), the weight is
not a graph output or read by an If/Loop body, and the Transpose output is not a graph output.
"""

from __future__ import annotations

import torch

from ...builder.ir import Graph, Node
from ...builder.lazy import LazyTensor
from .subgraphs import subgraph_references


# Bytes of a transposed weight computed at once (see ``transposed_rows``): a 64th of the weight
# (``_BLOCKS``), so that the two blocks alive at once (a column block of ``W`` and its transpose)
# stay a few percent of it, between 128 KiB and 1 MiB. Blocks of 1 MiB stay in the CPU's cache: 4
# MiB ones ran at 0.4-1.0x the speed. A block of rows of ``W.T`` is a block of columns of ``W``,
# read as a short run from each of its rows: at least a cache line (``_RUN_BYTES``) from each, else
# the reads waste most of every line they fetch (TinyLlama's 32000 x 2048 output projection: 1.4
# GB/s in 1 MiB blocks, 2.1 in 2 MiB).
_MIN_BLOCK_BYTES, _MAX_BLOCK_BYTES = 1 << 17, 1 << 20
_BLOCKS = 64
_RUN_BYTES = 64


def transpose_chunk_bytes(tensor) -> int:
    """The block size for writing ``tensor`` transposed."""
    rows = tensor.shape[0] if len(tensor.shape) else 1
    share = tensor.numel() * tensor.element_size() // _BLOCKS
    return max(min(max(share, _MIN_BLOCK_BYTES), _MAX_BLOCK_BYTES), rows * _RUN_BYTES)


def transposed_rows(sources, start: int, stop: int, perm: tuple) -> torch.Tensor:
    """Rows [start, stop) of ``weight.permute(perm)``.

    A matrix's rows [start, stop) of ``W.T`` are its columns: copied out first as one block
    (each source row gives one contiguous run), so that the transpose is of a whole contiguous
    matrix, which torch copies tile by tile instead of element by element across the source."""
    (weight,) = sources
    if perm == (1, 0) and weight.is_contiguous():
        return weight[:, start:stop].contiguous().t()
    return weight.permute(perm)[start:stop]


def _perm(node: Node, rank: int) -> tuple:
    perm = node.attr("perm")
    return tuple(perm) if perm else tuple(reversed(range(rank)))


class FoldWeightTranspose:
    def run(self, graph: Graph) -> bool:
        readers = graph.consumers()
        pinned = {id(v) for v in graph.outputs}
        inner = subgraph_references(graph)
        folded: dict[int, object] = {}  # id(weight value) -> its transposed initializer value
        replace: dict[int, object] = {}
        for node in graph.nodes:
            if node.op_type != "Transpose" or node.domain or len(node.outputs) != 1:
                continue
            weight, out = node.inputs[0], node.outputs[0]
            if weight is None or not weight.is_param or weight.name not in graph.initializers:
                continue
            if id(weight) in pinned or weight.name in inner or id(out) in pinned or out.name in inner:
                continue
            tensor = graph.initializers[weight.name]
            if len(tensor.shape) < 2 or not (tensor.dtype.is_floating_point or tensor.dtype.is_complex):
                continue
            perm = _perm(node, len(tensor.shape))
            users = readers.get(id(weight), [])
            if not all(u.op_type == "Transpose" and not u.domain and _perm(u, len(tensor.shape)) == perm
                       for u in users):
                continue
            if id(weight) not in folded:
                shape = [tensor.shape[p] for p in perm]
                lazy = LazyTensor(shape, tensor.dtype, transposed_rows, (tensor,), (perm,),
                                  chunk_bytes=transpose_chunk_bytes(tensor))
                reader = readers.get(id(out), [None])[0]
                name = f"onnx::{reader.op_type if reader is not None else 'Transpose'}"
                folded[id(weight)] = transposed = graph.add_initializer(name, lazy, const=False)
                # legacy's constant folding computes it too: legacy_names.py names it after that
                transposed.from_weight, transposed.legacy_fold = True, out.legacy_fold
            replace[id(out)] = folded[id(weight)]
        if not replace:
            return False
        for node in graph.nodes:
            node.inputs = [replace.get(id(v), v) if v is not None else None for v in node.inputs]
        graph.nodes = [n for n in graph.nodes if not (n.outputs and id(n.outputs[0]) in replace)]
        return True
