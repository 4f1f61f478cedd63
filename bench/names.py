"""Initializer names of our exports against the legacy exporter's, per model.

    python -m bench.names [--models bert_base,resnet18] [--opset 17] [--save FILE] [--against FILE]

Each model (``bench.latency``'s transformers and UNet, then the zoo) is exported by ours and by
``torch.onnx.export(..., dynamo=False)`` into a temp dir; the initializer names of the two files
are compared. ``share`` is the part of legacy's initializer names that ours has too; ``extra``
counts our initializers legacy does not have (weights ours folds where legacy keeps a Constant
node, or names that differ). ``--save`` writes the figures as JSON, ``--against`` prints a saved
run's share beside this one's. ``--show N`` lists up to N differing names per side.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import onnx  # noqa: E402

from bench import exporters, latency, models  # noqa: E402


def initializer_names(path: str) -> list[str]:
    return [t.name for t in onnx.load(path, load_external_data=False).graph.initializer]


def compare(name: str, opset: int) -> dict:
    """Legacy's and our initializer names for model ``name`` at ``opset``, or the error."""
    model, args = latency.build(name)
    names = {}
    with tempfile.TemporaryDirectory() as folder:
        for exporter in ("legacy", "ours"):
            path = os.path.join(folder, exporter, "model.onnx")
            os.makedirs(os.path.dirname(path))
            try:
                exporters.run(exporter, model, args, path, opset)
            except Exception as error:  # noqa: BLE001 - a model one exporter cannot export is a result
                return {"error": f"{exporter}: {exporters.short_error(error)}"}
            names[exporter] = initializer_names(path)
    legacy, ours = names["legacy"], set(names["ours"])
    same = [n for n in legacy if n in ours]
    return {"legacy": len(legacy), "ours": len(ours), "identical": len(same),
            "share": len(same) / len(legacy) if legacy else 1.0,
            "legacy_only": [n for n in legacy if n not in ours],
            "ours_only": [n for n in names["ours"] if n not in set(legacy)]}


def _row(name: str, result: dict, before: dict | None) -> str:
    if "error" in result:
        return f"| {name} | {result['error']} |"
    was = ""
    if before is not None:
        old = before.get(name, {})
        was = f"{old['share']:.0%} ({old['identical']}/{old['legacy']}) -> " if "share" in old else "absent -> "
    return (f"| {name} | {result['legacy']} | {result['ours']} | {was}{result['share']:.0%} "
            f"({result['identical']}/{result['legacy']}) | {len(result['ours_only'])} |")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=None,
                        help="comma-separated model names (default: bench.latency's models, then the zoo)")
    parser.add_argument("--opset", type=int, default=17)
    parser.add_argument("--save", help="write the figures to this JSON file")
    parser.add_argument("--against", help="print a run saved with --save beside this one")
    parser.add_argument("--show", type=int, default=0, help="list up to N differing names per side")
    options = parser.parse_args(argv)
    names = options.models.split(",") if options.models else list(latency.MODELS) + models.default_names()
    before = None
    if options.against:
        with open(options.against) as stream:
            before = json.load(stream)
    print(f"opset {options.opset}\n")
    print("| model | legacy initializers | ours | identical names (share of legacy's) | ours extra |")
    print("|---|---|---|---|---|")
    results = {}
    for name in names:
        results[name] = compare(name, options.opset)
        print(_row(name, results[name], before), flush=True)
        if options.show and "error" not in results[name]:
            print(f"    legacy only: {results[name]['legacy_only'][:options.show]}")
            print(f"    ours only:   {results[name]['ours_only'][:options.show]}")
    if options.save:
        with open(options.save, "w") as stream:
            json.dump(results, stream, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
