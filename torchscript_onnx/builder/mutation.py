"""What scripted code mutates. TorchScript is not SSA: ``l.append(x)`` or ``acc.add_(x)`` in a loop
body changes a value defined outside it, for the next iteration and after the loop. The converter
rebinds such values and carries them through If/Loop; prepare/inplace.py adds writes through views.
"""

from __future__ import annotations

import torch

from . import jit_walk


def iter_nodes(block) -> list:
    """Every node in ``block`` and its nested blocks (jit_walk: without a C++ exception per node)."""
    return jit_walk.all_nodes(block)


# List mutators: their symbolics return (the list after the call, *the node's outputs).
LIST_MUTATORS = frozenset({"aten::append", "aten::insert", "aten::pop", "aten::_set_item", "aten::clear",
                           "aten::extend", "aten::reverse", "aten::Delete"})


def mutated_input(node: torch._C.Node) -> torch._C.Value | None:
    """The JIT value ``node`` mutates: a list mutator's list (or ``l += ...``), an in-place aten op's
    tensor (``add_``)."""
    kind = node.kind()
    if kind in LIST_MUTATORS:
        return node.inputsAt(0)
    name = kind.partition("::")[2]
    if kind == "aten::add_" and isinstance(node.inputsAt(0).type(), torch._C.ListType):
        return node.inputsAt(0)  # ``l += [x]``: add_.t(t[](a!) self, t[] b) -> t[], the list extended
    if kind.startswith("aten::") and name.endswith("_") and not name.startswith("_") and node.inputsSize() \
            and isinstance(node.inputsAt(0).type(), torch._C.TensorType):
        return node.inputsAt(0)
    return None


def mutated_outside(node: torch._C.Node) -> list:
    """Values defined outside ``node``'s blocks that nodes in them mutate (scripted code is not SSA:
    ``l.append(x)`` in a loop body changes ``l`` for the next iteration and after the loop)."""
    defined_inside: set[int] = set()
    nested = [n for block in node.blocks() for n in iter_nodes(block)]
    for block in [*node.blocks(), *[b for n in nested for b in n.blocks()]]:
        defined_inside.update(v.unique() for v in block.inputs())
    for n in nested:
        defined_inside.update(v.unique() for v in n.outputs())
    found: dict[int, torch._C.Value] = {}
    for n in nested:
        target = mutated_input(n)
        if target is not None and target.unique() not in defined_inside:
            found.setdefault(target.unique(), target)
    return list(found.values())


def scripted_mutation(node: torch._C.Node) -> bool:
    """Whether a traced graph's ``node`` mutates as scripted code does, so the converter must rebind
    what it changes: the tracer threads in-place results through the graph (``x.add_(1)`` returns
    the value later nodes read), but scripted functions a trace calls are inlined untouched, so their
    list mutators, their If/Loop and everything in those blocks change values the graph reads again."""
    kind = node.kind()
    if kind in ("prim::If", "prim::Loop") or kind in LIST_MUTATORS:
        return True
    if kind == "aten::add_" and isinstance(node.inputsAt(0).type(), torch._C.ListType):
        return True
    return node.owningBlock().owningNode() is not None


def inside(node: torch._C.Node, compound: torch._C.Node) -> bool:
    """Whether ``node`` sits in one of ``compound``'s blocks, at any depth."""
    while node is not None:
        node = node.owningBlock().owningNode()
        if node == compound:
            return True
    return False
