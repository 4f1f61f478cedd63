"""The torchscript-onnx command on real archives written by torch.jit.save: export (shapes, dynamic
axes, then onnxruntime at other sizes against the archive), verify, audit, inspect, demo,
supported-ops, --version, python -m; every error one line on stderr with a non-zero exit code."""

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch

import torchscript_onnx
from torchscript_onnx.cli import build_parser, main, parse_dynamic_spec, parse_input_spec, parse_sizes_spec
from torchscript_onnx.verification import run_onnxruntime

REPO = Path(__file__).resolve().parents[1]


class ConvHead(torch.nn.Module):
    """Two inputs (one of another dtype), two outputs, a batch and a height that may vary."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.table = torch.nn.Embedding(10, 16)
        self.fc = torch.nn.Linear(16, 5)

    def forward(self, image, ids):
        features = self.conv(image).mean((2, 3)) + self.table(ids).sum(1)
        return self.fc(features).relu(), features


class UsesEinsum(torch.nn.Module):  # einsum converts from opset 12
    def forward(self, a, b):
        return torch.einsum("ij,jk->ik", a, b)


def _archive(tmp_path, model, inputs, how: str) -> Path:
    torch.manual_seed(0)
    model = model.eval()
    saved = torch.jit.trace(model, inputs) if how == "trace" else torch.jit.script(model)
    path = tmp_path / f"{type(model).__name__}_{how}.pt"
    torch.jit.save(saved, str(path))
    return path


HEAD_INPUTS = ["--input", "image:2x3x8x8", "--input", "ids:2x3:int64"]
HEAD_EXAMPLE = (torch.randn(2, 3, 8, 8), torch.randint(0, 10, (2, 3)))


def _run(capsys, argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# ------------------------------------------------------------------------------------------ export

EXPORT_CASES = [
    # (archive made by, extra options, inputs to rerun with in onnxruntime, dims expected on 'image')
    ("trace", ["--dynamic", "image:0=batch", "--dynamic", "ids:0=batch"],
     (torch.randn(5, 3, 8, 8), torch.randint(0, 10, (5, 3))), ["batch", 3, 8, 8]),
    ("script", ["--dynamic", "image:0=batch", "--dynamic", "image:2=height", "--dynamic", "ids:0=batch"],
     (torch.randn(1, 3, 13, 8), torch.randint(0, 10, (1, 3))), ["batch", 3, "height", 8]),
    ("script", ["--dynamic", "image:0", "--dynamic", "ids:0=batch", "--opset", "11"],
     (torch.randn(3, 3, 8, 8), torch.randint(0, 10, (3, 3))), ["image_dim0", 3, 8, 8]),
]


@pytest.mark.parametrize("how, options, other, dims", EXPORT_CASES)
def test_export_archive_with_dynamic_axes_runs_at_other_sizes(tmp_path, capsys, how, options, other, dims):
    archive = _archive(tmp_path, ConvHead(), HEAD_EXAMPLE, how)
    output = tmp_path / "head.onnx"
    code, out, err = _run(capsys, ["export", archive, "-o", output, *HEAD_INPUTS,
                                   "--output-name", "scores", "--output-name", "features", *options])
    assert code == 0, err
    assert f"wrote {output}" in out
    proto = onnx.load(str(output))
    onnx.checker.check_model(proto, full_check=True)
    assert [i.name for i in proto.graph.input] == ["image", "ids"]
    assert [o.name for o in proto.graph.output] == ["scores", "features"]
    image_dims = [d.dim_param or d.dim_value for d in proto.graph.input[0].type.tensor_type.shape.dim]
    assert image_dims == dims
    expected = torch.jit.load(str(archive))(*other)
    actual = run_onnxruntime(output.read_bytes(), list(other))
    for want, got in zip(expected, actual):
        np.testing.assert_allclose(got, want.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_export_verify_prints_a_row_per_output_name(tmp_path, capsys):
    archive = _archive(tmp_path, ConvHead(), HEAD_EXAMPLE, "script")
    code, out, err = _run(capsys, ["export", archive, "-o", tmp_path / "m.onnx", *HEAD_INPUTS,
                                   "--output-name", "scores", "--verify"])
    assert code == 0, err
    rows = {line.split()[1]: line.split()[-1] for line in out.splitlines() if line.startswith("scripted")}
    assert len(rows) == 2 and "scores" in rows  # the second output keeps its default name
    assert all(result == "ok" for result in rows.values())
    assert "all 2 comparison(s) ok" in out


def test_export_external_data_writes_weights_beside_the_model(tmp_path, capsys):
    archive = _archive(tmp_path, torch.nn.Linear(64, 64), (torch.randn(2, 64),), "trace")
    output = tmp_path / "linear.onnx"
    code, out, err = _run(capsys, ["export", archive, "-o", output, "--input", "x:2x64", "--dynamic", "x:0=n",
                                   "--external-data", "--verify"])
    assert code == 0, err
    assert (tmp_path / "linear.onnx.data").stat().st_size >= 64 * 64 * 4
    assert "linear.onnx.data" in out
    x = torch.randn(7, 64)
    expected = torch.jit.load(str(archive))(x).detach().numpy()
    (got,) = run_onnxruntime(str(output), [x])  # onnxruntime reads the weights from beside the file
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_export_from_a_factory_module_attr(tmp_path, capsys, monkeypatch):
    (tmp_path / "my_models.py").write_text(textwrap.dedent("""
        import torch

        def build():
            torch.manual_seed(1)
            return torch.nn.Sequential(torch.nn.Linear(6, 3), torch.nn.Dropout(0.5), torch.nn.Tanh())
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    output = tmp_path / "factory.onnx"
    code, out, err = _run(capsys, ["export", "my_models:build", "-o", output, "--input", "x:4x6",
                                   "--dynamic", "x:0=batch", "--verify"])
    assert code == 0, err  # the factory's model is exported in eval mode: dropout is gone
    assert [line.split()[0] for line in out.splitlines() if line.endswith(" ok")] == ["traced"]  # a traced nn.Module
    proto = onnx.load(str(output))
    assert "Dropout" not in {n.op_type for n in proto.graph.node}
    import my_models

    x = torch.randn(9, 6)
    expected = my_models.build().eval()(x).detach().numpy()
    np.testing.assert_allclose(run_onnxruntime(output.read_bytes(), [x])[0], expected, rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------------------------------ verify

def test_verify_at_traced_and_other_sizes(tmp_path, capsys):
    archive = _archive(tmp_path, ConvHead(), HEAD_EXAMPLE, "script")
    model = tmp_path / "m.onnx"
    assert main(["export", str(archive), "-o", str(model), *HEAD_INPUTS, "--output-name", "scores",
                 "--output-name", "features", "--dynamic", "image:0=batch", "--dynamic", "ids:0=batch",
                 "--dynamic", "image:3=width"]) == 0
    capsys.readouterr()
    code, out, err = _run(capsys, ["verify", archive, model, *HEAD_INPUTS, "--dynamic-sizes", "batch=5",
                                   "--dynamic-sizes", "image:0=1,ids:0=1,width=11"])
    assert code == 0, err
    rows = [line.split() for line in out.splitlines()[1:-1]]
    assert [(r[0], r[1], r[2]) for r in rows if r[0] == "batch=5"] == [
        ("batch=5", "scores", "5x5"), ("batch=5", "features", "5x16")]
    assert sum(1 for line in out.splitlines() if line.startswith("image:0=1")) == 2
    assert "all 6 comparison(s) ok" in out


def test_verify_names_the_output_that_differs(tmp_path, capsys):
    torch.manual_seed(0)
    first, second = ConvHead(), ConvHead()  # other weights
    archive = _archive(tmp_path, first, HEAD_EXAMPLE, "trace")
    other = _archive(tmp_path, second, HEAD_EXAMPLE, "script")
    model = tmp_path / "other.onnx"
    assert main(["export", str(other), "-o", str(model), *HEAD_INPUTS, "--output-name", "scores",
                 "--output-name", "features"]) == 0
    capsys.readouterr()
    code, out, err = _run(capsys, ["verify", archive, model, *HEAD_INPUTS])
    assert code == 1
    assert err.count("\n") == 1 and err.startswith("torchscript-onnx: error: ")
    assert "scores" in err and "features" in err
    # an archive's own graph is taken, also one written from torch.jit.trace: its rows say so
    assert {line.split()[1] for line in out.splitlines() if line.startswith("scripted") and "FAIL" in line} == {
        "scores", "features"}


# ------------------------------------------------------------------------------------------ audit

@pytest.mark.parametrize("opset, fmt, code, expected", [
    (9, "text", 1, "aten::einsum"),
    (9, "markdown", 1, "| `aten::einsum` |"),
    (12, "text", 0, "convert at opset 12"),
])
def test_audit_archive(tmp_path, capsys, opset, fmt, code, expected):
    archive = _archive(tmp_path, UsesEinsum(), (torch.randn(2, 3), torch.randn(3, 4)), "script")
    got, out, err = _run(capsys, ["audit", archive, "--input", "a:2x3", "--input", "b:3x4",
                                  "--opset", opset, "--format", fmt])
    assert (got, err) == (code, "")
    assert expected in out


class TinyBert(torch.nn.Module):
    """A BERT from a tiny random config, called on token ids only (its position ids are sliced by
    the sequence length: a runtime Slice once that length is dynamic, which needs opset 10)."""

    def __init__(self):
        super().__init__()
        import transformers

        config = transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                         intermediate_size=64, max_position_embeddings=64)
        self.bert = transformers.BertModel(config)

    def forward(self, ids):
        return self.bert(input_ids=ids).last_hidden_state


class Conv2d(torch.nn.Conv2d):  # fails on a 5-D input, in the model's own words
    def __init__(self):
        super().__init__(3, 4, 3)


@pytest.fixture(scope="module")
def archives(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("archives")
    ids = torch.randint(0, 100, (1, 8))
    return {
        "bert": _archive(tmp, TinyBert(), (ids,), "trace"),
        "head": _archive(tmp, ConvHead(), HEAD_EXAMPLE, "script"),
        "einsum": _archive(tmp, UsesEinsum(), (torch.randn(2, 3), torch.randn(3, 4)), "script"),
        "conv": _archive(tmp, Conv2d(), (torch.randn(1, 3, 8, 8),), "script"),
    }


EINSUM_INPUTS = ["--input", "a:2x3", "--input", "b:3x4"]
# (case, archive, capture options given to both commands, whether export succeeds)
AGREEMENT_CASES = [
    ("bert-static-opset9", "bert", ["--input", "ids:1x8:int64", "--opset", "9"], True),
    ("bert-dynamic-opset9", "bert", ["--input", "ids:1x8:int64", "--dynamic", "ids:1=seq", "--opset", "9"],
     False),  # the position ids' Slice has runtime bounds: opset 10
    ("bert-dynamic-opset10", "bert", ["--input", "ids:1x8:int64", "--dynamic", "ids:1=seq", "--opset", "10"], True),
    ("head-dynamic-opset9", "head", [*HEAD_INPUTS, "--dynamic", "image:0=batch", "--dynamic", "ids:0=batch",
                                     "--opset", "9"], True),
    ("head-output-axis-out-of-range", "head", [*HEAD_INPUTS, "--output-name", "scores", "--dynamic", "scores:3=n"],
     False),  # scores has 2 dims
    ("einsum-opset9", "einsum", [*EINSUM_INPUTS, "--opset", "9"], False),
    ("einsum-opset12", "einsum", [*EINSUM_INPUTS, "--opset", "12"], True),
    ("conv-5d-input", "conv", ["--input", "x:1x1x3x8x8"], False),  # the model fails on the input
]


@pytest.mark.parametrize("name, options, exports", [c[1:] for c in AGREEMENT_CASES],
                         ids=[c[0] for c in AGREEMENT_CASES])
def test_audit_fails_exactly_when_export_does(archives, tmp_path, capsys, name, options, exports):
    output = tmp_path / "m.onnx"
    export_code, _, export_err = _run(capsys, ["export", archives[name], "-o", output, *options])
    audit_code, audit_out, audit_err = _run(capsys, ["audit", archives[name], *options])
    assert (export_code == 0) == exports, export_err
    assert (audit_code == 0) == (export_code == 0), (audit_out, audit_err, export_err)
    assert audit_code in (0, 1) and output.exists() == exports
    if audit_code == 0:
        assert audit_out.startswith("All ") and audit_err == ""


def test_audit_names_what_export_names(archives, tmp_path, capsys):
    options = ["--input", "ids:1x8:int64", "--dynamic", "ids:1=seq", "--opset", "9"]
    _, _, export_err = _run(capsys, ["export", archives["bert"], "-o", tmp_path / "m.onnx", *options])
    code, out, _ = _run(capsys, ["audit", archives["bert"], *options])
    assert code == 1 and "aten::slice" in export_err and "pass opset_version=10" in export_err
    assert "aten::slice [opset]" in out and "Opset 10 converts every node" in out


# ------------------------------------------------------------------------------------------ inspect

def test_inspect_lists_opsets_io_dims_ops_size_and_metadata(tmp_path, capsys):
    archive = _archive(tmp_path, ConvHead(), HEAD_EXAMPLE, "script")
    model = tmp_path / "m.onnx"
    assert main(["export", str(archive), "-o", str(model), *HEAD_INPUTS, "--dynamic", "image:0=batch",
                 "--dynamic", "ids:0=batch", "--opset", "17", "--external-data"]) == 0
    proto = onnx.load(str(model), load_external_data=False)
    onnx.helper.set_model_props(proto, {"author": "test suite"})
    onnx.save(proto, str(model))  # the header only: the weights stay in m.onnx.data
    capsys.readouterr()
    code, out, err = _run(capsys, ["inspect", model])
    assert code == 0, err
    lines = out.splitlines()
    data_size = (tmp_path / "m.onnx.data").stat().st_size
    assert "external data" in lines[0] and "m.onnx.data" in lines[0]
    assert f"{data_size / 1024:.1f} KiB" in lines[0] or f"{data_size} bytes" in lines[0]
    assert "ai.onnx 17" in out
    assert f"producer:  torchscript-onnx {torchscript_onnx.__version__}" in out
    assert any(line.split()[:3] == ["image", "float32", "[batch,"] for line in lines)
    assert any(line.split()[:3] == ["ids", "int64", "[batch,"] for line in lines)
    histogram = {}
    section = None
    for line in lines:
        if not line.startswith("  "):
            section = line.split(":")[0]
        elif section == "ops":
            op, count = line.split()
            histogram[op] = int(count)
    assert histogram == dict(sorted(
        ((op, sum(n.op_type == op for n in proto.graph.node)) for op in {n.op_type for n in proto.graph.node})))
    assert f"nodes:     {len(proto.graph.node)}" in out
    assert "  author: test suite" in lines


# ------------------------------------------------------------------------------------------ demo, supported-ops

def test_demo_exports_checks_and_compares(tmp_path, capsys):
    output = tmp_path / "resnet18.onnx"
    assert main(["demo", "--opset", "13", "--output", str(output)]) == 0
    printed = capsys.readouterr().out
    assert "model:   resnet18 (44.6 MiB of weights), opset 13" in printed
    assert "checker: onnx.checker.check_model(full_check=True) passed" in printed
    assert "compare: onnxruntime matches PyTorch" in printed
    proto = onnx.load(str(output))
    assert proto.opset_import[0].version == 13
    assert sum(n.op_type == "Conv" for n in proto.graph.node) == 20  # ResNet-18: 17 convolutions + 3 shortcuts


class Noisy(torch.nn.Module):  # random in forward: onnxruntime draws other numbers than PyTorch
    def forward(self, x):
        return x + torch.randn_like(x)


def test_demo_fails_when_onnxruntime_differs(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(torchscript_onnx.cli, "demo_model", lambda: (Noisy(), (torch.zeros(2, 3),)))
    assert main(["demo", "--output", str(tmp_path / "noisy.onnx")]) == 1
    captured = capsys.readouterr()
    assert "compare: onnxruntime matches" not in captured.out
    assert "1 of 1 comparison(s) FAIL" in captured.err


def test_the_package_imports_neither_bench_nor_tests():
    """The zoos live in bench/; nothing in the package (the demo included) may need them."""
    code = textwrap.dedent("""
        import pkgutil, sys, torchscript_onnx
        for info in pkgutil.walk_packages(torchscript_onnx.__path__, "torchscript_onnx."):
            if not info.name.endswith("__main__"):
                __import__(info.name)
        print(len([m for m in sys.modules if m.startswith("torchscript_onnx.")]),
              sorted(m for m in sys.modules if m.split(".")[0] in ("bench", "tests")))
    """)
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    count, outside = result.stdout.split(" ", 1)
    assert int(count) > 30 and outside.strip() == "[]"


class Small(torch.nn.Module):
    def forward(self, x):
        return x.relu() + 1


@pytest.mark.parametrize("model", [Small(), Noisy()], ids=["passes", "differs"])
def test_demo_without_output_leaves_no_file(tmp_path, capsys, monkeypatch, model):
    monkeypatch.setattr(torchscript_onnx.cli, "demo_model", lambda: (model, (torch.zeros(2, 3),)))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the demo's temporary folder goes
    code = main(["demo"])
    out = capsys.readouterr().out
    assert code == (0 if isinstance(model, Small) else 1)
    assert str(tmp_path) in out  # it did write there
    assert os.listdir(tmp_path) == []


def test_supported_ops_lists_registry(capsys):
    assert main(["supported-ops", "--opset", "9"]) == 0
    names = capsys.readouterr().out.split()
    assert "aten::_convolution" in names and "aten::einsum" not in names  # einsum needs opset 12


# ------------------------------------------------------------------------------------------ version, help, python -m

def test_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.startswith(f"torchscript-onnx {torchscript_onnx.__version__} (torch ")


def test_python_dash_m_version():
    done = subprocess.run([sys.executable, "-m", "torchscript_onnx", "--version"], capture_output=True, text=True,
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"torchscript-onnx {torchscript_onnx.__version__}")


@pytest.mark.parametrize("argv", [["--help"], ["export", "--help"], ["verify", "--help"], ["audit", "--help"],
                                  ["inspect", "--help"]])
def test_help_is_plain_text(capsys, argv):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: torchscript-onnx") and "``" not in out


def _commands() -> dict:
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return commands.choices


def test_every_command_has_a_description():
    commands = _commands()
    assert set(commands) == {"export", "verify", "audit", "inspect", "demo", "supported-ops"}
    for name, command in commands.items():
        assert command.description and len(command.description) > 40, name


def test_audit_takes_the_capture_options_export_takes():
    def options(name: str) -> set:
        return {s for a in _commands()[name]._actions for s in a.option_strings}

    only_export = {"-o", "--output", "--verify", "--external-data", "--rtol", "--atol"}
    assert options("audit") - {"--format"} == options("export") - only_export
    assert {"--input", "--dynamic", "--output-name", "--opset", "--seed"} <= options("audit")


# ------------------------------------------------------------------------------------------ errors

ERROR_CASES = [
    # (argv with {archive} and {tmp}, exit code, text the error line holds)
    (["export", "{tmp}/missing.pt", "-o", "{tmp}/m.onnx", "--input", "x:1"], 1, "missing.pt: no such file"),
    (["export", "{archive}", "-o", "{tmp}/m.onnx", "--input", "a:2xthree"], 2, "'a:2xthree'"),
    (["export", "{archive}", "-o", "{tmp}/m.onnx", "--input", "a"], 2, "NAME:SHAPE[:DTYPE]"),
    (["export", "{archive}", "-o", "{tmp}/m.onnx", "--input", "a:2x3:complex7"], 2, "unknown dtype 'complex7'"),
    (["export", "{archive}", "-o", "{tmp}/m.onnx"], 2, "--input"),
    (["export", "{archive}", "-o", "{tmp}/m.onnx", "--input", "a:2x3", "--input", "a:3x4"], 2, "given twice"),
    (["export", "{archive}", "-o", "{tmp}/m.onnx", "--input", "a:2x3", "--input", "b:3x4", "--dynamic", "c:0=n"],
     2, "'c' is neither"),
    (["export", "{archive}", "-o", "{tmp}/m.onnx", "--input", "a:2x3", "--input", "b:3x4", "--dynamic", "a:5=n"],
     2, "has 2 dims"),
    (["export", "{archive}", "-o", "{tmp}/m.onnx", "--input", "a:2x3", "--input", "b:3x4", "--dynamic", "a=n"],
     2, "NAME:AXIS[=DIM_NAME]"),
    (["export", "{archive}", "-o", "{tmp}/m.onnx", "--input", "a:2x3", "--opset", "30"], 2, "opset must be from 7"),
    (["export", "{archive}", "--input", "a:2x3"], 2, "-o/--output"),
    (["export", "{archive}", "-o", "{tmp}/no/such/folder/m.onnx", "--input", "a:2x3", "--input", "b:3x4"],
     1, "no/such/folder"),
    (["export", "{archive}", "-o", "{tmp}/a_file/m.onnx", "--input", "a:2x3", "--input", "b:3x4"], 1, "a_file"),
    (["export", "{tmp}/a_file", "-o", "{tmp}/m.onnx", "--input", "a:2x3"], 1, "not a TorchScript archive"),
    (["export", "{tmp}", "-o", "{tmp}/m.onnx", "--input", "a:2x3"], 1, "is a folder"),
    (["export", "no_such_module_here:build", "-o", "{tmp}/m.onnx", "--input", "a:2x3"], 1, "cannot import"),
    (["export", "torchscript_onnx:no_such_factory", "-o", "{tmp}/m.onnx", "--input", "a:2x3"], 1, "no attribute"),
    (["export", "torchscript_onnx:__version__", "-o", "{tmp}/m.onnx", "--input", "a:2x3"], 1, "not a torch.nn.Module"),
    (["export", "{archive}", "-o", "{tmp}/m.onnx", "--input", "a:2x3"], 1, "2 tensor input(s)"),  # one input short
    (["verify", "{archive}", "{tmp}/missing.onnx", "--input", "a:2x3", "--input", "b:3x4"], 1, "missing.onnx"),
    (["verify", "{archive}", "{tmp}/a_file", "--input", "a:2x3", "--input", "b:3x4"], 1, "a_file"),
    (["verify", "{archive}", "{tmp}/m12.onnx", "--input", "a:2x3", "--input", "b:3x4", "--dynamic-sizes", "q=3"],
     2, "['q']"),
    (["verify", "{archive}", "{tmp}/m12.onnx", "--input", "a:2x3", "--input", "b:3x4", "--dynamic-sizes", "q"],
     2, "NAME:AXIS=SIZE"),
    (["verify", "{archive}", "{tmp}/m12.onnx", "--input", "x:2x3", "--input", "b:3x4"], 1, "['a']"),
    (["audit", "{archive}", "--input", "a:2x3", "--input", "b:3x4", "--format", "html"], 2, "'html'"),
    (["inspect", "{tmp}/missing.onnx"], 1, "missing.onnx: no such file"),
    (["inspect", "{tmp}/a_file"], 1, "not an ONNX model"),
    (["demo", "--model", "resnet18"], 2, "unrecognized arguments: --model"),  # the product has no zoo
    (["frobnicate"], 2, "invalid choice"),
]


@pytest.fixture(scope="module")
def error_setup(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("errors")
    archive = _archive(tmp, UsesEinsum(), (torch.randn(2, 3), torch.randn(3, 4)), "script")
    (tmp / "a_file").write_text("not a model")
    assert main(["export", str(archive), "-o", str(tmp / "m12.onnx"), "--input", "a:2x3", "--input", "b:3x4",
                 "--opset", "12"]) == 0
    return tmp, archive


@pytest.mark.parametrize("argv, code, text", ERROR_CASES, ids=[" ".join(c[0][:1] + c[0][2:5]) for c in ERROR_CASES])
def test_errors_are_one_line_with_an_exit_code(error_setup, capsys, argv, code, text):
    tmp, archive = error_setup
    capsys.readouterr()
    got = main([a.format(tmp=tmp, archive=archive) for a in argv])
    out, err = capsys.readouterr()
    assert got == code
    assert err.startswith("torchscript-onnx: error: ") and err.count("\n") == 1, err
    assert text in err


def test_export_error_prints_the_exporters_message_without_traceback(error_setup, capsys):
    tmp, archive = error_setup
    capsys.readouterr()
    code = main(["export", str(archive), "-o", str(tmp / "m9.onnx"), "--input", "a:2x3", "--input", "b:3x4",
                 "--opset", "9"])
    err = capsys.readouterr().err
    assert code == 1
    first, *rest = err.splitlines()
    assert first.startswith("torchscript-onnx: error: ") and "opset 9" in first
    assert any("aten::einsum" in line and "opset_version=12" in line for line in rest)
    assert "Traceback" not in err and not (tmp / "m9.onnx").exists()


def test_a_models_failure_ends_with_the_models_own_error_line(archives, tmp_path, capsys):
    x = torch.randn(1, 1, 3, 8, 8)
    with pytest.raises(RuntimeError) as raised:
        torch.jit.load(str(archives["conv"]))(x)
    model_line = str(raised.value).strip().splitlines()[-1]
    assert "input" in model_line and "[1, 1, 3, 8, 8]" in model_line  # what is wrong, in torch's words
    for command in (["export", archives["conv"], "-o", tmp_path / "m.onnx"], ["audit", archives["conv"]]):
        code, _, err = _run(capsys, [*command, "--input", "x:1x1x3x8x8"])
        lines = err.splitlines()
        assert code == 1 and lines[0].startswith("torchscript-onnx: error: ")
        assert lines[-1].strip() == model_line, err
        assert "more lines" not in err and "<--- HERE" not in err  # the TorchScript traceback is left out
        assert any("--traceback shows it" in line for line in lines)


def test_a_long_message_keeps_its_last_line(capsys, monkeypatch):
    def fails(args):
        raise ValueError("\n".join(["first"] + [f"line {k}" for k in range(1, 40)] + ["the cause"]))

    monkeypatch.setattr(torchscript_onnx.cli, "_supported_ops", fails)
    assert main(["supported-ops"]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "torchscript-onnx: error: first" and lines[-1] == "  the cause"
    assert len(lines) == 1 + torchscript_onnx.cli.ERROR_LINES + 1 and "more lines" in lines[-2]


def test_traceback_option_shows_the_exception(error_setup):
    tmp, archive = error_setup
    with pytest.raises(torchscript_onnx.UnsupportedOperatorError):
        main(["export", str(archive), "-o", str(tmp / "m9.onnx"), "--input", "a:2x3", "--input", "b:3x4",
              "--opset", "9", "--traceback"])


def test_closed_stdout_pipe_exits_quietly():
    read_end, write_end = os.pipe()
    os.close(read_end)  # as `| head` after it has read what it wanted: every write fails
    try:
        done = subprocess.run([sys.executable, "-m", "torchscript_onnx", "supported-ops"], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, cwd=REPO,
                              env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (141, "")


# ------------------------------------------------------------------------------------------ specs

@pytest.mark.parametrize("spec, parsed", [
    ("x:1x3x224x224", ("x", (1, 3, 224, 224), "float32")),
    ("ids:2x16:int64", ("ids", (2, 16), "int64")),
    ("mask:4:bool", ("mask", (4,), "bool")),
    ("t:scalar:double", ("t", (), "float64")),
    ("h:0x8:half", ("h", (0, 8), "float16")),
])
def test_input_spec(spec, parsed):
    assert parse_input_spec(spec) == parsed


@pytest.mark.parametrize("spec, parsed", [("x:0=batch", ("x", 0, "batch")), ("input.1:2", ("input.1", 2, None))])
def test_dynamic_spec(spec, parsed):
    assert parse_dynamic_spec(spec) == parsed


@pytest.mark.parametrize("spec, parsed", [
    ("batch=5", {"batch": 5}),
    ("x:0=5,y:0=5", {"x": {0: 5}, "y": {0: 5}}),
    ("x:0=1, x:2=7, seq=3", {"x": {0: 1, 2: 7}, "seq": 3}),
])
def test_sizes_spec(spec, parsed):
    assert parse_sizes_spec(spec) == parsed


# ------------------------------------------------------------------------------------------ docs/cli.md

def _loose(text: str) -> list[str]:
    """Lines with what varies from run to run blurred: floats (a difference that happens to be
    exactly 0 prints as a bare ``0``), times, node and initializer counts, the IR version; runs of
    spaces (column widths) as one."""
    text = re.sub(r"\d+(\.\d+)?e[-+]\d+|\d+\.\d+|(?<!\S)0(?!\S)", "#", text)
    text = re.sub(r"\d+ nodes|nodes: +\d+|initializers: \d+|version \d+", "#", text)
    return [" ".join(line.split()) for line in text.strip().splitlines()]


def test_docs_cli_examples_run_as_shown(tmp_path, capsys, monkeypatch):
    text = (REPO / "docs" / "cli.md").read_text()
    monkeypatch.chdir(tmp_path)
    for k, block in enumerate(re.findall(r"```python\n(.*?)```", text, re.S)):
        (tmp_path / f"block{k}.py").write_text(block)  # scripting needs the source in a file
        subprocess.run([sys.executable, f"block{k}.py"], check=True, cwd=tmp_path, timeout=300)
    blocks = re.findall(r"```(\w*)\n(.*?)```", text, re.S)  # (language, text); a plain block after a
    runs = [(body.removeprefix("$ ").strip(), blocks[k + 1][1] if k + 1 < len(blocks) and not blocks[k + 1][0]
             else "") for k, (language, body) in enumerate(blocks) if language == "console"]  # command: its output
    assert len(runs) == 4
    for command, shown in runs:
        capsys.readouterr()
        assert main(shlex.split(command)[1:]) == 0, command
        out = _loose(capsys.readouterr().out)
        expected = _loose(shown)
        if expected and expected[-1] == "...":
            expected, out = expected[:-1], out[:len(expected) - 1]
        assert out == expected, command
