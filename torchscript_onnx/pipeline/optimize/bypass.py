"""Drop nodes whose output is one of their inputs: readers of the output read that input instead.

Shared by the passes that find such no-op nodes (a Reshape to the input's own shape, ``x * 1``).
A node producing a graph output, or a value an If/Loop body reads by name, stays.
"""

from __future__ import annotations

from collections.abc import Callable

from ...builder.ir import Graph, Node, Value
from .subgraphs import subgraph_references


def bypass(graph: Graph, source_of: Callable[[Graph, Node], Value | None]) -> bool:
    """Remove each node for which ``source_of(graph, node)`` gives the input equal to its output.
    Returns whether any node was removed."""
    replace: dict[int, Value] = {}
    pinned = {id(v) for v in graph.outputs}
    inner = subgraph_references(graph)
    kept: list[Node] = []
    for node in graph.nodes:
        node.inputs = [replace.get(id(v), v) if v is not None else None for v in node.inputs]
        out = node.outputs[0] if node.outputs else None
        source = None if out is None or id(out) in pinned or out.name in inner else source_of(graph, node)
        if source is None:
            kept.append(node)
            continue
        replace[id(out)] = source
    changed = len(kept) != len(graph.nodes)
    graph.nodes = kept
    return changed
