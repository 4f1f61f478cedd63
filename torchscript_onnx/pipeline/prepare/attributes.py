"""Module attribute writes in scripted code become value flow.

``self.window = n`` or ``self.conv.bias = b + x`` in a scripted forward is a ``prim::SetAttr`` on
the module object; later reads are ``prim::GetAttr``. ONNX has no mutable state, so each written
attribute becomes a variable: reads take the value last written, a write inside an ``If`` makes the
attribute an output of the If (each branch yields its own last value), and a write inside a
``Loop`` body makes it loop-carried. Attributes never written keep their ``GetAttr`` (conversion
reads them from the module, as weights or constants); the module object itself is never changed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

from ...builder import jit_walk

Key = tuple  # the attribute names from ``self``: ("conv", "bias")


def lower_attribute_writes(graph: torch._C.Graph) -> set:
    """Rewrite every ``prim::SetAttr`` on ``self`` (graph input 0) or a submodule of it; returns
    the attributes written (``("conv", "bias")``), which running the module would change."""
    if not any(n.kind() == "prim::SetAttr" for n in jit_walk.all_nodes(graph)):
        return set()
    self_value = next(graph.inputs())
    written = _written(graph, self_value)
    state = {key: _initial_read(graph, self_value, key) for key in sorted(written)}
    _rewrite(graph.block(), state, self_value)
    return written


@contextlib.contextmanager
def attributes_restored(module, keys) -> Iterator[None]:
    """Put back the attributes ``keys`` of ``module`` after a run that writes them."""
    saved = []
    for key in keys:
        owner = module
        for name in key[:-1]:
            owner = getattr(owner, name)
        saved.append((owner, key[-1], getattr(owner, key[-1])))
    try:
        yield
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)


def _path(value, self_value) -> Key | None:
    """The attribute names leading from ``self`` to ``value``, or None if it is not such a chain."""
    names = []
    while value is not self_value and value != self_value:
        node = value.node()
        if node.kind() != "prim::GetAttr":
            return None
        names.append(node.s("name"))
        value = node.inputsAt(0)
    return tuple(reversed(names))


def _written_key(node, self_value) -> Key | None:
    owner = _path(node.inputsAt(0), self_value)
    return None if owner is None else owner + (node.s("name"),)


def _written(block, self_value) -> set:
    return {key for node in jit_walk.all_nodes(block) if node.kind() == "prim::SetAttr"
            for key in [_written_key(node, self_value)] if key is not None}


def _initial_read(graph: torch._C.Graph, self_value, key: Key):
    """A GetAttr chain at the top of the graph reading the attribute's value before any write."""
    value, attribute_type, previous = self_value, _attribute_type(graph, self_value, key), None
    for depth, name in enumerate(key):
        node = graph.create("prim::GetAttr", [value], 1)
        node.s_("name", name)
        if previous is None:
            graph.prependNode(node)
        else:
            node.insertAfter(previous)
        value, previous = node.outputsAt(0), node
        if depth == len(key) - 1 and attribute_type is not None:
            value.setType(attribute_type)
        elif depth < len(key) - 1:
            value.setType(_module_type(graph, self_value, key[: depth + 1]))
    return value


def _attribute_type(graph, self_value, key: Key):
    """The type of the attribute as the graph reads or writes it (a read's type is the declared one)."""
    written = None
    for node in jit_walk.all_nodes(graph):
        if node.kind() == "prim::GetAttr" and _path(node.outputsAt(0), self_value) == key:
            return node.outputsAt(0).type()
        if node.kind() == "prim::SetAttr" and _written_key(node, self_value) == key and written is None:
            written = node.inputsAt(1).type()
    return written


def _module_type(graph, self_value, key: Key):
    for node in jit_walk.all_nodes(graph):
        if node.kind() == "prim::GetAttr" and _path(node.outputsAt(0), self_value) == key:
            return node.outputsAt(0).type()
    raise RuntimeError(f"no read of submodule {'.'.join(key)} in the graph")


def _rewrite(block, state: dict, self_value) -> None:
    for node in list(block.nodes()):
        kind = node.kind()
        if kind == "prim::SetAttr":
            key = _written_key(node, self_value)
            if key in state:
                state[key] = node.inputsAt(1)
                node.destroy()
        elif kind == "prim::GetAttr":
            key = _path(node.outputsAt(0), self_value)
            if key in state and state[key] is not node.outputsAt(0):
                node.outputsAt(0).replaceAllUsesWith(state[key])
                node.destroy()
        elif kind == "prim::If":
            _rewrite_if(node, state, self_value)
        elif kind == "prim::Loop":
            _rewrite_loop(node, state, self_value)
        else:
            for sub in jit_walk.blocks(node):
                _rewrite(sub, state, self_value)


def _rewrite_if(node, state: dict, self_value) -> None:
    keys = sorted(set().union(*(_written(b, self_value) for b in node.blocks())) & set(state))
    finals = []
    for branch in node.blocks():
        branch_state = dict(state)
        _rewrite(branch, branch_state, self_value)
        finals.append(branch_state)
    for key in keys:
        values = [branch_state[key] for branch_state in finals]
        for branch, value in zip(node.blocks(), values):
            branch.registerOutput(value)
        output = node.addOutput()
        output.setType(_unified([v.type() for v in values]))
        state[key] = output


def _rewrite_loop(node, state: dict, self_value) -> None:
    (body,) = node.blocks()
    keys = sorted(_written(body, self_value) & set(state))
    body_state = dict(state)
    carried = []
    for key in keys:
        node.addInput(state[key])
        parameter = body.addInputToBlock() if hasattr(body, "addInputToBlock") else body.addInput()
        parameter.setType(state[key].type())
        body_state[key] = parameter
        carried.append(key)
    _rewrite(body, body_state, self_value)
    for key in carried:
        body.registerOutput(body_state[key])
        output = node.addOutput()
        output.setType(state[key].type())
        state[key] = output


def _unified(types: list):
    first = types[0]
    if all(t == first for t in types):
        return first
    try:
        return torch._C.unify_type_list(types)
    except RuntimeError:
        return first


def tuple_attributes_to_constants(graph: torch._C.Graph, module) -> None:
    """Module attributes holding tuples (``self.dim = (1, 2)``) become constant tuple constructs, so
    torch's tuple lowering, which cannot see through ``prim::GetAttr``, can unpack them."""
    self_value = next(graph.inputs())
    for node in jit_walk.all_nodes(graph):
        if node.kind() != "prim::GetAttr" or not isinstance(node.outputsAt(0).type(), torch._C.TupleType):
            continue
        path = _path(node.outputsAt(0), self_value)
        if path is None:
            continue
        value = module
        for name in path:
            value = getattr(value, name)
        if not _constant_tuple(value):
            continue
        with graph.insert_point_guard(node):
            items = [graph.insertConstant(item) for item in value]
            construct = graph.create("prim::TupleConstruct", items, 1)
            graph.insertNode(construct)
        construct.outputsAt(0).setType(node.outputsAt(0).type())
        node.outputsAt(0).replaceAllUsesWith(construct.outputsAt(0))


def _constant_tuple(value) -> bool:
    return isinstance(value, tuple) and all(
        isinstance(item, (bool, int, float, str, type(None), torch.Tensor)) for item in value)
