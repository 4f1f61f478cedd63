"""What writing provenance costs: export time and file size with and without ``value_info`` and
node ``metadata_props`` (``export(..., value_info=..., provenance=...)``).

For each model, every setting exports ``--repeat`` times to a file (the settings interleaved,
so they share the machine's noise); the table gives the median export time with both on (the
default) and both off, their ratio, and the file size each adds. Time is the process's CPU time
(``--clock cpu``, the default: steady on a shared, loaded machine) or wall time (``--clock wall``). Zoo models by name, and the tiny
transformers of ``bench/transformers_zoo.py`` as ``hf:<name>`` (with their dynamic axes).

    python -m bench.provenance_cost [--models tiny_mlp,resnet18,hf:bert,hf:gpt2] [--repeat 5] [--opset 17]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

from bench.exporters import silenced  # noqa: E402

DEFAULT_MODELS = "tiny_mlp,tiny_cnn,resnet18,mobilenet_v2,inception_v3,hf:bert,hf:gpt2,hf:llama"
# (label, value_info, provenance)
SETTINGS = (("off", False, False), ("value_info", True, False), ("provenance", False, True), ("on", True, True))


def _load(name: str):
    """(model, args, export options) for a zoo model or ``hf:<transformers zoo entry>``."""
    if name.startswith("hf:"):
        from bench.transformers_zoo import TRACED, ZOO

        entry = ZOO[name[3:]]
        return entry.model(), entry.inputs(*TRACED), dict(
            input_names=entry.input_names, output_names=entry.output_names, dynamic_axes=entry.dynamic_axes)
    from bench.models import build

    model, args = build(name)
    return model, args, {}


def measure(name: str, repeat: int, opset: int | None, clock=time.process_time) -> dict:
    import torchscript_onnx

    model, args, options = _load(name)
    if opset is not None:
        options["opset_version"] = opset
    times: dict[str, list[float]] = {label: [] for label, _, _ in SETTINGS}
    sizes: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as folder:
        for round_ in range(repeat + 1):  # round 0 warms up
            for label, value_info, provenance in SETTINGS:
                path = os.path.join(folder, f"{label}.onnx")
                start = clock()
                with silenced():
                    torchscript_onnx.export(model, args, path, value_info=value_info, provenance=provenance,
                                            **options)
                if round_:
                    times[label].append(clock() - start)
                sizes[label] = os.path.getsize(path)
    median = {label: statistics.median(t) * 1000 for label, t in times.items()}
    return {"model": name, "ms": median, "bytes": sizes}


def table(rows: list[dict]) -> str:
    lines = ["| model | export ms off | export ms on | time on/off | file KB off | + value_info KB | "
             "+ provenance KB | size on/off |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        ms, size = row["ms"], row["bytes"]
        lines.append(
            f"| {row['model']} | {ms['off']:.1f} | {ms['on']:.1f} | {ms['on'] / ms['off']:.3f} | "
            f"{size['off'] / 1024:.1f} | {(size['value_info'] - size['off']) / 1024:.1f} | "
            f"{(size['provenance'] - size['off']) / 1024:.1f} | {size['on'] / size['off']:.4f} |")
    ratios = [row["ms"]["on"] / row["ms"]["off"] for row in rows]
    lines.append(f"| median | | | {statistics.median(ratios):.3f} | | | | "
                 f"{statistics.median(r['bytes']['on'] / r['bytes']['off'] for r in rows):.4f} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=DEFAULT_MODELS, help="comma-separated names (hf:<name> for transformers)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--opset", type=int, default=None)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (0: torch's default)")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    rows = []
    for name in args.models.split(","):
        clock = time.process_time if args.clock == "cpu" else time.perf_counter
        rows.append(measure(name, args.repeat, args.opset, clock))
        print(f"{name}: {rows[-1]['ms']['on']:.1f} ms on, {rows[-1]['ms']['off']:.1f} ms off", file=sys.stderr)
    print(table(rows))


if __name__ == "__main__":
    main()
