"""Progress of an export: one line per stage through ``logging``, and a bar for long weight writes.

Stage lines go to the logger ``"torchscript_onnx"``: capture, prepare, convert, optimize and write,
each with its time and counts (nodes, initializers and their bytes, bytes written). A line is
logged at DEBUG while the export is fast and at INFO once the export has been running for
``SLOW_SECONDS`` (measured when the stage ends), so a quick export stays as quiet as the legacy
exporter's at INFO, and a slow one reports where its time goes; its closing line (``done``) holds
every stage's time. Nothing is printed unless logging is configured to show it
(``logging.basicConfig(level=logging.INFO)``). ``verbose=True`` keeps its legacy meaning (print
the graph) and does not change these lines.

The bar: writing ``BAR_MIN_BYTES`` or more to a path with stderr on a terminal draws a one-line
bar on stderr, erased when the write ends. It is off when stderr is not a terminal, when the
environment sets ``TORCHSCRIPT_ONNX_PROGRESS=0``, or when the ``"torchscript_onnx"`` logger's own
level is set above INFO (``logging.getLogger("torchscript_onnx").setLevel(logging.WARNING)``).
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable

logger = logging.getLogger("torchscript_onnx")

# An export running this long (seconds, when a stage ends) logs its stage lines at INFO.
SLOW_SECONDS = 2.0
# Writes of this many bytes and more draw a bar on a terminal.
BAR_MIN_BYTES = 256 * 2**20
# Redraw the bar at most this often (seconds).
BAR_INTERVAL = 0.1
BAR_WIDTH = 30
# A write through the bar is passed on in pieces of at most this many bytes.
BAR_CHUNK = 32 * 2**20


def size_text(nbytes: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} B"


def graph_counts(graph) -> dict[str, int]:
    """Counts of a converted graph (``ir.Graph``): nodes, initializers and their bytes."""
    return {
        "nodes": len(graph.nodes),
        "initializers": len(graph.initializers),
        "bytes": sum(t.numel() * t.element_size() for t in graph.initializers.values()),
    }


def jit_counts(captured) -> dict[str, int]:
    """Counts of a captured TorchScript graph: its top-level nodes and parameters."""
    return {
        "nodes": sum(1 for _ in captured.graph.nodes()),
        "parameters": len(captured.params),
        "bytes": sum(t.numel() * t.element_size() for _, _, t in captured.params),
    }


def _counts_text(counts: dict) -> str:
    parts = []
    for key, value in counts.items():
        if key == "bytes":
            parts.append(size_text(value))
        elif isinstance(value, int) and not isinstance(value, bool):
            parts.append(f"{value} {key}")
        else:
            parts.append(f"{key} {value}")
    return ", ".join(parts)


class Progress:
    """The stage clock of one export: ``lap(stage, **counts)`` when a stage ends, ``finish()`` at the end."""

    def __init__(self, slow_seconds: float | None = None) -> None:
        self.slow_seconds = SLOW_SECONDS if slow_seconds is None else slow_seconds
        self.start = self.last = time.perf_counter()
        self.laps: list[tuple[str, float]] = []

    def level(self) -> int:
        return logging.INFO if time.perf_counter() - self.start >= self.slow_seconds else logging.DEBUG

    def lap(self, stage: str, counted: Callable[[], dict] | None = None, **counts) -> float:
        """Log ``stage`` as done, with the time since the previous lap and ``counts`` (plus what
        ``counted()`` returns: counting a graph's nodes walks it, so only a log line pays for it);
        returns that time."""
        now = time.perf_counter()
        seconds, self.last = now - self.last, now
        self.laps.append((stage, seconds))
        level = self.level()
        if logger.isEnabledFor(level):
            if counted is not None:
                counts = {**counted(), **counts}
            detail = _counts_text(counts)
            logger.log(level, "%s: %.2f s%s", stage, seconds, f"; {detail}" if detail else "",
                       extra={"stage": stage, "seconds": seconds, "counts": counts})
        return seconds

    def finish(self) -> None:
        level = self.level()
        if logger.isEnabledFor(level):
            total = time.perf_counter() - self.start
            stages = ", ".join(f"{stage} {seconds:.2f} s" for stage, seconds in self.laps)
            logger.log(level, "done in %.2f s (%s)", total, stages,
                       extra={"stage": "done", "seconds": total, "counts": {}})


def bar_wanted(total: int, stream=None) -> bool:
    """A bar for a write of ``total`` bytes: large, stderr a terminal, not silenced."""
    stream = sys.stderr if stream is None else stream
    if total < BAR_MIN_BYTES or os.environ.get("TORCHSCRIPT_ONNX_PROGRESS", "1") == "0":
        return False
    if logger.disabled or logger.level > logging.INFO:
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (ValueError, OSError):  # a closed stream
        return False


class WriteBar:
    """``writing model.onnx [#####-----] 45% 1.2 GiB/2.6 GiB``, redrawn in place, erased on close."""

    def __init__(self, total: int, label: str, stream=None) -> None:
        self.total, self.label = max(total, 1), label
        self.stream = sys.stderr if stream is None else stream
        self.done = 0
        self.drawn = 0.0
        self.width = 0

    def update(self, nbytes: int) -> None:
        self.done += nbytes
        now = time.perf_counter()
        if now - self.drawn >= BAR_INTERVAL:
            self.drawn = now
            self._draw()

    def _draw(self) -> None:
        fraction = min(self.done / self.total, 1.0)
        filled = int(fraction * BAR_WIDTH)
        text = (f"writing {self.label} [{'#' * filled}{'-' * (BAR_WIDTH - filled)}] {fraction:4.0%} "
                f"{size_text(self.done)}/{size_text(self.total)}")
        self.width = max(self.width, len(text))
        self._put("\r" + text.ljust(self.width))

    def close(self) -> None:
        if self.width:
            self._put("\r" + " " * self.width + "\r")

    def _put(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # the terminal went away: the write goes on without a bar
            self.width = 0


def write_bar(total: int, label: str) -> WriteBar | None:
    """A bar for writing ``total`` bytes to ``label``, or None when none is wanted (``bar_wanted``)."""
    return WriteBar(total, label) if bar_wanted(total) else None


class CountingStream:
    """A binary stream that reports each write's size to ``bar`` before passing it on."""

    def __init__(self, stream, bar: WriteBar) -> None:
        self.stream, self.bar = stream, bar

    def fileno(self) -> int:
        return self.stream.fileno()

    def seekable(self) -> bool:
        return self.stream.seekable()

    def seek(self, offset: int) -> int:
        return self.stream.seek(offset)

    def truncate(self, size: int) -> int:
        return self.stream.truncate(size)

    def flush(self) -> None:
        self.stream.flush()

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        for start in range(0, view.nbytes, BAR_CHUNK):  # a large tensor moves the bar as it goes
            piece = view[start:start + BAR_CHUNK]
            self.stream.write(piece)
            self.bar.update(piece.nbytes)
        return view.nbytes
