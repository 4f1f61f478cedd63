"""Peak memory of one export above what the built model already holds, in a fresh process.

    python -m bench.memory --model NAME --exporter ours|legacy|dynamo|forward [--opset N] [--threads T] [--no-warmup]

prints one line ``BENCH_MEMORY {json}``. ``--exporter forward`` is the reference the export is held
to: one ``with torch.no_grad(): model(*args)``, measured the same way (its warm-up: one no-grad
forward of the tiny model); ``budget`` gives the budget an export of the model has, that
reference plus ``BUDGET_WEIGHT_FRACTION`` of the weight bytes. Models: ``bench.models`` (the zoo)
and ``bench.latency``'s transformers (``bert_base``, ``gpt2``, ...). Steps: import everything, export a tiny model once with
the same exporter (so lazily imported modules and code pages are not charged to the model), build
the model, gc, reset the kernel's high-water mark when /proc/self/clear_refs allows it, read the
baseline RSS, export to a file in a temp dir, read the peak. ``delta = peak - baseline``.
Without the reset the peak may include earlier peaks (then ``hwm_reset`` is false and the delta
is an upper bound). Freed memory kept by the allocator counts too, so the delta is an upper bound
of what the export needs.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import exporters, models  # noqa: E402

MARKER = "BENCH_MEMORY "
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The reference measurement: one no-grad forward pass instead of an export.
FORWARD = "forward"
# An export may need one no-grad forward pass plus this fraction of the weight bytes above the model.
BUDGET_WEIGHT_FRACTION = 0.1


def budget(forward_delta: int | None, weight_bytes: int | None) -> int | None:
    """Bytes an export may hold above the built model: one forward pass plus 0.1x the weights."""
    if forward_delta is None or weight_bytes is None:
        return None
    return forward_delta + int(BUDGET_WEIGHT_FRACTION * weight_bytes)


def build_model(name: str):
    """``(model, args)`` for a zoo model (``bench.models``) or one of ``bench.latency``'s."""
    if name not in models.all_models():
        from bench import latency

        if name in latency.MODELS:
            return latency.build(name)
    return models.build(name)


def known_models() -> list[str]:
    from bench import latency

    return list(models.all_models()) + [n for n in latency.MODELS if n not in models.all_models()]


def _forward(model, args) -> None:
    """One forward pass without autograd, with args as the exporters take them."""
    import torch

    from torchscript_onnx.pipeline.capture import call_model, normalize_args

    with torch.no_grad():
        outputs = call_model(model, normalize_args(model, args, None))
    del outputs


def _run(exporter: str, model, args, path: str, opset: int) -> None:
    if exporter == FORWARD:
        with exporters.silenced():
            _forward(model, args)
    else:
        exporters.run(exporter, model, args, path, opset)


def _status_kib() -> dict:
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(rest.split()[0])
    return out


def _reset_hwm() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


def measure_here(name: str, exporter: str, opset: int, warmup: bool = True) -> dict:
    """Run the measurement in this process (meant to be a fresh one)."""
    import torch  # noqa: F401
    import onnx  # noqa: F401
    import torch.onnx  # noqa: F401
    import torchscript_onnx  # noqa: F401
    from torchscript_onnx.builder.heap import release_free_memory

    with tempfile.TemporaryDirectory() as tmp:
        if warmup:
            tiny, tiny_args = models.LOCAL_MODELS["tiny_mlp"]()
            _run(exporter, tiny.eval(), tiny_args, os.path.join(tmp, "warmup.onnx"), opset)
            del tiny, tiny_args
        model, args = build_model(name)
        weights = models.weight_bytes(model)
        gc.collect()
        # Our capture gives free heap pages back to the OS (glibc malloc_trim); do it here too, for
        # every exporter, so pages freed while building the model are not counted as the export's gain
        # (the delta could go below zero).
        release_free_memory()
        reset = _reset_hwm()
        before = _status_kib()
        maxrss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        path = os.path.join(tmp, "model.onnx")
        error = None
        try:
            _run(exporter, model, args, path, opset)
        except Exception as e:  # noqa: BLE001 - recorded, not hidden
            error = exporters.short_error(e)
        after = _status_kib()
        maxrss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        file_bytes = os.path.getsize(path) if error is None and os.path.exists(path) else None
    # After a reset VmHWM alone is the export's peak. ru_maxrss cannot be reset and, in a process
    # started by fork+exec, also remembers the parent's size before exec; it is only the fallback.
    peak_kib = after["VmHWM"] if reset else max(after["VmHWM"], maxrss_after)
    delta = (peak_kib - before["VmRSS"]) * 1024
    return {
        "model": name, "exporter": exporter, "opset": opset, "error": error,
        "weight_bytes": weights, "baseline_rss": before["VmRSS"] * 1024, "hwm_before": before["VmHWM"] * 1024,
        "peak_rss": peak_kib * 1024, "ru_maxrss_before": maxrss_before * 1024,
        "ru_maxrss_after": maxrss_after * 1024, "hwm_reset": reset, "delta_bytes": delta,
        "delta_over_weights": delta / weights if weights else None, "file_bytes": file_bytes,
    }


def measure(name: str, exporter: str, opset: int, *, threads: int = 0, warmup: bool = True,
            timeout: float = 1800) -> dict:
    """Run ``measure_here`` in a fresh interpreter and return its record (``error`` set on failure)."""
    cmd = [sys.executable, "-m", "bench.memory", "--model", name, "--exporter", exporter, "--opset", str(opset),
           "--threads", str(threads)]
    if not warmup:
        cmd.append("--no-warmup")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (REPO_ROOT, env.get("PYTHONPATH")) if p)
    try:
        proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"model": name, "exporter": exporter, "error": f"timed out after {timeout:.0f} s"}
    for line in proc.stdout.splitlines():
        if line.startswith(MARKER):
            return json.loads(line[len(MARKER):])
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return {"model": name, "exporter": exporter, "error": f"subprocess exit {proc.returncode}: {tail}"[:300]}


def main(argv=None) -> None:
    import torchscript_onnx

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--exporter", required=True, choices=sorted(exporters.EXPORTERS) + [FORWARD])
    parser.add_argument("--opset", type=int, default=torchscript_onnx.DEFAULT_OPSET)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--no-warmup", action="store_true")
    ns = parser.parse_args(argv)
    if ns.threads > 0:
        import torch

        torch.set_num_threads(ns.threads)
    record = measure_here(ns.model, ns.exporter, ns.opset, warmup=not ns.no_warmup)
    print(MARKER + json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
