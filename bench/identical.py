"""Whether a change left our exports byte-identical: one digest per (model, opset).

    python -m bench.identical --save /tmp/before.json [--models resnet18,mnist] [--opsets 9,13,17]
    python -m bench.identical --against /tmp/before.json
    python -m bench.identical --ignore-names --save /tmp/before-unnamed.json   (then --against it)

Each zoo model is exported at each opset into memory and digested after clearing what records
where the exporter and the model's code live (node ``metadata_props``, ``doc_string`` fields): a
refactor that moves a file changes those and nothing a runtime reads. ``--against`` lists the
(model, opset) pairs whose digest changed and exits 1 if any did. ``--ignore-names`` digests the
model with every value and node name replaced by its place (initializers by their contents, in
that order): a change that only renames leaves those digests as they were.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import sys
import warnings

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import onnx  # noqa: E402
import torch  # noqa: E402

from bench import models  # noqa: E402
from torchscript_onnx import export  # noqa: E402

DEFAULT_OPSETS = (9, 13, 17)


def _strip_locations(graph: onnx.GraphProto) -> None:
    graph.doc_string = ""
    for node in graph.node:
        del node.metadata_props[:]
        node.doc_string = ""
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                _strip_locations(attribute.g)
            for sub in attribute.graphs:
                _strip_locations(sub)


def _unnamed_initializer_key(tensor: onnx.TensorProto) -> str:
    unnamed = onnx.TensorProto()
    unnamed.CopyFrom(tensor)
    unnamed.name = ""
    return hashlib.sha256(unnamed.SerializeToString(deterministic=True)).hexdigest()


def _rename_graph(graph: onnx.GraphProto, names: dict[str, str], prefix: str) -> None:
    """Names in ``graph`` (and its subgraphs, which may read its values) replaced by places."""
    for k, value in enumerate(graph.input):
        names.setdefault(value.name, f"{prefix}input{k}")
    ordered = sorted(graph.initializer, key=_unnamed_initializer_key)
    for k, tensor in enumerate(ordered):
        names[tensor.name] = f"{prefix}init{k}"
    for i, node in enumerate(graph.node):
        node.name = f"{prefix}node{i}"
        for j, out in enumerate(node.output):
            if out:
                names[out] = f"{prefix}node{i}_{j}"
    for i, node in enumerate(graph.node):
        node.input[:] = [names.get(v, v) for v in node.input]
        node.output[:] = [names.get(v, v) for v in node.output]
        for attribute in node.attribute:
            subgraphs = ([attribute.g] if attribute.type == onnx.AttributeProto.GRAPH else []) + list(attribute.graphs)
            for sub in subgraphs:
                _rename_graph(sub, names, f"{prefix}node{i}.{attribute.name}.")
    for value in list(graph.input) + list(graph.output) + list(graph.value_info):
        value.name = names.get(value.name, value.name)
    renamed = []
    for tensor in ordered:
        copy = onnx.TensorProto()
        copy.CopyFrom(tensor)
        copy.name = names[tensor.name]
        renamed.append(copy)
    del graph.initializer[:]
    graph.initializer.extend(renamed)


def digest(name: str, opset: int, ignore_names: bool = False) -> str:
    """The digest of ``name``'s export at ``opset`` without location records, or ``error: ...``;
    ``ignore_names``: with every value and node name replaced by its place."""
    torch.manual_seed(0)
    model, args = models.build(name)
    buffer = io.BytesIO()
    try:
        export(model, args, buffer, opset_version=opset)
    except Exception as error:  # noqa: BLE001 - a model the opset cannot express is a result too
        return f"error: {type(error).__name__}: {str(error).splitlines()[0]}"
    proto = onnx.load_from_string(buffer.getvalue())
    proto.doc_string = ""
    _strip_locations(proto.graph)
    for function in proto.functions:
        for node in function.node:
            del node.metadata_props[:]
    if ignore_names:
        _rename_graph(proto.graph, {}, "")
    return hashlib.sha256(proto.SerializeToString(deterministic=True)).hexdigest()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=None, help="comma-separated model names (default: the zoo)")
    parser.add_argument("--opsets", default=",".join(map(str, DEFAULT_OPSETS)))
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--save", help="write the digests to this JSON file")
    where.add_argument("--against", help="compare with the digests in this JSON file")
    parser.add_argument("--ignore-names", action="store_true", help="digest the models with their names replaced")
    options = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    names = options.models.split(",") if options.models else models.default_names()
    opsets = [int(o) for o in options.opsets.split(",")]
    digests = {f"{name}@{opset}": digest(name, opset, options.ignore_names) for name in names for opset in opsets}
    if options.save:
        with open(options.save, "w") as stream:
            json.dump(digests, stream, indent=1, sort_keys=True)
        print(f"{len(digests)} digests written to {options.save}")
        return 0
    with open(options.against) as stream:
        before = json.load(stream)
    changed = [key for key, value in digests.items() if before.get(key) != value]
    for key in changed:
        print(f"changed: {key}: {before.get(key, 'absent')[:60]} -> {digests[key][:60]}")
    print(f"{len(digests) - len(changed)} of {len(digests)} exports identical")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
