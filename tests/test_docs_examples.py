"""The docs tell the truth.

Every code block of ``README.md`` and ``docs/*.md`` marked ``python runnable`` runs as written: a
file's runnable blocks run in order in one fresh interpreter, in an empty folder (a later block may
use what an earlier one defined, as a reader would), from a script whose line numbers are the
document's, so a failure points at the document's line. And what the docs claim about errors and
warnings holds: each claim below is quoted from its document (the test fails when the words
change) and checked against the exporter.
"""

from __future__ import annotations

import dataclasses
import io
import os
import pathlib
import re
import subprocess
import sys
import warnings
from collections.abc import Callable

import pytest
import torch

import torchscript_onnx as tso
from tests.optable import Fn

REPO = pathlib.Path(__file__).resolve().parent.parent
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(.*)$")
RUNNABLE = "python runnable"


def _runnable_script(text: str) -> str:
    """The document with every line outside its runnable blocks blanked: a script of its runnable
    code whose line numbers are the document's."""
    lines, in_block, runnable = [], False, False
    for line in text.splitlines():
        fence = FENCE.match(line.strip())
        if fence and not in_block:
            in_block, runnable = True, fence.group(1).strip() == RUNNABLE
            line = ""
        elif fence and line.strip() == "```":
            in_block = runnable = False
            line = ""
        lines.append(line if runnable else "")
    return "\n".join(lines) + "\n"


def _documents_with_runnable_blocks() -> list[pathlib.Path]:
    return [path for path in DOCUMENTS if f"```{RUNNABLE}\n" in path.read_text()]


@pytest.mark.parametrize("document", _documents_with_runnable_blocks(), ids=lambda p: p.name)
def test_runnable_blocks_run(document, tmp_path):
    script = tmp_path / f"{document.stem}.py"  # a file: torch.jit.script reads the source of what it compiles
    script.write_text(_runnable_script(document.read_text()))
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run([sys.executable, str(script)], cwd=work, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, f"{document.name}: {done.stderr[-3000:]}"


def test_every_marked_block_is_spelled_runnable():
    """A typo in the marker (```python runable) would leave a block unrun without a sign."""
    for path in DOCUMENTS:
        for info in re.findall(r"^```(\S.*)$", path.read_text(), re.M):
            assert "run" not in info or info.strip() == RUNNABLE, f"{path.name}: ```{info}"


def test_the_readme_and_the_user_guide_have_runnable_blocks():
    names = {path.name for path in _documents_with_runnable_blocks()}
    assert {"README.md", "user_guide.md", "writing_a_symbolic.md", "architecture.md"} <= names


def test_the_script_keeps_the_documents_line_numbers():
    text = "prose\n```python runnable\nx = 1\n```\n```python\nnot run\n```\n```python runnable\ny = x\n```\n"
    script = _runnable_script(text).splitlines()
    assert len(script) == len(text.splitlines())
    assert [(k + 1, line) for k, line in enumerate(script) if line] == [(3, "x = 1"), (9, "y = x")]


# -- claims about errors and warnings ------------------------------------------------------------


@dataclasses.dataclass
class Claim:
    document: str  # relative to the repository
    says: str  # the claim's words as the document has them (compared with whitespace collapsed)
    holds: Callable[[pathlib.Path], None]  # raises AssertionError when the exporter does otherwise


class Linear(torch.nn.Linear):
    def __init__(self):
        super().__init__(4, 3)


X = torch.randn(2, 4)


def _warns(*, contains: str, **options) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tso.export(Linear(), (X,), None, **options)
    messages = [str(w.message) for w in caught if issubclass(w.category, tso.errors.OnnxExporterWarning)]
    assert any(contains in m for m in messages), messages


def _raises(error: type, *, contains: str = "", **options) -> BaseException:
    with pytest.raises(error, match=re.escape(contains)) as raised:
        tso.export(Linear(), (X,), options.pop("f", None), **options)
    return raised.value


def unknown_dynamic_axes_key_warns(_) -> None:
    options = dict(input_names=["x"], dynamic_axes={"nope": {0: "batch"}})
    _warns(contains="Provided key nope for dynamic axes is not a valid input/output name", **options)
    _raises(ValueError, contains="strict=True makes this an error", strict=True, **options)


def dynamic_axis_out_of_range_is_an_error(_) -> None:
    _raises(ValueError, contains="axis 5", input_names=["x"], dynamic_axes={"x": {5: "batch"}})


def list_form_warns(_) -> None:
    _warns(contains="Automatically generated names", input_names=["x"], dynamic_axes={"x": [0]})


def longer_input_names_is_an_error(_) -> None:
    _raises(ValueError, contains="input_names has 2 names", input_names=["x", "y"])


def folder_is_a_directory_error(tmp_path) -> None:
    error = _raises(IsADirectoryError, f=str(tmp_path))
    assert str(tmp_path) in str(error)


def external_data_without_a_path_warns(_) -> None:
    _warns(contains="external_data=True needs f as a path", external_data=True)
    _raises(ValueError, contains="strict=True makes this an error", f=io.BytesIO(), external_data=True, strict=True)


def dynamo_true_is_refused(_) -> None:
    _raises(ValueError, contains="torch.onnx.export(..., dynamo=True)", dynamo=True)


def translation_table_is_refused(_) -> None:
    _raises(ValueError, contains="register_custom_op_symbolic", custom_translation_table={torch.relu: None})


def functions_below_opset_15_are_an_error(_) -> None:
    _raises(ValueError, contains="opset 15", export_modules_as_functions=True, opset_version=14)


def _wrong_relu(g, input):  # a deliberately wrong conversion
    return g.op("Sigmoid", input)


def _with_wrong_relu(check: Callable[[], None]) -> None:
    tso.register_custom_op_symbolic("aten::relu", _wrong_relu, 9)
    try:
        check()
    finally:
        tso.unregister_custom_op_symbolic("aten::relu", 9)


def export_verify_mismatch_raises_and_writes_nothing(tmp_path) -> None:
    path = tmp_path / "m.onnx"

    def check():
        with pytest.raises(tso.VerificationError):
            tso.export(torch.nn.ReLU(), (X,), str(path), verify=True)

    _with_wrong_relu(check)
    assert not path.exists()


def verify_raises_unless_asked_for_the_report(_) -> None:
    def check():
        with pytest.raises(tso.VerificationError) as raised:
            tso.verify(torch.nn.ReLU(), (X,))
        assert "FAIL" in str(raised.value)  # the report's table
        report = tso.verify(torch.nn.ReLU(), (X,), raise_on_mismatch=False)
        assert not report.ok and report.failures

    _with_wrong_relu(check)


class Softsign(torch.autograd.Function):  # no symbolic staticmethod
    @staticmethod
    def forward(ctx, x):
        return x / (1 + x.abs())


def function_without_symbolic_is_an_error_naming_it(_) -> None:
    with pytest.raises(tso.SymbolicValueError, match="Softsign"):
        tso.export(Fn(Softsign.apply), (X,), None, autograd_inlining=False)
    tso.export(Fn(Softsign.apply), (X,), None)  # inlined by default


def errors_derive_from_onnx_exporter_error(_) -> None:
    from torchscript_onnx import errors

    for error in (tso.UnsupportedOperatorError, tso.SymbolicValueError, tso.OpsetRequirementError,
                  tso.VerificationError, errors.DynamicAxesError, errors.UnflattenableCacheError, tso.CheckerError):
        assert issubclass(error, torch.onnx.errors.OnnxExporterError), error
    assert issubclass(tso.VerificationError, AssertionError)
    assert issubclass(errors.DynamicAxesError, ValueError) and issubclass(errors.UnflattenableCacheError, TypeError)


CLAIMS = [
    Claim("docs/user_guide.md", "A name in neither `input_names` nor `output_names` is a warning, as in legacy",
          unknown_dynamic_axes_key_warns),
    Claim("docs/user_guide.md", "`strict=True` makes it an error. An axis the input or output does not have is an "
          "error.", dynamic_axis_out_of_range_is_an_error),
    Claim("docs/user_guide.md", "(generated names `<name>_dynamic_axes_<k>`, with a warning, as in legacy)",
          list_form_warns),
    Claim("docs/migration.md", "`dynamic_axes` naming neither an input nor an output warns, as in legacy "
          "(`strict=True`: an error); an axis out of range is an error.", unknown_dynamic_axes_key_warns),
    Claim("docs/migration.md", "an axis out of range is an error", dynamic_axis_out_of_range_is_an_error),
    Claim("docs/user_guide.md", "a longer list is an error", longer_input_names_is_an_error),
    Claim("docs/user_guide.md", "| a folder | `IsADirectoryError` naming it, before anything is written |",
          folder_is_a_directory_error),
    Claim("docs/user_guide.md", "`export(..., external_data=True)` with a file object or `f=None` warns and keeps "
          "the weights inline", external_data_without_a_path_warns),
    Claim("docs/migration.md", "`dynamo=True` is refused with a pointer to `torch.onnx.export`",
          dynamo_true_is_refused),
    Claim("docs/migration.md", "| `custom_translation_table` | refused: register conversions with "
          "`register_custom_op_symbolic` |", translation_table_is_refused),
    Claim("docs/migration.md", "(opset 15+; below, a clear error)", functions_below_opset_15_are_an_error),
    Claim("docs/migration.md", "a mismatch raises and writes nothing", export_verify_mismatch_raises_and_writes_nothing),
    Claim("README.md", "An output that differs beyond `rtol`/`atol` raises `VerificationError`",
          verify_raises_unless_asked_for_the_report),
    Claim("docs/cli.md", "raises `VerificationError` with it when an output differs (`raise_on_mismatch=False` "
          "returns it then too)", verify_raises_unless_asked_for_the_report),
    Claim("docs/user_guide.md", "a Function without a `symbolic` is then an error naming it",
          function_without_symbolic_is_an_error_naming_it),
    Claim("docs/migration.md", "or the export fails naming the Function", function_without_symbolic_is_an_error_naming_it),
    Claim("docs/user_guide.md", "Every error the exporter raises on purpose derives from `OnnxExporterError` (torch's, "
          "where torch has it); `VerificationError` is also an `AssertionError`", errors_derive_from_onnx_exporter_error),
]


@pytest.mark.parametrize("claim", CLAIMS, ids=lambda c: f"{pathlib.Path(c.document).stem}-{c.holds.__name__}")
def test_claims_about_errors_and_warnings_hold(claim, tmp_path):
    text = " ".join((REPO / claim.document).read_text().split())
    assert " ".join(claim.says.split()) in text, f"{claim.document} no longer says: {claim.says}"
    claim.holds(tmp_path)


def test_no_document_says_an_unknown_dynamic_axes_key_is_an_error():
    """The drift this file was written against: user_guide.md called it an error while it warns."""
    for path in DOCUMENTS:
        text = " ".join(path.read_text().split())
        assert not re.search(r"[Uu]nknown `?dynamic_axes`? names (are|is) (\*\*)?errors?", text), path.name
