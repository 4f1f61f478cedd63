"""Traced ``torch.autograd.Function`` calls replaced by the ops their forward ran."""

from __future__ import annotations

import torch

from ...builder.mutation import iter_nodes


def inline_autograd_functions(graph: torch._C.Graph) -> None:
    """Replace each traced ``torch.autograd.Function`` call (a ``prim::PythonOp`` carrying the
    ops its forward ran as a ``Subgraph``) by those ops, as the legacy ``autograd_inlining=True``
    does. Functions nested inside a Function are inlined too; Functions with a ``symbolic``
    staticmethod are left for it (symbolic/ops/autograd.py)."""
    while True:
        calls = [n for n in iter_nodes(graph.block()) if n.kind() == "prim::PythonOp"
                 and "Subgraph" in n.attributeNames() and not _has_symbolic(n)]
        if not calls:
            return
        for node in calls:
            body = node.g("Subgraph")
            outputs = list(node.outputs())
            if len(list(body.outputs())) != len(outputs):
                continue  # not a plain forward trace; left for the converter to report
            with graph.insert_point_guard(node):  # nested blocks belong to the same graph
                inlined = graph.insertGraph(body, list(node.inputs()))
            for old, new in zip(outputs, inlined):
                new.setType(old.type())
                old.replaceAllUsesWith(new)
            node.destroy()


def _has_symbolic(node) -> bool:
    """A Function with a ``symbolic`` staticmethod is converted by it, as in legacy."""
    apply = node.pyobj()
    return hasattr(getattr(apply, "__self__", None), "symbolic")
