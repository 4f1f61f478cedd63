"""Remove nodes whose outputs nobody reads, and initializers no node reads."""

from __future__ import annotations

from ...builder.ir import Graph
from .subgraphs import bodies, subgraph_references

# Ops kept even when their outputs are unused (none today; random ops are pure in ONNX).
SIDE_EFFECT_OPS: frozenset[str] = frozenset()


class DeadCode:
    def run(self, graph: Graph) -> bool:
        changed = False
        for body in bodies(graph):  # bodies first: what they stop reading may die outside too
            changed |= self.run(body)
        return self.run_one(graph) or changed

    def run_one(self, graph: Graph) -> bool:
        # Names read inside If/Loop bodies count as used: the bodies refer to outer values by name.
        inner = subgraph_references(graph)
        live = {id(v) for v in graph.outputs}
        kept = []
        for node in reversed(graph.nodes):
            if (node.op_type in SIDE_EFFECT_OPS or any(id(v) in live for v in node.outputs)
                    or any(v.name in inner for v in node.outputs)):
                kept.append(node)
                live.update(id(v) for v in node.inputs if v is not None)
        changed = len(kept) != len(graph.nodes)
        kept.reverse()
        graph.nodes = kept
        used_names = {v.name for node in kept for v in node.inputs if v is not None}
        used_names.update(v.name for v in graph.outputs)
        used_names.update(inner)
        unused = [name for name in graph.initializers if name not in used_names]
        for name in unused:
            del graph.initializers[name]
        return changed or bool(unused)
