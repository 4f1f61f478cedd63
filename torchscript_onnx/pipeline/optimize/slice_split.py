"""Slices that cut one tensor into consecutive pieces along one axis become one Split.

Rotary embeddings' ``rotate_half`` (``x[..., :d // 2]`` and ``x[..., d // 2:]``, twice per attention
layer in Llama, Mistral, Qwen, ...) and other "chunk by hand" code slice the same input into pieces
that together cover the axis exactly; one Split gives the same tensors with one node instead of
one per piece, and without the starts/ends/axes Constant nodes (none at all from opset 18 when the
pieces are equal: ``num_outputs``). The Split's outputs are the Slices' output values, so every
name stays and readers, graph outputs and If/Loop bodies that read them by name are unchanged.

Decided from constants and static sizes only: each Slice has constant starts and ends on one axis,
step 1, the axis's size is static, and the pieces, sorted, start at 0, end at that size and neither
overlap nor leave a gap. Slices on a dynamic axis, with steps, or that leave part of the axis out
stay Slices.
"""

from __future__ import annotations

import torch

from ...builder.ir import Graph, Node, Value
from ...builder.shapes import slice_range

# Split's sizes move from an attribute to an input at 13; 18 adds num_outputs (equal pieces).
SPLIT_INPUT_OPSET = 13
NUM_OUTPUTS_OPSET = 18


def _ints(value: Value | None) -> list[int] | None:
    if value is None or not value.is_const or value.const is None:
        return None
    const = value.const
    if isinstance(const, torch.Tensor):
        return None if const.dim() > 1 or const.is_floating_point() else [int(v) for v in const.reshape(-1).tolist()]
    if isinstance(const, (list, tuple)):
        return [int(v) for v in const]
    return None


def _piece(node: Node) -> tuple[int, range] | None:
    """(axis, the positions taken along it) of a single-axis, step-1 Slice of a static axis."""
    if node.op_type != "Slice" or node.domain or len(node.outputs) != 1 or node.inputs[0] is None:
        return None
    if "starts" in node.attrs:  # Slice-1: starts, ends and axes are attributes
        starts, ends, axes, steps = node.attr("starts"), node.attr("ends"), node.attr("axes"), None
    else:
        inputs = node.inputs + [None] * (5 - len(node.inputs))
        starts, ends, axes, steps = (_ints(v) for v in inputs[1:5])
        if starts is None or ends is None or (inputs[3] is not None and axes is None) \
                or (inputs[4] is not None and steps is None):
            return None
    shape = node.inputs[0].shape
    if starts is None or ends is None or len(starts) != 1 or len(ends) != 1 or shape is None:
        return None
    axis = axes[0] if axes else 0
    axis = axis + len(shape) if axis < 0 else axis
    if (steps and steps != [1]) or not 0 <= axis < len(shape) or not isinstance(shape[axis], int):
        return None
    taken = slice_range(starts[0], ends[0], 1, shape[axis])
    return (axis, taken) if len(taken) else None


def _tiles(ranges: list[range], size: int) -> bool:
    end = 0
    for taken in ranges:
        if taken.start != end:
            return False
        end = taken.stop
    return end == size


class SlicesToSplit:
    def __init__(self, opset: int):
        self.opset = opset

    def run(self, graph: Graph) -> bool:
        groups: dict[tuple[int, int], list[tuple[range, Node]]] = {}
        for node in graph.nodes:
            piece = _piece(node)
            if piece is not None:
                groups.setdefault((id(node.inputs[0]), piece[0]), []).append((piece[1], node))
        position = {id(node): k for k, node in enumerate(graph.nodes)}
        emitted: dict[int, list[Node]] = {}  # id of the first Slice of a group -> the nodes replacing the group
        replaced: set[int] = set()
        for (_, axis), pieces in groups.items():
            pieces.sort(key=lambda p: p[0].start)
            ranges = [taken for taken, _ in pieces]
            if len(pieces) < 2 or not _tiles(ranges, pieces[0][1].inputs[0].shape[axis]):
                continue
            first = min((node for _, node in pieces), key=lambda node: position[id(node)])
            emitted[id(first)] = self._split(graph, first, axis, pieces)
            replaced.update(id(node) for _, node in pieces)
        if not emitted:
            return False
        kept = []
        for node in graph.nodes:
            if id(node) in emitted:
                kept.extend(emitted[id(node)])
            elif id(node) not in replaced:
                kept.append(node)
        graph.nodes = kept
        return True

    def _split(self, graph: Graph, first: Node, axis: int, pieces: list[tuple[range, Node]]) -> list[Node]:
        """The Split (after its sizes' Constant node below opset 18) replacing the group, in place of
        its first Slice; the group's inputs are all defined before that one."""
        sizes = [len(taken) for taken, _ in pieces]
        attrs: dict = {"axis": ("i", axis)}
        inputs = [first.inputs[0]]
        emitted = []
        if self.opset >= NUM_OUTPUTS_OPSET and len(set(sizes)) == 1:
            attrs["num_outputs"] = ("i", len(sizes))
        elif self.opset >= SPLIT_INPUT_OPSET:
            tensor = torch.tensor(sizes, dtype=torch.int64)
            constant = graph.add_node("Constant", "", [], {"value": ("t", tensor)}, 1, first.scope, first.source,
                                      first.origin)
            graph.nodes.pop()  # placed by run(), before the Split
            split_sizes = constant.outputs[0]
            split_sizes.dtype, split_sizes.shape, split_sizes.const = tensor.dtype, tuple(tensor.shape), tensor
            inputs.append(split_sizes)
            emitted.append(constant)
        else:
            attrs["split"] = ("is", sizes)
        split = Node("Split", "", inputs, attrs, graph.node_names.fresh(f"{first.scope}/Split"), first.scope,
                     first.source, first.origin)
        for _, node in pieces:
            out = node.outputs[0]
            out.producer = split
            split.outputs.append(out)
        emitted.append(split)
        return emitted
