"""Audits: what will keep a model from exporting, where, and what to do about each.

``unconvertible_ops`` answers like the legacy function (the graph and the names of the ops
without a conversion). ``audit`` runs the real conversion as ``export`` would (capture, prepare,
convert; no optimisation, nothing written) in the converter's collecting mode: a node that fails
is recorded with its op, module scope, source line, message and next step, and conversion goes
on past it. So one report lists every problem export would hit: ops without a conversion, ops
that need a higher opset (``needs_opset``: the one export's ``OpsetRequirementError`` names), sizes known only at runtime where a lowering needs them fixed, complex
values where ONNX has none.
"""

from __future__ import annotations

import dataclasses

import torch

from .pipeline import capture as capture_mod
from .pipeline.convert import Converter, find_unsupported
from .builder.errors import ConversionIssue, UnsupportedOp
from .builder.options import ExportOptions, TrainingMode
from .pipeline.prepare import prepare


@dataclasses.dataclass
class AuditReport:
    """``ops``: the ops without a conversion at ``opset`` (each with every place it occurs);
    ``issues``: the nodes whose conversion failed (``ConversionIssue``: op, category, scope,
    source, message, next step); ``not_reached``: ops that failed only because they read the
    result of a failed node (they may convert once it does). ``ok`` says whether export succeeds."""

    opset: int
    ops: list[UnsupportedOp]
    total_nodes: int
    issues: list[ConversionIssue] = dataclasses.field(default_factory=list)
    not_reached: list[str] = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.ops and not self.issues

    @property
    def needs_opset(self) -> int | None:
        """The opset that converts every node found needing a higher one (what export's
        ``OpsetRequirementError`` names), or None when none does."""
        return max((i.needs_opset for i in self.issues if i.needs_opset is not None), default=None)

    def _problems(self) -> int:
        return len(self.ops) + len(self.issues)

    def _not_reached_text(self) -> str:
        counts = dict.fromkeys(self.not_reached, 0)
        for op in self.not_reached:
            counts[op] += 1
        names = ", ".join(f"{op}" + (f" x{n}" if n > 1 else "") for op, n in counts.items())
        return f"{len(self.not_reached)} node(s) after them could not be checked: {names}"

    def to_text(self) -> str:
        if self.ok:
            return f"All {self.total_nodes} nodes convert at opset {self.opset}."
        lines = [f"{self._problems()} problem(s) in {self.total_nodes} nodes keep the model from exporting "
                 f"at opset {self.opset}:"]
        for op in self.ops:
            lines.append(f"- {op.name} ({len(op.occurrences)}x): {op.next_step()}")
            for scope, source in _unique(op.occurrences):
                lines.append(f"    {scope or '<top>'} at {source or '<unknown source>'}")
        for issue in self.issues:
            lines.append(f"- {issue.op} [{issue.category}]: {issue.next_step()}")
            lines.append(f"    {issue.where()}")
            lines.append(f"    {_first_line(issue.message)}")
        if self.needs_opset is not None:
            lines.append(f"Opset {self.needs_opset} converts every node above that needs a higher opset "
                         f"(pass opset_version={self.needs_opset}).")
        if self.not_reached:
            lines.append(self._not_reached_text())
        return "\n".join(lines)

    def to_markdown(self) -> str:
        if self.ok:
            return f"All {self.total_nodes} nodes convert at opset {self.opset}.\n"
        lines = [
            f"**{self._problems()} problem(s) keep the model from exporting at opset {self.opset}**",
            "",
            "| operator | problem | count | where | lowest opset | next step |",
            "|---|---|---|---|---|---|",
        ]
        for op in self.ops:
            where = "<br>".join(f"`{scope or '<top>'}` {source}" for scope, source in _unique(op.occurrences))
            lowest = op.lowest_opset if op.lowest_opset is not None else "none"
            lines.append(f"| `{op.name}` | no conversion | {len(op.occurrences)} | {where} | {lowest} | {op.next_step()} |")
        for issue in self.issues:
            lowest = issue.needs_opset if issue.needs_opset is not None else ""
            message = _first_line(issue.message).replace("|", "\\|")
            lines.append(f"| `{issue.op}` | {issue.category}: {message} | 1 | `{issue.scope or '<top>'}` "
                         f"{issue.source} | {lowest} | {issue.next_step()} |")
        if self.not_reached:
            lines += ["", self._not_reached_text()]
        return "\n".join(lines) + "\n"

    __str__ = to_text


def _unique(occurrences):
    return list(dict.fromkeys(occurrences))


def _first_line(text: str) -> str:
    return text.split("\n", 1)[0]


def unconvertible_ops(model, args, training: TrainingMode = ExportOptions.training,
                      opset_version: int | None = ExportOptions.opset_version) -> tuple[torch._C.Graph, list[str]]:
    """The captured graph and the names of its ops without a conversion at ``opset_version``
    (as the legacy ``utils.unconvertible_ops``)."""
    options = ExportOptions(training=training, opset_version=opset_version)
    captured = capture_mod.capture(model, capture_mod.normalize_args(model, args, None), options.training)
    graph = prepare(captured.graph)
    return graph, [op.name for op in find_unsupported(graph, options.opset_version)]


def audit(model, args=(), *, kwargs=None, options: ExportOptions | None = None, **option_kwargs) -> AuditReport:
    """Everything that keeps ``model`` from exporting at ``opset_version``, where, and what to do.

    Takes ``export``'s options by keyword (``opset_version``, ``training``, ``dynamic_axes``,
    ``input_names``, ``operator_export_type``, ...), since they decide what converts, or checked
    already as ``options`` (as the CLI gives them). Runs the conversion export runs (nothing is
    written) and goes on past each failure, so every problem is reported at once.
    """
    from .api import check_against_graph, checked_args, conversion_options, options_given  # noqa: PLC0415
    from .symbolic import registry

    if options is None:
        options = options_given(option_kwargs, "audit")
    elif option_kwargs:
        raise TypeError(f"audit() got options= and option keywords {sorted(option_kwargs)}; give one or the other")
    args = checked_args(model, args, kwargs)
    opset = options.opset_version
    inlining = options.autograd_inlining and not registry.has_custom("prim::PythonOp", opset)
    captured = capture_mod.capture(model, args, options.training, inlining)
    prepare(captured.graph)
    check_against_graph(captured, options)
    total = sum(1 for _ in captured.graph.nodes())
    converter = Converter(captured, conversion_options(model, options), collect=True)
    converter.run()
    return AuditReport(opset, converter.unsupported, total, list(converter.issues), converter.not_reached)
