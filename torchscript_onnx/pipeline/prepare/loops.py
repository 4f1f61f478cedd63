"""Loops that only build int lists, unrolled: ``[i - n for i in range(n)]`` with ``n`` constant."""

from __future__ import annotations

import torch

from ...builder import jit_walk

# Unroll no longer loops than this: library code builds dim lists no longer than a tensor's rank.
MAX_UNROLLED_TRIPS = 64


def unroll_int_list_loops(graph: torch._C.Graph) -> int:
    """Unroll each ``prim::Loop`` of a constant trip count whose body only appends int arithmetic on
    the loop index to lists defined outside it (``[i - n for i in range(n)]`` with ``n`` constant;
    scripted ``torch.tensordot(x, y, 2)`` builds its dim lists so). The appends then run in a straight
    line on constants, so the lists are known when the op reading them converts (an ONNX Loop would
    compute them at runtime). torch's own unrolling pass also partly unrolls loops of a runtime count
    and loops that do tensor work, hence this narrow one. Returns how many loops were unrolled."""
    unrolled = 0
    while True:  # an inner loop unrolled may leave its outer loop eligible
        loops = [n for n in jit_walk.all_nodes(graph) if n.kind() == "prim::Loop" and _builds_int_list(n)]
        if not loops:
            return unrolled
        for loop in loops:
            _unroll(graph, loop)
        unrolled += len(loops)


def _constant(value: torch._C.Value):
    return value.toIValue() if value.node().kind() == "prim::Constant" else None


def _builds_int_list(loop: torch._C.Node) -> bool:
    trips = _constant(loop.inputsAt(0))
    if not isinstance(trips, int) or not 0 <= trips <= MAX_UNROLLED_TRIPS or loop.inputsSize() != 2 \
            or _constant(loop.inputsAt(1)) is not True:
        return False  # a runtime count, a long loop, carried values or a condition that may stop it
    body = next(loop.blocks())
    if _constant(body.returnNode().inputsAt(0)) is not True:
        return False  # the body may break out of the loop
    inside = {v.unique() for v in body.inputs()}
    appends = 0
    for node in body.nodes():
        kind = node.kind()
        if kind == "prim::Constant":
            pass
        elif kind == "aten::append" and _is_int_list(node.inputsAt(0)) and _is_int(node.inputsAt(1)) \
                and node.inputsAt(0).unique() not in inside:
            appends += 1
        elif not (kind.startswith("aten::") and node.outputsSize() and all(
                _is_int(v) for v in [*jit_walk.inputs(node), *jit_walk.outputs(node)])):
            return False  # anything but int arithmetic (int-only aten ops have no side effects)
        inside.update(v.unique() for v in jit_walk.outputs(node))
    return appends > 0


def _is_int(value: torch._C.Value) -> bool:
    return isinstance(value.type(), torch._C.IntType)


def _is_int_list(value: torch._C.Value) -> bool:
    kind = value.type()
    return isinstance(kind, torch._C.ListType) and isinstance(kind.getElementType(), torch._C.IntType)


def _unroll(graph: torch._C.Graph, loop: torch._C.Node) -> None:
    body = next(loop.blocks())
    index = next(iter(body.inputs()))
    nodes = list(body.nodes())
    for trip in range(_constant(loop.inputsAt(0))):
        with graph.insert_point_guard(loop):
            copies = {index.unique(): graph.insertConstant(trip)}
            for node in nodes:
                clone = graph.createClone(node, lambda v: copies.get(v.unique(), v))
                graph.insertNode(clone)
                copies.update((old.unique(), new) for old, new in
                              zip(jit_walk.outputs(node), jit_walk.outputs(clone)))
    loop.destroy()
