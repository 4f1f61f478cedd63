"""Transformer models: ours against the legacy TorchScript exporter (``torch.onnx.export(dynamo=False)``).

For each model of ``bench/transformers_zoo.py`` (tiny configs, random weights, nothing
downloaded), both exporters run with the same dynamic axes; each result is then checked in
onnxruntime at the traced size and two other (batch, seq) sizes against eager PyTorch. The table
gives each exporter's result (ok, its error, or wrong/failing at other sizes), the export-time
ratio ours/legacy (median of ``--repeat`` runs) and the node counts.

    python -m bench.transformers_table [--opset 17] [--repeat 3] [--models bert,gpt2] [--out table.md]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from bench.exporters import short_error, silenced  # noqa: E402
from bench.run import model_nodes  # noqa: E402


def _export(exporter: str, entry, model, args, path: str, opset: int) -> None:
    options = dict(opset_version=opset, input_names=entry.input_names, output_names=entry.output_names,
                   dynamic_axes=entry.dynamic_axes)
    with silenced():
        if exporter == "ours":
            import torchscript_onnx

            torchscript_onnx.export(model, args, path, **options)
        else:
            torch.onnx.export(model, args, path, dynamo=False, **options)


def _check(path: str, model, sizes, entry) -> tuple[str, float]:
    """'ok' and the max abs diff over all sizes, or what went wrong at which size."""
    import onnxruntime

    from torchscript_onnx.pipeline.capture import call_model, normalize_args
    from torchscript_onnx.verify import flatten_inputs, flatten_outputs

    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    worst = 0.0
    for batch, seq in sizes:
        torch.manual_seed(1)
        args = normalize_args(model, entry.inputs(batch, seq), None)
        with torch.no_grad():
            expected = flatten_outputs(call_model(model, args))
        flat = dict(zip(entry.input_names, flatten_inputs(args)))
        try:
            got = session.run(None, {n: flat[n].numpy() for n in names})
        except Exception as error:  # noqa: BLE001 - reported in the table
            return f"fails at (batch, seq)=({batch}, {seq}): {short_error(error)[:120]}", worst
        for want, have in zip(expected, got):
            want = want.numpy()
            if want.shape != have.shape:
                return f"wrong shape at ({batch}, {seq}): {have.shape} vs {want.shape}", worst
            diff = float(np.abs(want.astype(np.float64) - have.astype(np.float64)).max()) if want.size else 0.0
            worst = max(worst, diff)
            if not np.allclose(have, want, rtol=1e-4, atol=1e-4):
                return f"wrong values at ({batch}, {seq}): max abs diff {diff:.2e}", worst
    return "ok", worst


class Positional(torch.nn.Module):
    """Calls a model with its inputs by keyword, so the legacy exporter can get past its keyword
    handling (transformers 5 forwards) and show what it does with the graph itself."""

    def __init__(self, model, names):
        super().__init__()
        self.model, self.names = model, names

    def forward(self, *tensors):
        return self.model(**dict(zip(self.names, tensors)))


def _run(exporter, entry, model, args, opset, repeat, tmp, reference=None) -> dict:
    from bench.transformers_zoo import OTHER_SIZES, TRACED

    path = os.path.join(tmp, f"{entry.name}-{exporter}.onnx")
    times = []
    try:
        for _ in range(repeat):
            start = time.perf_counter()
            _export(exporter, entry, model, args, path, opset)
            times.append(time.perf_counter() - start)
    except Exception as error:  # noqa: BLE001 - reported in the table
        return {"result": short_error(error)}
    result, diff = _check(path, reference or model, [TRACED, *OTHER_SIZES], entry)
    return {"result": result, "seconds": statistics.median(times), "nodes": model_nodes(path), "max_abs_diff": diff}


def bench_entry(entry, opset: int, repeat: int, tmp: str) -> dict:
    from bench.transformers_zoo import TRACED

    model = entry.model()
    torch.manual_seed(1)
    args = entry.inputs(*TRACED)
    row = {"model": entry.name}
    for exporter in ("legacy", "ours"):
        row[exporter] = _run(exporter, entry, model, args, opset, repeat, tmp)
    if "multiple values" in row["legacy"]["result"]:
        from torchscript_onnx.pipeline.capture import normalize_args
        from torchscript_onnx.verify import flatten_inputs

        flat = flatten_inputs(normalize_args(model, args, None))
        wrapped = _run("legacy", entry, Positional(model, entry.input_names), tuple(flat), opset, repeat, tmp,
                       reference=model)
        wrapped["result"] = f"{row['legacy']['result']}; through a positional wrapper: {wrapped['result']}"
        row["legacy"] = wrapped
    return row


def markdown(rows, opset: int) -> str:
    lines = [f"Transformer models, opset {opset}, dynamic batch and sequence; checked in onnxruntime at "
             "(2, 8), (1, 5), (3, 13) against eager PyTorch (rtol = atol = 1e-4).", "",
             "| model | legacy | ours | max abs diff (ours) | export time ours/legacy | nodes legacy | nodes ours |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        legacy, ours = row["legacy"], row["ours"]
        ratio = (f"{ours['seconds'] / legacy['seconds']:.2f}" if "seconds" in ours and "seconds" in legacy
                 else "-")
        diff = f"{ours['max_abs_diff']:.1e}" if "max_abs_diff" in ours else "-"
        cells = [row["model"], legacy["result"].replace("|", "/"), ours["result"].replace("|", "/"), diff, ratio,
                 str(legacy.get("nodes", "-")), str(ours.get("nodes", "-"))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> str:
    from bench.transformers_zoo import ZOO

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--opset", type=int, default=17)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--models", default=",".join(ZOO))
    parser.add_argument("--out", default=None)
    options = parser.parse_args(argv)
    torch.set_num_threads(1)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in options.models.split(","):
            rows.append(bench_entry(ZOO[name], options.opset, options.repeat, tmp))
            print(f"{name}: legacy {rows[-1]['legacy']['result'][:60]}; ours {rows[-1]['ours']['result'][:60]}",
                  file=sys.stderr, flush=True)
    table = markdown(rows, options.opset)
    if options.out:
        with open(options.out, "w") as f:
            f.write(table)
    print(table)
    return table


if __name__ == "__main__":
    main()
