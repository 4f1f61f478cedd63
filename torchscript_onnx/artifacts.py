"""What ``export(report=, profile=, dump_exported_program=, artifacts_dir=)`` writes, as the dynamo
exporter does: a Markdown report of the export (``onnx_export_<timestamp>_<status>.md``), a profile
of where the export spent its time, and the captured TorchScript graph.

The report is written also when the export fails (that is when it helps most): it names the step
that failed with its error, and the options in effect (the opset the export used, not ``None``).
The export's own error is then raised as it is, with the report's path added to its notes.
"""

from __future__ import annotations

import collections
import cProfile
import dataclasses
import datetime
import io
import os
import pstats
import traceback

import torch

PROFILE_LINES = 40
RUNNING = "running"


class Artifacts:
    """Collects what the export did; ``finish`` writes the files that were asked for."""

    def __init__(self, report: bool, profile: bool, dump_graph: bool, artifacts_dir) -> None:
        self.report, self.profile, self.dump_graph = report, profile, dump_graph
        self.folder = os.fspath(artifacts_dir)
        self.timestamp = datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S-%f")
        self.profiler = cProfile.Profile() if profile else None
        self.steps: list[list[str]] = []  # [step, outcome]; the last one's outcome is "running" until it ends
        self.options: dict = {}  # as given to export; the checked ones replace them (``in_effect``)
        self.checked = False

    @property
    def wanted(self) -> bool:
        return self.report or self.profile or self.dump_graph

    def start(self) -> None:
        if self.wanted:
            os.makedirs(self.folder, exist_ok=True)
        if self.profiler is not None:
            self.profiler.enable()

    def begin(self, name: str) -> None:
        """A step of the export starts (so the one before it ended well)."""
        self._end_step("ok")
        self.steps.append([name, RUNNING])

    def _end_step(self, outcome: str) -> None:
        if self.steps and self.steps[-1][1] == RUNNING:
            self.steps[-1][1] = outcome

    def in_effect(self, options) -> None:
        """The checked options (an ``ExportOptions``): the report shows these, defaults resolved."""
        self.options.update({field.name: getattr(options, field.name) for field in dataclasses.fields(options)})
        self.checked = True

    def dump(self, graph: torch._C.Graph) -> None:
        """The captured TorchScript graph: this exporter's counterpart of the dynamo exporter's program."""
        if self.dump_graph:
            path = os.path.join(self.folder, f"onnx_export_{self.timestamp}_torchscript.txt")
            with open(path, "w", encoding="utf-8") as file:
                file.write(str(graph))

    def finish(self, exported=None, error: BaseException | None = None, verification=None) -> str | None:
        """End the running step (failed with ``error``, if any), stop profiling and write the report;
        returns the report's path (None if none was asked for)."""
        self._end_step("ok" if error is None else f"**failed**: {_error_line(error)}")
        profile_text = self._profile_text()
        if self.profile and not self.report and profile_text:
            print(profile_text)
        if not self.report:
            return None
        status = "success" if error is None else "failure"
        path = os.path.join(self.folder, f"onnx_export_{self.timestamp}_{status}.md")
        with open(path, "w", encoding="utf-8") as file:
            file.write(self._markdown(exported, error, verification, profile_text))
        if error is not None and hasattr(error, "add_note"):
            error.add_note(f"Export report saved to {path!r}.")
        return path

    def _profile_text(self) -> str:
        if self.profiler is None:
            return ""
        self.profiler.disable()
        out = io.StringIO()
        pstats.Stats(self.profiler, stream=out).sort_stats("cumulative").print_stats(PROFILE_LINES)
        return out.getvalue()

    def _markdown(self, exported, error, verification, profile_text: str) -> str:
        lines = [f"# ONNX export report ({self.timestamp})", "", f"Exporter: torchscript-onnx, torch {torch.__version__}", ""]
        lines += ["## Steps", "", "| step | outcome |", "| --- | --- |"]
        lines += [f"| {name} | {outcome.replace('|', '&#124;')} |" for name, outcome in self.steps]
        lines += ["", "## Options" + ("" if self.checked else " (as given: checking them failed)"), "", "```"]
        lines += [f"{k} = {v!r}" for k, v in self.options.items()] + ["```", ""]
        if error is not None:
            lines += ["## Error", "", "```", "".join(traceback.format_exception(error)).rstrip(), "```", ""]
        if exported is not None:
            graph = exported.graph
            lines += ["## Graph", "", f"- opset {exported.options.opset_version}", f"- {len(graph.nodes)} nodes, "
                      f"{len(graph.initializers)} initializers",
                      "- inputs: " + ", ".join(f"`{v.name}` {_shape(v)}" for v in graph.inputs),
                      "- outputs: " + ", ".join(f"`{v.name}` {_shape(v)}" for v in graph.outputs), "",
                      "| op | count |", "| --- | --- |"]
            counts = collections.Counter(n.op_type if not n.domain else f"{n.domain}::{n.op_type}" for n in graph.nodes)
            lines += [f"| {op} | {n} |" for op, n in counts.most_common()] + [""]
        if verification is not None:
            lines += ["## Verification (onnxruntime against PyTorch)", "", "| output | shape | max abs diff |",
                      "| --- | --- | --- |"]
            lines += [f"| {c.output} | {c.shape} | {c.max_abs_diff:.3g} |" for c in verification] + [""]
        if profile_text:
            lines += ["## Profile", "", "```", profile_text.rstrip(), "```", ""]
        return "\n".join(lines)


def _error_line(error: BaseException, limit: int = 300) -> str:
    """``Type: message`` on one line, cut at ``limit`` characters (the Error section has all of it)."""
    text = " ".join(line.strip() for line in str(error).splitlines() if line.strip())
    text = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _shape(value) -> str:
    dtype = str(value.dtype).replace("torch.", "") if value.dtype is not None else "?"
    dims = "?" if value.shape is None else ", ".join(str(d) for d in value.shape)
    return f"{dtype}[{dims}]"
