"""The registry: names, docstrings, fall-through and the generated supported-ops page."""

import pathlib
import re

import pytest

from torchscript_onnx import supported_ops
from torchscript_onnx.supported_ops_doc import render
from torchscript_onnx.symbolic import registry

NAME = re.compile(r"^[a-z_]+::[A-Za-z_][A-Za-z0-9_.]*$")


@pytest.mark.parametrize("name,opset,fn", registry.all_functions(), ids=lambda x: str(x) if isinstance(x, (str, int)) else "")
def test_registered_name_and_docstring(name, opset, fn):
    assert NAME.match(name), name
    assert fn.__doc__ and fn.__doc__.strip(), f"{name} at opset {opset} ({fn.__module__}.{fn.__name__}) has no docstring"


FALL_THROUGH_CASES = [
    # registered versions, target opset, expected version (None: not available)
    ({9: "v9"}, 7, "v9"),
    ({9: "v9"}, 26, "v9"),
    ({9: "v9", 11: "v11"}, 10, "v9"),
    ({9: "v9", 11: "v11"}, 11, "v11"),
    ({9: "v9", 11: "v11"}, 26, "v11"),
    ({7: "v7", 9: "v9"}, 8, "v9"),
    ({7: "v7", 9: "v9"}, 7, "v7"),
    ({8: "v8"}, 7, "v8"),
    ({11: "v11"}, 10, None),
    ({11: "v11"}, 8, None),
]


@pytest.mark.parametrize("versions,target,expected", FALL_THROUGH_CASES)
def test_fall_through(versions, target, expected):
    assert registry._fall_through(versions, target) == expected


def test_supported_ops_lists_core_ops():
    ops = supported_ops(20)
    assert "aten::_convolution" in ops and "aten::relu" in ops
    assert ops == sorted(ops)


def test_supported_ops_doc_is_current():
    path = pathlib.Path(__file__).resolve().parent.parent / "docs" / "supported_ops.md"
    assert path.read_text() == render(), "docs/supported_ops.md is stale: run python -m torchscript_onnx.supported_ops_doc > docs/supported_ops.md"
