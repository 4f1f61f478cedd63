"""The numbers in the legacy exporter's names, and the names it gives folded weights.

The legacy exporter names a value that has no name of its own by a number: its position in the
TorchScript graph its conversion builds, once dead nodes are gone (canonical numbering: the graph
inputs, user inputs then every parameter, take 0..n-1, then each node's outputs in graph order).
An unnamed graph output is that number (``191``), spelled after its first reader when a node
reads it (``onnx::Relu_9``). Its own passes then create values numbered on from there, in order:

1. conv + batch norm folding: three values per folded Conv (``optimize/conv_batchnorm.py``);
2. constant folding: one value per node whose inputs are all parameters or constants, in graph
   order (a node folded earlier counts as a constant for the nodes after it). A node with a
   parameter among its inputs becomes an initializer, named after its first reader:
   ``onnx::MatMul_1542``, a transposed ``nn.Linear`` weight.

Ours matches those numbers where its graph has the nodes legacy's has. It evaluates at export time
what it can (``GraphContext.op`` folds nodes whose inputs are all known); a node so folded that
reads a weight is one legacy's graph still has before its own constant folding (legacy's symbolics
see weights as graph inputs), so the builder keeps it aside (``Graph.folded``) and it counts here
as a node, with a Constant node for each of its constant inputs. Where our conversion emits other
nodes than legacy's (a transformer's attention mask: 5 nodes here, 40 and 40 Constants in legacy),
the numbers differ and so do those names; the names keep legacy's form.
"""

from __future__ import annotations

from ..builder.ir import Graph, Node, Value
from .optimize.subgraphs import node_bodies

# The ops legacy's constant folding evaluates (torch/csrc/jit/passes/onnx/constant_fold.cpp),
# with the conditions it checks that our nodes can miss.
LEGACY_FOLDED_OPS = {
    "Slice", "Concat", "Sqrt", "Div", "Mul", "Sub", "Add", "Unsqueeze", "Squeeze", "Transpose", "Cast",
    "Reshape", "Shape", "ReduceL1", "ReduceL2", "ReduceProd", "Gather", "Range", "Where", "Equal",
    "Greater", "Less", "Neg", "Not", "Size", "Softmax",
}


def _legacy_folds(node: Node) -> bool:
    """Whether legacy's constant folding evaluates ``node`` when all its inputs are constants."""
    if node.domain or node.op_type not in LEGACY_FOLDED_OPS or len(node.outputs) != 1 or not node.inputs:
        return False
    if node.op_type == "Transpose":
        return node.attr("perm") is not None
    if node.op_type in ("ReduceL1", "ReduceL2"):
        return node.attr("axes") is not None and node.attr("keepdims") is not None
    if node.op_type == "Gather":
        indices = node.inputs[1]
        return indices is not None and indices.shape is not None and len(indices.shape) <= 1
    return True


def reader_name(number: int, users) -> str:
    """What legacy calls a value known only by its number: ``<first reader's kind>_<number>``
    (``onnx::Conv_0``), or the number when no node of the main graph reads it."""
    if not users:
        return str(number)
    node = users[0]
    return f"{node.domain or 'onnx'}::{node.op_type}_{number}"


def _bodies(node) -> list[Graph]:
    return [body for body in node_bodies(node) if isinstance(body, Graph)]


def _body_reads(body: Graph) -> list[Value]:
    """Every value the nodes of ``body`` (and of bodies nested in it) read."""
    reads = []
    for node in body.nodes:
        reads += [v for v in node.inputs if v is not None]
        for inner in _bodies(node):
            reads += _body_reads(inner)
    return reads + list(body.outputs)


def _is_python_constant(value: Value) -> bool:
    """A constant no node of ours holds: legacy has an ``onnx::Constant`` node for it."""
    return value.producer is None and not value.is_param and not value._is_graph_input and value.is_const


def live_nodes(graph: Graph) -> set[int]:
    """ids of the nodes, ours and folded ones, that the graph outputs need: what legacy's graph
    keeps once dead code is gone, the only nodes it numbers and folds."""
    folded_by_output = {id(out): node for _, node in graph.folded for out in node.outputs}
    live: set[int] = set()
    stack = list(graph.outputs)
    while stack:
        value = stack.pop()
        if value is None:
            continue
        node = value.producer or folded_by_output.get(id(value))
        if node is None or id(node) in live:
            continue
        live.add(id(node))
        stack += [v for v in node.inputs if v is not None]
        stack += [v for body in _bodies(node) for v in _body_reads(body)]
    return live


def _in_order(graph: Graph):
    """(node, folded?) in legacy's graph order, each folded node before the node after which the
    builder folded it; ((values, folds), None) where only legacy makes values (``Graph.legacy_only``)."""
    extras = sorted([(k, 0, node) for k, node in graph.folded]
                    + [(k, 1, (values, folds)) for k, values, folds in graph.legacy_only], key=lambda entry: entry[:2])
    pending = 0
    for k, node in enumerate(graph.nodes + [None]):
        while pending < len(extras) and extras[pending][0] <= k:
            _, kind, item = extras[pending]
            yield (item, True) if kind == 0 else (item, None)
            pending += 1
        if node is not None:
            yield node, False


def legacy_numbers(graph: Graph, live: set[int], first: int, constants: set[int] = frozenset()) -> dict[int, int]:
    """id(value) -> the number the legacy exporter gives it: its graph inputs (user inputs and
    parameters) take 0..first-1, then each output of the nodes that the outputs need, in graph
    order (a node's subgraph inputs and nodes right after its own outputs), as TorchScript's
    canonical numbering does after dead code is removed; a folded node's constant inputs are
    legacy's Constant nodes, numbered right before it. So is a graph constant kept as an
    initializer (``constants``: ids of such values; a frozen module's weights, a large traced
    constant): it takes its number right before the first node that reads it. ``live``:
    ``live_nodes(graph)``."""
    numbers: dict[int, int] = {}
    counter = [first]

    def number(values) -> None:
        for value in values:
            numbers.setdefault(id(value), counter[0])
            counter[0] += 1

    def walk(nodes, everything: bool) -> None:
        for node in nodes:
            if everything or id(node) in live:
                number([v for v in node.inputs if v is not None and id(v) in constants and id(v) not in numbers])
                number(node.outputs)
                for body in _bodies(node):
                    number(body.inputs)
                    walk(body.nodes, True)

    for node, folded in _in_order(graph):
        if folded is None:  # values only legacy's conversion makes
            counter[0] += node[0]
            continue
        if folded and id(node) in live:
            number([v for v in node.inputs if v is not None and _is_python_constant(v) and id(v) not in numbers])
        walk([node], False)
    return numbers


def number_folds(graph: Graph, live: set[int]) -> None:
    """Each value legacy's constant folding computes (``Value.legacy_fold``): its place among the
    values that pass creates, counted in graph order over the nodes the outputs need (``live``:
    ``live_nodes(graph)``)."""
    constant: dict[int, bool] = {}  # id(node output) -> whether legacy folds it
    count = 0

    def is_constant(value: Value | None) -> bool:
        if value is None:  # legacy's absent input is a None constant, which it does not fold
            return False
        if id(value) in constant:
            return constant[id(value)]
        if value.producer is not None:
            return value.producer.op_type == "Constant" and not value.producer.domain
        return value.is_param or _is_python_constant(value)

    for node, folded in _in_order(graph):
        if folded is None:  # values only legacy's conversion makes, some of them folded
            count += node[1]
            continue
        if id(node) not in live:
            continue
        folds = _legacy_folds(node) and all(is_constant(v) for v in node.inputs)
        for value in node.outputs:
            constant[id(value)] = folds
        if folds:
            node.outputs[0].legacy_fold = count
            count += 1


def name_folded_weights(graph: Graph) -> None:
    """Legacy's names for the initializers it computes from weights: ``onnx::<first reader>_<n>``,
    ``n`` counted on from ``graph.legacy_next_number`` (past the values of conv + batch norm
    folding) by the value's place in legacy's constant folding."""
    if graph.legacy_next_number is None:
        return
    consumers = graph.consumers()
    seen: set[int] = set()
    for value in [v for node in graph.nodes for v in node.inputs] + graph.outputs:
        if value is None or id(value) in seen or not value.is_param or value.legacy_fold is None:
            continue
        seen.add(id(value))
        if value.from_weight and value.name in graph.initializers:
            graph.rename(value, reader_name(graph.legacy_next_number + value.legacy_fold, consumers.get(id(value))))
