"""Scripted models: ours against the legacy TorchScript exporter (``torch.onnx.export(dynamo=False)``).

Every model of ``tests/test_script.py`` and ``tests/test_script_idioms.py`` is scripted and exported
by both exporters at each opset, with the test's export options (dynamic axes for the language
models); each result is run in onnxruntime on the example and on the other inputs of its test
(other branches and trip counts) and compared with PyTorch (rtol 1e-4, atol 1e-5).

    python -m bench.script_table [--opsets 11,17] [--out table.md]
"""

from __future__ import annotations

import argparse
import io
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import torch  # noqa: E402

from bench.exporters import short_error, silenced  # noqa: E402


def _cases() -> dict:
    from tests import test_script, test_script_idioms

    cases = {name: (factory, args, others, options[0] if options else {})
             for name, (factory, args, others, _, _, *options) in test_script.CASES.items()}
    for name, (model_class, args, others) in test_script_idioms.MODELS.items():
        cases[name] = (lambda model_class=model_class: torch.jit.script(model_class()), args, others, {})
    return cases


def _export(exporter: str, model, args, opset: int, options: dict) -> bytes:
    buffer = io.BytesIO()
    with silenced():
        if exporter == "ours":
            import torchscript_onnx

            torchscript_onnx.export(model, args, buffer, opset_version=opset, **options)
        else:
            torch.onnx.export(model, args, buffer, opset_version=opset, dynamo=False, **options)
    return buffer.getvalue()


def _feeds(session, args) -> dict:
    """The session's inputs from the flattened args (Python numbers as 0-d arrays), in order."""
    flat = [a.numpy() if isinstance(a, torch.Tensor) else np.array(a) for a in args]
    inputs = session.get_inputs()
    if len(inputs) != len(flat):
        raise ValueError(f"the model takes {len(inputs)} inputs for {len(flat)} args")
    return {i.name: value for i, value in zip(inputs, flat)}


def _flat_outputs(value) -> list:
    if isinstance(value, (tuple, list)):
        return [item for v in value for item in _flat_outputs(v)]
    return [value.numpy() if isinstance(value, torch.Tensor) else np.array(value)]


def _check(model_bytes: bytes, model, all_args) -> str:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    try:
        session = onnxruntime.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
    except Exception as error:  # noqa: BLE001 - reported in the table
        return f"onnxruntime refuses it: {short_error(error)[:100]}"
    for k, args in enumerate(all_args):
        with torch.no_grad():
            expected = _flat_outputs(model(*args))
        try:
            got = session.run(None, _feeds(session, args))
        except Exception as error:  # noqa: BLE001 - reported in the table
            return f"fails on input set {k}: {short_error(error)[:100]}"
        for want, have in zip(expected, got):
            if want.shape != have.shape or not np.allclose(have, want, rtol=1e-4, atol=1e-5):
                return f"wrong values on input set {k}"
    return "ok"


def _nodes(model_bytes: bytes) -> int:
    def count(graph) -> int:
        return sum(1 + sum(count(a.g) for a in n.attribute if a.type == onnx.AttributeProto.GRAPH)
                   for n in graph.node)

    return count(onnx.load_from_string(model_bytes).graph)


def bench_case(name: str, case, opset: int) -> dict:
    factory, args, others, options = case
    row = {"model": name, "opset": opset}
    for exporter in ("legacy", "ours"):
        torch.manual_seed(0)
        model = factory()
        try:
            model_bytes = _export(exporter, model, args, opset, options)
        except Exception as error:  # noqa: BLE001 - reported in the table
            row[exporter] = {"result": short_error(error)[:140]}
            continue
        row[exporter] = {"result": _check(model_bytes, model, [args, *others]), "nodes": _nodes(model_bytes)}
    return row


def markdown(rows) -> str:
    lines = ["Scripted models: each export run in onnxruntime on the example and the test's other inputs "
             "(other branches and trip counts) against PyTorch (rtol 1e-4, atol 1e-5). Nodes include If/Loop bodies.",
             "", "| model | opset | legacy | ours | nodes legacy | nodes ours |", "| --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        legacy, ours = row["legacy"], row["ours"]
        cells = [row["model"], str(row["opset"]), legacy["result"].replace("|", "/"), ours["result"].replace("|", "/"),
                 str(legacy.get("nodes", "-")), str(ours.get("nodes", "-"))]
        lines.append("| " + " | ".join(cells) + " |")
    passed = {e: sum(r[e]["result"] == "ok" for r in rows) for e in ("legacy", "ours")}
    lines += ["", f"Correct: legacy {passed['legacy']}/{len(rows)}, ours {passed['ours']}/{len(rows)}."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--opsets", default="11,17")
    parser.add_argument("--out", default=None)
    options = parser.parse_args(argv)
    rows = [bench_case(name, case, int(opset)) for opset in options.opsets.split(",")
            for name, case in sorted(_cases().items())]
    table = markdown(rows)
    if options.out:
        with open(options.out, "w") as handle:
            handle.write(table)
    print(table)
    return table


if __name__ == "__main__":
    main()
