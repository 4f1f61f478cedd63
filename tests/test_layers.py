"""The folders are the layers, and they import one way: builder <- symbolic <- pipeline <- API.

- ``torchscript_onnx/builder/``: the IR, the graph context symbolics receive, shape rules, folding,
  the ONNX schema helpers, dtypes, errors, options. Imports nothing of the package outside it.
- ``torchscript_onnx/symbolic/``: the conversions and their registry. Imports the builder only.
- ``torchscript_onnx/pipeline/``: capture, prepare, convert, optimize, serialize. Imports the
  builder and the symbolics, never the API.
- the modules at the top of the package: the API (export, audit, verify, install, the CLI and the
  legacy modules). They may import every layer.

Read from the source, so a function-local import counts too. A module's layer is its folder: which
files belong where is not a list kept here.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = REPO / "torchscript_onnx"

# Each layer and the layers it may import (itself included).
MAY_IMPORT = {
    "builder": {"builder"},
    "symbolic": {"builder", "symbolic"},
    "pipeline": {"builder", "symbolic", "pipeline"},
    "api": {"builder", "symbolic", "pipeline", "api"},
}


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(dotted: str) -> bool:
    path = REPO.joinpath(*dotted.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def _layer(dotted: str) -> str:
    """The layer of a module of the package: the folder under torchscript_onnx/ it lives in."""
    parts = dotted.split(".")
    return parts[1] if len(parts) > 2 and parts[1] in MAY_IMPORT else "api"


def _imports(path: pathlib.Path) -> set[str]:
    """The modules of the package that this file imports, by their full dotted names."""
    own = _module_name(path)
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "torchscript_onnx")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] != "torchscript_onnx":
                continue
            # ``from torchscript_onnx.builder import dtypes`` imports the module dtypes
            submodules = [f"{module}.{a.name}" for a in node.names if _is_module(f"{module}.{a.name}")]
            found.update(submodules or [module])
    return found


SOURCES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_each_module_imports_only_its_layer_and_those_below(path):
    layer = _layer(_module_name(path))
    above = sorted(m for m in _imports(path) if _layer(m) not in MAY_IMPORT[layer])
    assert not above, f"{layer} imports {above}"


def test_the_checks_see_every_layer():
    layers = {_layer(_module_name(path)) for path in SOURCES}
    assert layers == set(MAY_IMPORT)
    # a folder added to the package must be given a place among the layers (or be a part of one)
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == set(MAY_IMPORT) - {"api"}


def test_the_api_modules_do_not_import_each_other_both_ways():
    """verify() builds through the API, and the API runs its programs through the pipeline's
    comparison module, not through verification.py: no two modules at the top import each other."""
    api = {_module_name(p): _imports(p) for p in SOURCES if _layer(_module_name(p)) == "api"}
    mutual = sorted((a, b) for a, deps in api.items() for b in deps if a < b and a in api.get(b, ()))
    assert not mutual


def test_an_import_from_above_is_caught():
    # the helper resolves relative, absolute and package-level imports alike
    assert _layer("torchscript_onnx.builder.ir") == "builder"
    assert _layer("torchscript_onnx.pipeline.optimize.cse") == "pipeline"
    assert _layer("torchscript_onnx.api") == _layer("torchscript_onnx") == "api"
    assert "torchscript_onnx.builder.dtypes" in _imports(PACKAGE / "symbolic" / "ops" / "math.py")
    assert "torchscript_onnx.symbolic.registry" in _imports(PACKAGE / "pipeline" / "convert.py")
    assert "torchscript_onnx.builder.ir" in _imports(PACKAGE / "pipeline" / "optimize" / "cse.py")


def test_the_package_holds_no_symlinks():
    # a checkout or an archive without symlinks (Windows, some zips) must import the same package
    assert not [p.relative_to(REPO).as_posix() for p in PACKAGE.rglob("*") if p.is_symlink()]


def test_the_symbolic_folder_has_no_per_opset_packages():
    # every version of an op lives in symbolic/ops/<topic>.py; symbolic_opsetN.py are facades only
    assert not [p.name for p in (PACKAGE / "symbolic").iterdir() if p.is_dir() and p.name.startswith("opset")]


@pytest.mark.parametrize("statement", [
    "from torchscript_onnx.errors import OnnxExporterError, ConversionIssue",
    "import torchscript_onnx.errors; torchscript_onnx.errors.OnnxExporterWarning",
    "from torchscript_onnx.verify import check, run_onnxruntime",
    "from torchscript_onnx.symbolic_helper import parse_args, _get_tensor_rank",
    "from torchscript_onnx import symbolic_opset9, symbolic_opset18, utils",
    "import torchscript_onnx.utils; torchscript_onnx.utils.unconvertible_ops",
    "from torchscript_onnx.api import build",
])
def test_the_import_paths_programs_use_keep_working(statement):
    # the modules behind them moved into the layers' folders; these paths are the ones users and
    # programs written for the legacy exporter name (docs/migration.md, docs/user_guide.md)
    exec(statement, {})


def test_an_old_path_is_the_moved_module_itself():
    import torchscript_onnx
    from torchscript_onnx.builder import errors
    from torchscript_onnx.symbolic import symbolic_opset9

    assert torchscript_onnx.errors is errors
    assert torchscript_onnx.symbolic_opset9 is symbolic_opset9


def test_code_that_finds_the_package_by_its_own_file_finds_the_whole_package():
    # provenance tells the exporter's frames from the model's by the package's folder, wherever in
    # it the frame is (api.py at the top, pipeline/capture.py below); options' warnings point past it
    import os

    from torchscript_onnx.pipeline import provenance

    assert str(PACKAGE) + os.sep in provenance._EXPORTER_DIRS
