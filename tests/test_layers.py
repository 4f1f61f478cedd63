"""The layers import one way: builder <- symbolics <- converter and API.

The builder (the IR, the graph context symbolics receive, shape rules, folding, the ONNX schema
helpers) never imports the symbolics, even inside a function; the symbolics import nothing of the
package but the builder. Read from the source, so a function-local import counts too.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = REPO / "torchscript_onnx"

BUILDER = {"ir", "heap", "compat", "context", "shapes", "folding", "onnx_ops", "dtypes", "errors", "lazy", "mutation",
           "jit_walk", "options"}


def _imports(path: pathlib.Path) -> set[str]:
    """Top-level names this file imports: ``torchscript_onnx`` modules by their name, the
    symbolics as ``symbolic``."""
    found = set()
    in_package = path.parent in (PACKAGE, PACKAGE / "builder")
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update("symbolic" for a in node.names if a.name.split(".")[0] == "symbolic")
        elif isinstance(node, ast.ImportFrom):
            parts = (node.module or "").split(".")
            if node.level == 1 and in_package:
                found.update([parts[0]] if node.module else [a.name for a in node.names])
            elif node.level == 0 and parts[:2] == ["torchscript_onnx", "builder"]:
                found.update([parts[2]] if len(parts) > 2 else [a.name for a in node.names])
            elif node.level == 0 and parts[0] == "torchscript_onnx":
                found.update([parts[1]] if len(parts) > 1 else [a.name for a in node.names])
            elif node.level == 0 and parts[0] == "symbolic":
                found.add("symbolic")
    return found


@pytest.mark.parametrize("module", sorted(BUILDER))
def test_the_builder_imports_only_the_builder(module):
    imported = _imports(PACKAGE / "builder" / f"{module}.py")
    assert "symbolic" not in imported
    assert imported <= BUILDER, imported - BUILDER


def test_the_symbolics_import_only_the_builder():
    outside = {}
    for path in sorted((PACKAGE / "symbolic").rglob("*.py")):
        extra = (_imports(path) - {"symbolic"}) - BUILDER
        if extra:
            outside[path.relative_to(REPO).as_posix()] = sorted(extra)
    assert not outside


def test_the_symbolic_folder_has_no_per_opset_packages():
    # every version of an op lives in symbolic/ops/<topic>.py; symbolic_opsetN.py are facades only
    assert not [p.name for p in (PACKAGE / "symbolic").iterdir() if p.is_dir() and p.name.startswith("opset")]
