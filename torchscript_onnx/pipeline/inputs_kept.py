"""Which user inputs stay graph inputs.

Callers feed an exported model by position or by the input names legacy gives, so the set of
graph inputs is part of the drop-in contract. Legacy drops an input only when nothing in its final
graph reads it. Our lowerings fold more (a static Shape, a list length, a check that can only
raise), so an input we no longer read may be one legacy still reads at runtime; such inputs stay
declared (unused by the graph, fed and ignored) exactly where legacy keeps them.

``legacy_reads`` is asked of the captured TorchScript graph before preparation rewrites it, and
names the inputs legacy reads at runtime; ``drop_unused_inputs`` drops the others nothing reads.
"""

from __future__ import annotations

import dataclasses

import torch

from ..builder.ir import Graph
from .optimize.subgraphs import subgraph_references

# (op, input position) pairs that legacy always reads at runtime, with the ONNX op that reads it
# there (which names an input the tracer left unnamed: onnx::Shape_0): the Shape of the input (it
# does not fold it there) or a *_like random op.
RUNTIME_READS = {
    ("aten::view_as", 1): "Shape", ("aten::reshape_as", 1): "Shape", ("aten::expand_as", 1): "Shape",
    ("aten::copy_", 0): "Shape",
    ("aten::rand_like", 0): "RandomUniformLike", ("aten::randn_like", 0): "RandomNormalLike",
    ("aten::randint_like", 0): "RandomUniformLike",
}

# Below opset 11 legacy builds a range from a runtime Shape it cannot fold (no Range op).
RUNTIME_READS_BEFORE_11 = {("aten::_dim_arange", 0): "Shape"}

# Ops that build a tensor shaped like their first input: legacy folds that Shape away only when the
# rest is constant too (a runtime fill value keeps the input) and the input is not 0-d.
SHAPED_LIKE_INPUT = frozenset({"aten::full_like", "aten::fill_", "aten::fill", "aten::zeros_like",
                               "aten::ones_like", "aten::empty_like"})

# Ops that hand their input on unchanged: what reads their output reads the input.
PASS_THROUGH = frozenset({"aten::clone", "aten::detach", "aten::contiguous"})

# Ops whose result depends on the input's metadata only (legacy folds these for static shapes).
METADATA_ONLY = frozenset({"aten::size", "aten::dim", "prim::shape", "aten::numel", "prim::dtype",
                           "prim::device", "prim::layout", "aten::len"})


# From this opset legacy declares a scripted ``Optional[Tensor]`` input as an ONNX optional.
OPTIONAL_INPUTS_OPSET = 15


@dataclasses.dataclass(frozen=True)
class LegacyRead:
    """How legacy's graph reads a user input that ours may not: the ONNX op reading it, and
    whether legacy declares the input optional (callers may then leave it out)."""

    reader: str
    optional: bool = False


def legacy_reads(graph: torch._C.Graph, user_inputs: list[torch._C.Value], opset: int) -> dict[int, LegacyRead]:
    """The user inputs of the captured ``graph`` that legacy's graph reads at runtime whatever we
    fold, by position. Calls of scripted functions are looked into (on an inlined copy)."""
    if any(node.kind() == "prim::CallFunction" for node in graph.nodes()):
        position = {value.unique(): k for k, value in enumerate(graph.inputs())}
        graph = graph.copy()
        torch._C._jit_pass_inline(graph)
        inputs = list(graph.inputs())
        user_inputs = [inputs[position[value.unique()]] for value in user_inputs]
    # Without a Loop or an If at the top (where any nested one sits), no input reaches runtime
    # control flow: one look at the nodes instead of a walk of the graph from every input.
    control_flow = any(node.kind() in ("prim::Loop", "prim::If") for node in graph.nodes())
    reads = {}
    for k, value in enumerate(user_inputs):
        read = _read_by_legacy(value, opset, control_flow)
        if read is not None:
            reads[k] = read
    return reads


def drop_unused_inputs(graph: Graph, n_user_inputs: int, kept_for_legacy: dict[int, LegacyRead]) -> list[int]:
    """Drop graph inputs nothing reads, as the legacy exporter does: user inputs used only in
    Python control flow or for a static size, and (with ``export_params=False``) unused weights.
    User inputs in ``kept_for_legacy`` stay; an unread one is named after legacy's reader when the
    tracer left it a number, and declared optional where legacy does, so callers that leave it out
    (as legacy lets them) still run. Returns the positions of the user inputs that stay."""
    used_ids = set(graph.consumers()) | {id(v) for v in graph.outputs}
    used_names = subgraph_references(graph)

    def used(value) -> bool:
        return id(value) in used_ids or value.name in used_names

    kept = [k for k, value in enumerate(graph.inputs[:n_user_inputs]) if used(value) or k in kept_for_legacy]
    for k in kept:
        value, read = graph.inputs[k], kept_for_legacy.get(k)
        if read is None or used(value):
            continue
        value.optional = read.optional
        if value.name.isdigit():
            graph.rename(value, f"onnx::{read.reader}_{k}")
    graph.inputs = [graph.inputs[k] for k in kept] + [v for v in graph.inputs[n_user_inputs:] if used(v)]
    return kept


def _is_optional(value: torch._C.Value, opset: int) -> bool:
    return opset >= OPTIONAL_INPUTS_OPSET and isinstance(value.type(), torch._C.OptionalType)


def _read_by_legacy(value: torch._C.Value, opset: int, control_flow: bool) -> LegacyRead | None:
    if _is_optional(value, opset):
        return LegacyRead("OptionalHasElement", optional=True)  # legacy tests it at runtime
    for use in value.uses():
        reader = _use_read_by_legacy(use, opset)
        if reader is not None:
            return LegacyRead(reader)
    if _is_empty(value) and any(use.user.kind() not in METADATA_ONLY and use.user.owningBlock().owningNode() is None
                                for use in value.uses()):
        # what is computed from an empty tensor is empty, known at export time: we fold it, legacy
        # computes it at runtime from the input (in a branch, legacy may fold the If on its size)
        return LegacyRead("Shape")
    if not control_flow or not _reaches_runtime_control_flow(value):
        return None
    first_reader = value.uses()[0].user.kind()
    return LegacyRead("SequenceConstruct" if first_reader == "prim::ListConstruct" else "If")


def _is_empty(value: torch._C.Value) -> bool:
    jit_type = value.type()
    sizes = jit_type.sizes() if isinstance(jit_type, torch._C.TensorType) and jit_type.dim() is not None else None
    return bool(sizes) and 0 in sizes


def _use_read_by_legacy(use, opset: int) -> str | None:
    """The ONNX op by which legacy reads the input of this use at runtime, or None."""
    kind, node = use.user.kind(), use.user
    reader = RUNTIME_READS.get((kind, use.offset)) or (RUNTIME_READS_BEFORE_11.get((kind, use.offset))
                                                       if opset < 11 else None)
    if reader is not None:
        return reader
    if kind == "aten::unbind" and use.offset == 0:
        # a scripted list of the pieces (not unpacked at once) stays a runtime sequence in legacy
        pieces = node.outputsAt(0).uses()
        return "SplitToSequence" if any(u.user.kind() != "prim::ListUnpack" for u in pieces) else None
    if kind in PASS_THROUGH and use.offset == 0:
        readers = (_use_read_by_legacy(u, opset) for u in node.outputsAt(0).uses())
        return next((r for r in readers if r is not None), None)
    if kind not in SHAPED_LIKE_INPUT or use.offset != 0:
        return None
    jit_type = node.inputsAt(0).type()
    if isinstance(jit_type, torch._C.TensorType) and jit_type.dim() == 0:
        return "Shape"  # legacy does not fold the Shape of a 0-d tensor
    fill = node.inputsAt(1) if kind in ("aten::full_like", "aten::fill_", "aten::fill") else None
    return "Shape" if fill is not None and fill.node().kind() != "prim::Constant" else None


def _reaches_runtime_control_flow(value: torch._C.Value) -> bool:
    """Whether the value's data is read inside a loop body or decides a scripted check that raises
    and has results (``if float(t) < 0: raise ... else: return y``). We may unroll such a loop or
    drop the raising branch and fold what is left; legacy keeps every Loop and such an If (one
    without results it drops), and so reads the value at runtime."""
    seen, stack = set(), [value]
    while stack:
        current = stack.pop()
        for use in current.uses():
            node = use.user
            if node.kind() in METADATA_ONLY:
                continue
            if node.kind() == "prim::If" and use.offset == 0 and node.outputsSize() and _raises(node):
                return True
            if _in_loop_body(node):
                return True
            for output in node.outputs():
                if output.unique() not in seen:
                    seen.add(output.unique())
                    stack.append(output)
    return False


def _in_loop_body(node: torch._C.Node) -> bool:
    owner = node.owningBlock().owningNode()
    while owner is not None:
        if owner.kind() == "prim::Loop":
            return True
        owner = owner.owningBlock().owningNode()
    return False


def _raises(if_node: torch._C.Node) -> bool:
    return any(inner.kind() == "prim::RaiseException" for block in if_node.blocks() for inner in block.nodes())
