"""Smoke test of the benchmark runner: one tiny model, one repeat, no dynamo (memory still in subprocesses)."""

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.run import COLUMNS, main  # noqa: E402

EXPECTED = [
    "model", "export ours ms", "ratio ours/legacy", "ratio ours/dynamo", "peak ours MB", "budget MB",
    "peak legacy MB", "nodes ours/legacy", "ORT latency ratio",
]


def _cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def test_runner_on_tiny_model(tmp_path, capsys):
    main(["--models", "tiny_mlp", "--repeat", "1", "--no-dynamo", "--ort-runs", "3", "--out-dir", str(tmp_path)])
    stdout = capsys.readouterr().out

    lines = stdout.splitlines()
    header = next(_cells(line) for line in lines if line.startswith("| model"))
    assert header == COLUMNS
    assert all(col in header for col in EXPECTED)
    row = dict(zip(header, _cells(next(line for line in lines if line.startswith("| tiny_mlp")))))
    median = dict(zip(header, _cells(next(line for line in lines if line.startswith("| **median**")))))
    assert not row["model"].endswith("*"), stdout  # no measurement failed
    for col in ("export ours ms", "ratio ours/legacy", "ORT latency ratio"):
        assert float(row[col]) > 0, (col, row[col])
        assert float(median[col]) > 0, (col, median[col])
    for col in ("peak ours MB", "budget MB", "peak legacy MB"):  # the delta may be 0 for a tiny model
        assert float(row[col]) >= 0, (col, row[col])
    assert "geometric mean" in stdout
    assert float(row["nodes ours/legacy"].split()[0]) > 0
    assert row["ratio ours/dynamo"] == "n/a"

    with open(tmp_path / "latest.md") as f:
        assert f.read() in stdout
    with open(tmp_path / "latest.json") as f:
        result = json.load(f)
    summary = result["summary"]["tiny_mlp"]
    assert summary["ours_over_legacy"] > 0 and summary["ort_ratio"] > 0
    assert summary["nodes_ours"] > 0 and summary["nodes_legacy"] > 0
    assert result["models"][0]["memory"]["ours"]["weight_bytes"] == result["models"][0]["weight_bytes"] > 0
