"""The torchscript-onnx command: the demo exports, checks and compares; supported-ops lists."""

import onnx
import pytest

from torchscript_onnx.cli import main


def test_demo_exports_checks_and_compares(tmp_path, capsys):
    output = tmp_path / "mnist.onnx"
    assert main(["demo", "--model", "mnist", "--opset", "13", "--output", str(output)]) == 0
    printed = capsys.readouterr().out
    assert "checker: onnx.checker.check_model(full_check=True) passed" in printed
    assert "compare: onnxruntime matches PyTorch" in printed
    proto = onnx.load(str(output))
    assert proto.opset_import[0].version == 13


def test_demo_rejects_unknown_model(capsys):
    assert main(["demo", "--model", "no_such_model"]) == 2
    assert "choose one of" in capsys.readouterr().err


def test_demo_rejects_bad_opset():
    with pytest.raises(SystemExit):
        main(["demo", "--opset", "30"])


def test_supported_ops_lists_registry(capsys):
    assert main(["supported-ops", "--opset", "9"]) == 0
    names = capsys.readouterr().out.split()
    assert "aten::_convolution" in names and "aten::einsum" not in names  # einsum needs opset 12
