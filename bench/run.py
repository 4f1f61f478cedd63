"""Export time, peak memory, graph size and runtime latency of our exporter against torch.onnx.

    python -m bench.run [--models a,b] [--repeat N] [--no-dynamo] [--opset N] [--ort-runs K]

For each model, in one run: export time (median of N after one warm-up, the exporters interleaved
round by round so they share the machine's noise) for ours, legacy (``dynamo=False``) and dynamo
(``dynamo=True``); peak memory above the built model, each (exporter, model) in a fresh process
(bench/memory.py), and the budget it is held to (one no-grad forward pass, measured the same way,
plus 0.1x the weights); node counts of both graphs; onnxruntime latency of both files (median of K,
interleaved). Prints a markdown table and writes bench/results/latest.md and latest.json.
See bench/README.md for how to read it.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import tempfile
import time

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import exporters, memory, models  # noqa: E402

RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")

COLUMNS = [
    "model", "weights MB", "export ours ms", "ratio ours/legacy", "ratio ours/dynamo",
    "peak ours MB", "budget MB", "peak legacy MB", "nodes ours/legacy", "ORT latency ratio",
]

# The targets this project set itself (issue 12); misses are listed under the table. Export time:
# the geometric mean of ours/legacy, and every model on its own. Memory: the peak above the built
# model within the budget, one no-grad forward pass of the model plus a tenth of its weight bytes
# (memory.budget).
TARGET_EXPORT_GEOMEAN = 0.5
TARGET_EXPORT_EACH = 1.0
MEMORY_RUNS = (memory.FORWARD, "ours", "legacy")


def _ratio(a, b):
    if a is None or b is None or not b:
        return None
    return a / b


def rotations(names: list, rounds: int):
    """``names`` in an order that rotates each round, so none always runs first or right after
    another's garbage (an onnxruntime session that always ran first measured up to 8% slower
    than a second session of the same file: Whisper-tiny's encoder, 1 thread)."""
    for r in range(rounds):
        k = r % len(names) if names else 0
        yield names[k:] + names[:k]


def time_exports(model, args, names, opset, repeat, tmp) -> dict:
    """Median wall time in seconds per exporter; one warm-up each, then ``repeat`` interleaved rounds.

    The order of the exporters rotates each round so none always runs right after another's garbage.
    Returns {name: {"times": [...], "median": s, "path": file, "error": str | None}}.
    """
    out = {n: {"times": [], "median": None, "path": os.path.join(tmp, f"{n}.onnx"), "error": None} for n in names}
    live = []
    for n in names:  # warm-up, also finds which exporters fail on this model
        try:
            exporters.run(n, model, args, out[n]["path"], opset)
            live.append(n)
        except Exception as e:  # noqa: BLE001 - recorded in the report
            out[n]["error"] = exporters.short_error(e)
    for order in rotations(live, repeat):
        for n in order:
            gc.collect()
            start = time.perf_counter()
            exporters.run(n, model, args, out[n]["path"], opset)
            out[n]["times"].append(time.perf_counter() - start)
    for n in live:
        if out[n]["times"]:
            out[n]["median"] = statistics.median(out[n]["times"])
    return out


def count_nodes(graph) -> int:
    """Nodes of an ONNX graph, those in subgraphs (If/Loop/Scan bodies) included."""
    import onnx

    total = 0
    for node in graph.node:
        total += 1
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                total += count_nodes(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                total += sum(count_nodes(g) for g in attr.graphs)
    return total


def model_nodes(path) -> int:
    import onnx

    proto = onnx.load(path, load_external_data=False)
    return count_nodes(proto.graph) + sum(len(f.node) for f in proto.functions)


def ort_latency(paths: dict, args, runs: int) -> dict:
    """Median onnxruntime latency per file (single thread, interleaved), and whether outputs agree."""
    import numpy as np
    import onnxruntime as ort

    tensors = [t.detach().cpu().numpy() for t in models.flat_tensors(args)]
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    sessions, feeds, out = {}, {}, {}
    for name, path in paths.items():
        try:
            sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
            inputs = sess.get_inputs()
            if len(inputs) != len(tensors):
                raise ValueError(f"{len(inputs)} graph inputs for {len(tensors)} example tensors")
            feeds[name] = {i.name: t for i, t in zip(inputs, tensors)}
            for _ in range(3):
                sess.run(None, feeds[name])
            sessions[name] = sess
            out[name] = {"times": [], "median": None, "error": None}
        except Exception as e:  # noqa: BLE001 - recorded in the report
            out[name] = {"times": [], "median": None, "error": exporters.short_error(e)}
    for order in rotations(list(sessions), runs):
        for name in order:
            start = time.perf_counter()
            sessions[name].run(None, feeds[name])
            out[name]["times"].append(time.perf_counter() - start)
    for name in sessions:
        out[name]["median"] = statistics.median(out[name]["times"])
    if len(sessions) == 2:
        a, b = (sessions[n].run(None, feeds[n]) for n in sessions)
        out["outputs_agree"] = len(a) == len(b) and all(
            x.shape == y.shape and np.allclose(x, y, rtol=1e-3, atol=1e-4, equal_nan=True) for x, y in zip(a, b)
        )
    return out


def default_names() -> list[str]:
    """The zoo and bench.latency's transformers (the local tiny models only when there is no zoo)."""
    from bench import latency

    zoo = models.default_names()
    return zoo + [n for n in latency.MODELS if n not in zoo] if models.zoo_models() else zoo


def bench_model(name, *, repeat, opset, dynamo, ort_runs, memory_timeout, threads=0) -> dict:
    record = {"model": name}
    try:
        model, args = memory.build_model(name)
    except Exception as e:  # noqa: BLE001
        record["error"] = "build: " + exporters.short_error(e)
        return record
    record["weight_bytes"] = models.weight_bytes(model)
    names = ["ours", "legacy"] + (["dynamo"] if dynamo else [])
    with tempfile.TemporaryDirectory() as tmp:
        timing = time_exports(model, args, names, opset, repeat, tmp)
        record["export"] = {n: {k: v for k, v in t.items() if k != "path"} for n, t in timing.items()}
        ok = [n for n in ("ours", "legacy") if timing[n]["error"] is None]
        record["nodes"] = {n: model_nodes(timing[n]["path"]) for n in ok}
        if "dynamo" in timing and timing["dynamo"]["error"] is None:
            record["nodes"]["dynamo"] = model_nodes(timing["dynamo"]["path"])
        record["ort"] = ort_latency({n: timing[n]["path"] for n in ok}, args, ort_runs) if ok else {}
    del model, args
    gc.collect()
    record["memory"] = {n: memory.measure(name, n, opset, threads=threads, timeout=memory_timeout)
                        for n in MEMORY_RUNS}
    return record


def summarize(record) -> dict:
    """The table's numbers for one model (None where a measurement failed)."""
    exp, mem, nodes, ort = record.get("export", {}), record.get("memory", {}), record.get("nodes", {}), record.get("ort", {})

    def med(d, n):
        return (d.get(n) or {}).get("median")

    def peak(n):
        m = mem.get(n) or {}
        return None if m.get("error") else m.get("delta_bytes")

    def mb(nbytes):
        return None if nbytes is None else nbytes / 2**20

    ours = med(exp, "ours")
    return {
        "weights_mb": record.get("weight_bytes", 0) / 2**20 if "weight_bytes" in record else None,
        "export_ours_ms": ours * 1e3 if ours is not None else None,
        "ours_over_legacy": _ratio(ours, med(exp, "legacy")),
        "ours_over_dynamo": _ratio(ours, med(exp, "dynamo")),
        "mem_ours_mb": mb(peak("ours")),
        "budget_mb": mb(memory.budget(peak(memory.FORWARD), record.get("weight_bytes"))),
        "mem_legacy_mb": mb(peak("legacy")),
        "nodes_ours": nodes.get("ours"),
        "nodes_legacy": nodes.get("legacy"),
        "nodes_ratio": _ratio(nodes.get("ours"), nodes.get("legacy")),
        "ort_ratio": _ratio(med(ort, "ours"), med(ort, "legacy")),
    }


def _fmt(x, digits=2):
    if x is None:
        return "n/a"
    if abs(x) >= 1000:
        return f"{x:.0f}"
    return f"{x:.{digits}f}"


def _median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def _geomean(xs):
    xs = [x for x in xs if x is not None and x > 0]
    return statistics.geometric_mean(xs) if xs else None


def _errors(record):
    out = []
    if record.get("error"):
        out.append(("all", record["error"]))
    for n, t in record.get("export", {}).items():
        if t.get("error"):
            out.append((f"export {n}", t["error"]))
    for n, m in record.get("memory", {}).items():
        if m.get("error") and not any(k == f"export {n}" for k, _ in out):
            out.append((f"memory {n}", m["error"]))
    for n, o in record.get("ort", {}).items():
        if isinstance(o, dict) and o.get("error"):
            out.append((f"onnxruntime {n}", o["error"]))
    if record.get("ort", {}).get("outputs_agree") is False:
        out.append(("onnxruntime", "outputs of ours and legacy differ (rtol 1e-3, atol 1e-4)"))
    return out


def markdown(records, meta) -> str:
    rows, sums = [], []
    for rec in records:
        s = summarize(rec)
        sums.append(s)
        nodes = "n/a" if s["nodes_ratio"] is None else f"{s['nodes_ratio']:.2f} ({s['nodes_ours']}/{s['nodes_legacy']})"
        flag = " *" if _errors(rec) else ""
        rows.append([
            rec["model"] + flag, _fmt(s["weights_mb"]), _fmt(s["export_ours_ms"], 1), _fmt(s["ours_over_legacy"]),
            _fmt(s["ours_over_dynamo"]), _fmt(s["mem_ours_mb"], 1), _fmt(s["budget_mb"], 1),
            _fmt(s["mem_legacy_mb"], 1), nodes, _fmt(s["ort_ratio"]),
        ])
    keys = ["weights_mb", "export_ours_ms", "ours_over_legacy", "ours_over_dynamo", "mem_ours_mb", "budget_mb",
            "mem_legacy_mb", "nodes_ratio", "ort_ratio"]
    med = {k: _median([s[k] for s in sums]) for k in keys}
    rows.append([
        "**median**", _fmt(med["weights_mb"]), _fmt(med["export_ours_ms"], 1), _fmt(med["ours_over_legacy"]),
        _fmt(med["ours_over_dynamo"]), _fmt(med["mem_ours_mb"], 1), _fmt(med["budget_mb"], 1),
        _fmt(med["mem_legacy_mb"], 1), _fmt(med["nodes_ratio"]), _fmt(med["ort_ratio"]),
    ])
    geomean = _geomean([s["ours_over_legacy"] for s in sums])
    lines = [
        f"# Export benchmark ({meta['date']})",
        "",
        f"`{meta['command']}`  ",
        f"opset {meta['opset']}, export time median of {meta['repeat']} after 1 warm-up, onnxruntime median of "
        f"{meta['ort_runs']} (1 thread); torch threads {meta['threads'] or 'default'}; torch {meta['torch']}, onnxruntime {meta['onnxruntime']}, "
        f"onnxscript {meta['onnxscript']}, {meta['cpus']} CPUs. Ratios < 1 mean ours is faster/smaller.",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "|".join("---" for _ in COLUMNS) + "|",
    ]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    notes = [(rec["model"], where, msg) for rec in records for where, msg in _errors(rec)]
    if notes:
        lines += ["", "\\* errors:", ""] + [f"- {m} / {w}: {msg}" for m, w, msg in notes]
    misses = []
    if geomean is not None and geomean > TARGET_EXPORT_GEOMEAN:
        misses.append(f"- export time ours/legacy, geometric mean {geomean:.2f} > {TARGET_EXPORT_GEOMEAN}")
    for rec, s in zip(records, sums):
        if s["ours_over_legacy"] is not None and s["ours_over_legacy"] > TARGET_EXPORT_EACH:
            misses.append(f"- {rec['model']}: export time ours/legacy {s['ours_over_legacy']:.2f} > {TARGET_EXPORT_EACH}")
        if None not in (s["mem_ours_mb"], s["budget_mb"]) and s["mem_ours_mb"] > s["budget_mb"]:
            misses.append(f"- {rec['model']}: peak memory above the model {s['mem_ours_mb']:.1f} MB > budget "
                          f"{s['budget_mb']:.1f} MB ({s['mem_ours_mb'] / s['budget_mb']:.2f}x)")
    lines += ["", f"Export time ours/legacy: geometric mean {_fmt(geomean)}. Targets: that mean <= "
              f"{TARGET_EXPORT_GEOMEAN} and every model <= {TARGET_EXPORT_EACH}; peak memory above the built "
              f"model (peak ours MB) within the budget: one no-grad forward pass of the model, measured the same "
              f"way, plus {memory.BUDGET_WEIGHT_FRACTION} x its weight bytes.", ""]
    lines += (["Missed:", ""] + misses) if misses else ["All targets met."]
    return "\n".join(lines) + "\n"


def _versions() -> dict:
    import onnxruntime
    import torch

    try:
        import onnxscript
        onnxscript_version = onnxscript.__version__
    except ImportError:
        onnxscript_version = "not installed"
    return {"torch": torch.__version__, "onnxruntime": onnxruntime.__version__, "onnxscript": onnxscript_version}


def _write(out_dir, meta, records, partial) -> dict:
    text = markdown(records, {**meta, "date": meta["date"] + (" partial" if partial else "")})
    with open(os.path.join(out_dir, "latest.md"), "w") as f:
        f.write(text)
    result = {"meta": {**meta, "partial": partial}, "columns": COLUMNS, "models": records,
              "summary": {r["model"]: summarize(r) for r in records}, "markdown": text}
    with open(os.path.join(out_dir, "latest.json"), "w") as f:
        json.dump(result, f, indent=1)
    return result


def parse_args(argv=None):
    import torchscript_onnx

    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.splitlines()[0])
    parser.add_argument("--models", help="comma-separated model names (default: the zoo and the transformers)")
    parser.add_argument("--repeat", type=int, default=5, help="timed exports per exporter (default 5)")
    parser.add_argument("--no-dynamo", action="store_true", help="skip torch.onnx.export(dynamo=True)")
    parser.add_argument("--opset", type=int, default=torchscript_onnx.DEFAULT_OPSET)
    parser.add_argument("--ort-runs", type=int, default=20, help="onnxruntime runs per file (default 20)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch intra-op threads for the exports (default 1; 0: torch's default)")
    parser.add_argument("--memory-timeout", type=float, default=1800, help="seconds per memory subprocess")
    parser.add_argument("--out-dir", default=RESULTS_DIR, help="where latest.md and latest.json go")
    parser.add_argument("--list", action="store_true", help="list the model names and exit")
    ns = parser.parse_args(argv)
    if ns.repeat < 1:
        parser.error("--repeat must be >= 1")
    if ns.ort_runs < 1:
        parser.error("--ort-runs must be >= 1")
    if ns.threads < 0:
        parser.error("--threads must be >= 0")
    return ns


def main(argv=None) -> dict:
    ns = parse_args(argv)
    if ns.list:
        print("\n".join(memory.known_models()))
        return {}
    known = memory.known_models()
    names = [n.strip() for n in ns.models.split(",") if n.strip()] if ns.models else default_names()
    if not names:
        raise SystemExit("--models names no model")
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    if ns.threads > 0:
        # Tracing runs the model; on a shared machine torch's OpenMP threads busy-wait for each other
        # and make that part several times slower than one thread does, which drowns the comparison.
        import torch

        torch.set_num_threads(ns.threads)
    dynamo = not ns.no_dynamo
    missing = exporters.dynamo_missing() if dynamo else None
    argv_text = " ".join(sys.argv[1:] if argv is None else argv)
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "command": f"python -m bench.run {argv_text}".strip(),
        "opset": ns.opset, "repeat": ns.repeat, "ort_runs": ns.ort_runs, "dynamo": dynamo, "threads": ns.threads,
        "cpus": os.cpu_count(), "platform": platform.platform(), **_versions(),
    }
    os.makedirs(ns.out_dir, exist_ok=True)
    records = []
    for name in names:
        print(f"[bench] {name} ...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        rec = bench_model(name, repeat=ns.repeat, opset=ns.opset, dynamo=dynamo and missing is None,
                          ort_runs=ns.ort_runs, memory_timeout=ns.memory_timeout, threads=ns.threads)
        if dynamo and missing:
            rec.setdefault("export", {})["dynamo"] = {"times": [], "median": None, "error": missing}
        rec["seconds"] = time.perf_counter() - start
        records.append(rec)
        # Written after every model so a long run can be watched (and is not lost if stopped).
        result = _write(ns.out_dir, meta, records, partial=len(records) < len(names))
    print(result["markdown"], end="")
    return result


if __name__ == "__main__":
    main()
