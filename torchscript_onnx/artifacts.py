"""What ``export(report=, profile=, dump_exported_program=, artifacts_dir=)`` writes, as the dynamo
exporter does: a Markdown report of the export (``onnx_export_<timestamp>_<status>.md``), a profile
of where the export spent its time, and the captured TorchScript graph.

The report is written also when the export fails (that is when it helps most); the export's own
error is then raised as it is, with the report's path added to its notes.
"""

from __future__ import annotations

import collections
import cProfile
import datetime
import io
import os
import pstats
import traceback

import torch

PROFILE_LINES = 40


class Artifacts:
    """Collects what the export did; ``finish`` writes the files that were asked for."""

    def __init__(self, report: bool, profile: bool, dump_graph: bool, artifacts_dir) -> None:
        self.report, self.profile, self.dump_graph = report, profile, dump_graph
        self.folder = os.fspath(artifacts_dir)
        self.timestamp = datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S-%f")
        self.profiler = cProfile.Profile() if profile else None
        self.steps: list[tuple[str, str]] = []  # (step, outcome)
        self.options: dict = {}

    @property
    def wanted(self) -> bool:
        return self.report or self.profile or self.dump_graph

    def start(self) -> None:
        if self.wanted:
            os.makedirs(self.folder, exist_ok=True)
        if self.profiler is not None:
            self.profiler.enable()

    def step(self, name: str, outcome: str = "ok") -> None:
        self.steps.append((name, outcome))

    def dump(self, graph: torch._C.Graph) -> None:
        """The captured TorchScript graph: this exporter's counterpart of the dynamo exporter's program."""
        if self.dump_graph:
            path = os.path.join(self.folder, f"onnx_export_{self.timestamp}_torchscript.txt")
            with open(path, "w", encoding="utf-8") as file:
                file.write(str(graph))

    def finish(self, exported=None, error: BaseException | None = None, verification=None) -> str | None:
        """Stop profiling and write the report; returns the report's path (None if none was asked for)."""
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
        lines += [f"| {name} | {outcome} |" for name, outcome in self.steps]
        lines += ["", "## Options", "", "```"] + [f"{k} = {v!r}" for k, v in self.options.items()] + ["```", ""]
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


def _shape(value) -> str:
    dtype = str(value.dtype).replace("torch.", "") if value.dtype is not None else "?"
    dims = "?" if value.shape is None else ", ".join(str(d) for d in value.shape)
    return f"{dtype}[{dims}]"
