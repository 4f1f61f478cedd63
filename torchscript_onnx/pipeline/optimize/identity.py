"""Remove Identity nodes: readers of the output read the input instead.

An Identity whose output a subgraph (If/Loop body) reads stays. An Identity that produces a graph
output is kept when its input is a graph input, an initializer or another output (ONNX needs a node
there), otherwise the input value takes the output's name.
"""

from __future__ import annotations

from ...builder.ir import Graph, Node
from .subgraphs import subgraph_references


class RemoveIdentity:
    def run(self, graph: Graph) -> bool:
        replace: dict[int, object] = {}
        outputs = {id(v): k for k, v in enumerate(graph.outputs)}
        inner = subgraph_references(graph)  # If/Loop bodies read these by name: keep their Identity
        kept: list[Node] = []
        changed = False
        for node in graph.nodes:
            node.inputs = [replace.get(id(v), v) if v is not None else None for v in node.inputs]
            if node.op_type != "Identity" or node.domain or node.outputs[0].name in inner:
                kept.append(node)
                continue
            source, out = node.inputs[0], node.outputs[0]
            if id(out) in outputs:
                if source.producer is None or id(source) in outputs or source.producer.op_type == "Constant":
                    kept.append(node)
                    continue
                # The producer's value becomes the graph output under the output's name.
                name = out.name
                graph.value_names.release(source.name)
                source.name = name
                if out.shape is not None:  # it may carry the output's dynamic dim names
                    source.shape = out.shape
                graph.outputs[outputs[id(out)]] = source
                outputs[id(source)] = outputs.pop(id(out))
            replace[id(out)] = source
            changed = True
        graph.nodes = kept
        return changed
