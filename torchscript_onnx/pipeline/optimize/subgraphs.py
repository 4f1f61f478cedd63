"""Names that subgraph attributes (If/Loop/Scan bodies, as GraphProtos) read from outer scopes.

The passes see only the outer graph's nodes; a value read by name inside a body must keep its
name and its producer, so passes treat these names as used and never rename or drop them.
"""

from __future__ import annotations

import onnx

from ...builder.ir import Graph

GRAPH_ATTRIBUTE_KINDS = ("g", "gs")


def _proto_names(graph: onnx.GraphProto, names: set[str]) -> None:
    for node in graph.node:
        names.update(node.input)
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                _proto_names(attribute.g, names)
            elif attribute.type == onnx.AttributeProto.GRAPHS:
                for body in attribute.graphs:
                    _proto_names(body, names)
    names.update(output.name for output in graph.output)


def node_bodies(node) -> list:
    """The subgraph attributes of ``node`` (If/Loop/Scan bodies): ``Graph``s, or ``GraphProto``s
    once a body is made into its proto."""
    found = []
    for kind, value in node.attrs.values():
        if kind == "g":
            found.append(value)
        elif kind == "gs":
            found.extend(value)
    return found


def _body_names(body, names: set[str]) -> None:
    if isinstance(body, onnx.GraphProto):
        _proto_names(body, names)
    elif isinstance(body, Graph):
        _graph_names(body.nodes, names)
    else:
        raise TypeError(f"unexpected subgraph attribute of type {type(body).__name__}")


def _graph_names(nodes, names: set[str], inputs: bool = True) -> None:
    for node in nodes:
        if inputs:
            names.update(v.name for v in node.inputs if v is not None)
        for body in node_bodies(node):
            _body_names(body, names)


def subgraph_references(graph: Graph) -> set[str]:
    """Every name read inside a subgraph attribute of ``graph``'s nodes (a superset of the outer ones)."""
    names: set[str] = set()
    _graph_names(graph.nodes, names, inputs=False)
    names.discard("")
    return names


def has_subgraph(node) -> bool:
    return any(kind in GRAPH_ATTRIBUTE_KINDS for kind, _ in node.attrs.values())


def bodies(graph: Graph) -> list[Graph]:
    """The If/Loop/Scan bodies of ``graph``'s nodes that are still ``Graph``s (not yet protos)."""
    return [body for node in graph.nodes for body in node_bodies(node) if isinstance(body, Graph)]
