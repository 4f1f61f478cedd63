"""Render ``docs/supported_ops.md`` from the registry: every op with the first opset it converts at.

    python -m torchscript_onnx.supported_ops_doc > docs/supported_ops.md

A test fails when the committed file differs from what this renders.
"""

from __future__ import annotations

from symbolic import registry

from .options import MAX_OPSET, MIN_OPSET


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
        "*lowerings* lists the opsets at which its conversion changes.",
        "",
        f"{len(versions)} operators.",
        "",
        "| operator | first opset | lowerings |",
        "|---|---|---|",
    ]
    for name in sorted(versions):
        first = registry.lowest_supporting_opset(name, MAX_OPSET)
        lines.append(f"| `{name}` | {first if first is not None else '-'} | {', '.join(map(str, versions[name]))} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render(), end="")
