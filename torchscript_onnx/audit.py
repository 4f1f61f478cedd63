"""Audits: which ops of a model will not convert, where they are, and what to do about each.

``unconvertible_ops`` answers like the legacy function (the graph and the op names);
``audit`` returns a report with, per op, how often and where it occurs (module scopes and source
lines), the lowest opset that supports it if any, and the next step. Nothing is converted or
written: the model is captured once and every node is asked of the registry.
"""

from __future__ import annotations

import dataclasses

import torch

from . import capture as capture_mod
from .convert import find_unsupported
from .errors import UnsupportedOp
from .options import TrainingMode, _enum_member, check_opset
from .prepare import prepare


@dataclasses.dataclass
class AuditReport:
    opset: int
    ops: list[UnsupportedOp]
    total_nodes: int

    @property
    def ok(self) -> bool:
        return not self.ops

    def to_text(self) -> str:
        if self.ok:
            return f"All {self.total_nodes} nodes convert at opset {self.opset}."
        lines = [f"{len(self.ops)} operator(s) of {self.total_nodes} nodes do not convert at opset {self.opset}:"]
        for op in self.ops:
            lines.append(f"- {op.name} ({len(op.occurrences)}x): {op.next_step()}")
            for scope, source in _unique(op.occurrences):
                lines.append(f"    {scope or '<top>'} at {source or '<unknown source>'}")
        return "\n".join(lines)

    def to_markdown(self) -> str:
        if self.ok:
            return f"All {self.total_nodes} nodes convert at opset {self.opset}.\n"
        lines = [
            f"**{len(self.ops)} operator(s) do not convert at opset {self.opset}**",
            "",
            "| operator | count | where | lowest opset | next step |",
            "|---|---|---|---|---|",
        ]
        for op in self.ops:
            where = "<br>".join(f"`{scope or '<top>'}` {source}" for scope, source in _unique(op.occurrences))
            lowest = op.lowest_opset if op.lowest_opset is not None else "none"
            lines.append(f"| `{op.name}` | {len(op.occurrences)} | {where} | {lowest} | {op.next_step()} |")
        return "\n".join(lines) + "\n"

    __str__ = to_text


def _unique(occurrences):
    return list(dict.fromkeys(occurrences))


def _captured_graph(model, args, training, kwargs=None) -> torch._C.Graph:
    training = _enum_member(training, TrainingMode, "training")
    args = capture_mod.normalize_args(model, args, kwargs)
    captured = capture_mod.capture(model, args, training)
    return prepare(captured.graph)


def unconvertible_ops(model, args, training: TrainingMode = TrainingMode.EVAL,
                      opset_version: int | None = None) -> tuple[torch._C.Graph, list[str]]:
    """The captured graph and the names of its ops without a conversion at ``opset_version``
    (as the legacy ``utils.unconvertible_ops``)."""
    opset = check_opset(opset_version)
    graph = _captured_graph(model, args, training)
    return graph, [op.name for op in find_unsupported(graph, opset)]


def audit(model, args=(), *, opset_version: int | None = None, training: TrainingMode = TrainingMode.EVAL,
          kwargs=None) -> AuditReport:
    """Which ops of ``model`` will not convert at ``opset_version``, where, and what to do."""
    opset = check_opset(opset_version)
    graph = _captured_graph(model, args, training, kwargs)
    total = sum(1 for _ in graph.nodes())
    return AuditReport(opset, find_unsupported(graph, opset), total)
