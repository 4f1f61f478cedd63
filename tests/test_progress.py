"""Progress: stage lines on the ``torchscript_onnx`` logger (DEBUG while fast, INFO once slow) and
the write bar, drawn only on a terminal."""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
import textwrap

import onnx
import pytest
import torch

import torchscript_onnx as tso
from torchscript_onnx.pipeline import progress
from torchscript_onnx.api import build

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAGES = ["capture", "prepare", "convert", "optimize", "write", "done"]


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.first = torch.nn.Linear(32, 64)
        self.second = torch.nn.Linear(64, 4)

    def forward(self, x):
        return self.second(torch.relu(self.first(x)))


def _export(path, **options):
    torch.manual_seed(0)
    tso.export(Net().eval(), (torch.randn(2, 32),), path, **options)


def _stage_records(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "torchscript_onnx" and hasattr(r, "stage")]


def test_stage_lines_at_debug_carry_the_counts(tmp_path, caplog):
    path = tmp_path / "m.onnx"
    with caplog.at_level(logging.DEBUG, logger="torchscript_onnx"):
        _export(path)
    records = _stage_records(caplog)
    assert [r.stage for r in records] == STAGES
    model = onnx.load(path)
    by_stage = {r.stage: r for r in records}
    for stage in ("convert", "optimize", "write"):
        counts = by_stage[stage].counts
        assert counts["initializers"] == len(model.graph.initializer) == 4
    assert by_stage["optimize"].counts["nodes"] == len(model.graph.node)
    assert by_stage["write"].counts["bytes"] == os.path.getsize(path)
    assert by_stage["optimize"].counts["bytes"] == 4 * (32 * 64 + 64 + 64 * 4 + 4)
    assert by_stage["capture"].counts["parameters"] == 4
    assert all(r.seconds >= 0 for r in records)
    assert f"write: {by_stage['write'].seconds:.2f} s; " in by_stage["write"].getMessage()
    assert "done in" in by_stage["done"].getMessage() and "capture" in by_stage["done"].getMessage()


def test_a_fast_export_logs_nothing_at_info(tmp_path, caplog):
    _export(io.BytesIO())  # loads the conversions once, so the export below is a warm one
    with caplog.at_level(logging.INFO, logger="torchscript_onnx"):
        _export(tmp_path / "m.onnx")
    assert [r for r in caplog.records if r.name.startswith("torchscript_onnx")] == []


def test_a_slow_export_logs_every_stage_at_info(tmp_path, caplog, monkeypatch):
    monkeypatch.setattr(progress, "SLOW_SECONDS", 0.0)
    with caplog.at_level(logging.INFO, logger="torchscript_onnx"):
        _export(tmp_path / "m.onnx", verify=True)
    records = _stage_records(caplog)
    assert [r.stage for r in records] == STAGES[:4] + ["verify"] + STAGES[4:]
    assert {r.levelno for r in records} == {logging.INFO}


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


# (seconds each stage takes, the level each lap and the closing line get) at SLOW_SECONDS = 2
LEVEL_CASES = {
    "fast": ([0.1, 0.2, 0.3], ["DEBUG", "DEBUG", "DEBUG", "DEBUG"]),
    "slow_from_the_second_stage": ([0.5, 1.6, 0.1], ["DEBUG", "INFO", "INFO", "INFO"]),
    "one_long_stage": ([3.0], ["INFO", "INFO"]),
    "just_under": ([1.0, 0.99], ["DEBUG", "DEBUG", "DEBUG"]),
}


@pytest.mark.parametrize("case", LEVEL_CASES, ids=list(LEVEL_CASES))
def test_lines_turn_info_once_the_export_is_slow(case, caplog, monkeypatch):
    durations, levels = LEVEL_CASES[case]
    clock = FakeClock()
    monkeypatch.setattr(progress.time, "perf_counter", clock)
    monkeypatch.setattr(progress, "SLOW_SECONDS", 2.0)
    stages = progress.Progress()
    with caplog.at_level(logging.DEBUG, logger="torchscript_onnx"):
        for k, seconds in enumerate(durations):
            clock.now += seconds
            assert stages.lap(f"stage{k}", nodes=k) == pytest.approx(seconds)
        stages.finish()
    assert [r.levelname for r in _stage_records(caplog)] == levels
    assert _stage_records(caplog)[-1].seconds == pytest.approx(sum(durations))


# -- the bar -----------------------------------------------------------------------------------------------


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


# (stderr's class, environment, our logger's level, bar threshold in bytes, drawn?)
BAR_CASES = {
    "terminal": (Terminal, {}, logging.NOTSET, 0, True),
    "not_a_terminal": (io.StringIO, {}, logging.NOTSET, 0, False),
    "small_write": (Terminal, {}, logging.NOTSET, 2**30, False),
    "silenced_by_environment": (Terminal, {"TORCHSCRIPT_ONNX_PROGRESS": "0"}, logging.NOTSET, 0, False),
    "silenced_by_logger_level": (Terminal, {}, logging.WARNING, 0, False),
}


@pytest.mark.parametrize("case", BAR_CASES, ids=list(BAR_CASES))
def test_the_write_bar(case, tmp_path, monkeypatch):
    stream_class, environment, level, threshold, drawn = BAR_CASES[case]
    stderr = stream_class()
    monkeypatch.setattr(sys, "stderr", stderr)
    for key, value in environment.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(progress, "BAR_MIN_BYTES", threshold)
    monkeypatch.setattr(progress, "BAR_CHUNK", 1024)
    monkeypatch.setattr(progress, "BAR_INTERVAL", 0.0)
    logger = logging.getLogger("torchscript_onnx")
    monkeypatch.setattr(logger, "level", level)
    torch.manual_seed(0)
    exported = build(Net().eval(), (torch.randn(2, 32),))
    exported.save(tmp_path / "m.onnx")
    text = stderr.getvalue()
    if not drawn:
        assert text == ""
    else:
        assert "\rwriting m.onnx [" in text and "%" in text
        assert text.endswith("\r") and text.rstrip("\r ").count("\r") >= 2  # redrawn in place, then erased
    assert (tmp_path / "m.onnx").read_bytes() == exported.to_bytes()  # the bar changes nothing written


def test_the_bar_on_a_real_terminal(tmp_path):
    """stderr on a pseudo-terminal: isatty is true without any patching of ours."""
    pty = pytest.importorskip("pty", reason="no pseudo-terminals on this platform")
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {REPO!r})
        import torch
        from torchscript_onnx.pipeline import progress
        from torchscript_onnx.api import build
        progress.BAR_MIN_BYTES = 0
        build(torch.nn.Linear(256, 256).eval(), (torch.ones(1, 256),)).save({os.fspath(tmp_path / 'm.onnx')!r})
    """)
    master, slave = pty.openpty()
    child = subprocess.Popen([sys.executable, "-c", script], stderr=slave, stdout=subprocess.DEVNULL)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert child.wait(timeout=120) == 0, out
    assert b"\rwriting m.onnx [" in out and out.endswith(b"\r")
