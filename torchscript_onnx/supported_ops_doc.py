"""Render ``docs/supported_ops.md`` from the registry: every op with the first opset it converts at
and the declared conditions under which it needs a higher one (``registry.opset_requirements``).

    python -m torchscript_onnx.supported_ops_doc > docs/supported_ops.md

A test fails when the committed file differs from what this renders.
"""

from __future__ import annotations

from .symbolic import registry

from .builder.options import MAX_OPSET, MIN_OPSET


def render() -> str:
    versions: dict[str, list[int]] = {}
    for name, opset, _ in registry.all_functions():
        versions.setdefault(name, []).append(opset)
    lines = [
        "# Supported operators",
        "",
        "Generated from the symbolic registry by `python -m torchscript_onnx.supported_ops_doc`; do not edit.",
        f"Opsets {MIN_OPSET}-{MAX_OPSET}. *First opset* is the lowest target opset at which the op converts",
        "(an op registered at opset 9 also serves 7 and 8 unless ONNX lacks what it needs there);",
        "*lowerings* lists the opsets at which its conversion changes; *needs more when* the conditions",
        "under which it converts only from a higher opset (export names them all at once:",
        "\"pass opset_version=N\").",
        "",
        f"{len(versions)} operators.",
        "",
        "| operator | first opset | lowerings | needs more when |",
        "|---|---|---|---|",
    ]
    for name in sorted(versions):
        first = registry.lowest_supporting_opset(name, MAX_OPSET)
        needs = "; ".join(f"{condition}: {opset}+" for opset, condition in registry.opset_requirements(name)
                          if first is None or opset > first)
        needs = needs.replace("|", "\\|")
        lines.append(f"| `{name}` | {first if first is not None else '-'} | {', '.join(map(str, versions[name]))} "
                     f"| {needs} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render(), end="")
