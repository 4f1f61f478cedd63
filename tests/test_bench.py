"""Smoke test of the benchmark runner: one tiny model, one repeat, no dynamo (memory still in subprocesses)."""

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import pytest  # noqa: E402

from bench.run import COLUMNS, main, misses, summarize  # noqa: E402

EXPECTED = [
    "model", "export ours ms", "ratio ours/legacy", "ratio ours/dynamo", "peak ours MB", "budget MB",
    "peak legacy MB", "peak dynamo MB", "nodes ours/legacy/dynamo", "file MB (files) ours/legacy/dynamo",
    "ORT ours ms", "ORT ours/legacy", "ORT ours/dynamo", "ORT A/A",
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
    for col in ("export ours ms", "ratio ours/legacy", "ORT ours/legacy", "ORT A/A"):
        assert float(row[col]) > 0, (col, row[col])
        assert float(median[col]) > 0, (col, median[col])
    for col in ("peak ours MB", "budget MB", "peak legacy MB"):  # the delta may be 0 for a tiny model
        assert float(row[col]) >= 0, (col, row[col])
    assert "geometric mean" in stdout
    ours, legacy, dynamo = (c.strip() for c in row["nodes ours/legacy/dynamo"].split(" / "))
    assert int(ours) > 0 and int(legacy) > 0 and dynamo == "n/a"
    assert row["file MB (files) ours/legacy/dynamo"].startswith("0.0 (1) / 0.0 (1) / n/a")
    assert row["ratio ours/dynamo"] == row["peak dynamo MB"] == row["ORT ours/dynamo"] == "n/a"

    with open(tmp_path / "latest.md") as f:
        assert f.read() in stdout
    with open(tmp_path / "latest.json") as f:
        result = json.load(f)
    summary = result["summary"]["tiny_mlp"]
    assert summary["ours_over_legacy"] > 0 and summary["ort_over_legacy"] > 0
    assert result["models"][0]["ort"]["outputs_agree"] == {"legacy": True}
    assert summary["nodes_ours"] > 0 and summary["nodes_legacy"] > 0
    assert result["models"][0]["memory"]["ours"]["weight_bytes"] == result["models"][0]["weight_bytes"] > 0


def _record(model, ort_ms, nodes, identities=None, export_s=None, peak_mb=None):
    """A bench.run record with the given onnxruntime medians (ms), node counts and export medians (s)."""
    record = {"model": model, "weight_bytes": 2**20, "nodes": nodes, "name_identities": identities or {},
              "ort": {n: {"median": ms / 1e3} for n, ms in ort_ms.items()},
              "export": {n: {"median": t} for n, t in (export_s or {"ours": 1.0, "legacy": 2.0}).items()}}
    if peak_mb is not None:
        record["memory"] = {n: {"delta_bytes": int(mb * 2**20)} for n, mb in peak_mb.items()}
    return record


@pytest.mark.parametrize("record, expected", [
    # within 2% of the faster of legacy and dynamo: no miss
    (_record("gpt2", {"ours": 101, "ours again": 100, "legacy": 110, "dynamo": 100}, {}), []),
    # 3% slower than dynamo: a miss, with the A/A figure to read it against
    (_record("gpt2", {"ours": 103, "ours again": 99, "legacy": 110, "dynamo": 100}, {}),
     ["- gpt2: onnxruntime ours/best 1.030 > 1.02 (A/A 0.961"]),
    # more nodes than dynamo on a transformer
    (_record("bert_base", {}, {"ours": 450, "legacy": 600, "dynamo": 443}),
     ["- bert_base: nodes ours 450 > dynamo 443"]),
    # the Identity nodes that keep merged initializers' names are not counted
    (_record("bert_base", {}, {"ours": 533, "legacy": 716, "dynamo": 443}, {"ours": 127, "legacy": 119}), []),
    # node counts are held to dynamo's on the transformers only
    (_record("unet_small", {}, {"ours": 155, "legacy": 223, "dynamo": 142}), []),
    # export slower than legacy, and memory over the budget (forward 10 MiB + 0.1 x 1 MiB)
    (_record("mnist", {}, {}, export_s={"ours": 3.0, "legacy": 2.0}, peak_mb={"forward": 10, "ours": 11}),
     ["- export time ours/legacy, geometric mean 1.50", "- mnist: export time ours/legacy 1.50",
      "- mnist: peak memory above the model 11.0 MB > budget 10.1 MB"]),
])
def test_misses(record, expected):
    found = misses([record], [summarize(record)])
    assert len(found) == len(expected), found
    for line, start in zip(found, expected):
        assert line.startswith(start), (line, start)
