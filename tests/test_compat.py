"""The compatibility surface: tests/legacy_symbolics.py, written for torch.onnx, runs unchanged with
the import switched to torchscript_onnx; the same file with torch.onnx imports gives the same graph."""

from __future__ import annotations

import importlib.util
import io
import pathlib
import sys
import types
import warnings

import onnx
import pytest
import torch

import torchscript_onnx as tso
from torchscript_onnx.verify import verify

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import legacy_symbolics as ours  # noqa: E402

SOURCE = pathlib.Path(__file__).with_name("legacy_symbolics.py").read_text()


def _as_torch_onnx() -> types.ModuleType:
    """The same file with the legacy imports, for comparison."""
    text = SOURCE.replace("from torchscript_onnx import symbolic_helper", "from torch.onnx import symbolic_helper")
    text = text.replace("from torchscript_onnx import symbolic_opset9", "from torch.onnx import symbolic_opset9")
    text = text.replace("from torchscript_onnx.symbolic_helper import", "from torch.onnx.symbolic_helper import")
    assert "torchscript_onnx" not in text.split('"""', 2)[2]
    module = types.ModuleType("legacy_symbolics_torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(text, "legacy_symbolics_torch.py", "exec"), module.__dict__)
    return module


@torch.library.custom_op("tso_legacy::fast_gelu", mutates_args=())
def fast_gelu(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x)


@fast_gelu.register_fake
def _(x):
    return torch.empty_like(x)


class UsesAll(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(6, 5)

    def forward(self, x, y):
        a = torch.softmax(x, dim=1)
        b = torch.nn.functional.gelu(y)
        c = torch.flatten(torch.relu(x.reshape(2, 3, 2)), 1)
        d = torch.cat([a, c, b], dim=1)
        e = self.lin(d[:, :6])
        f = torch.ops.tso_legacy.fast_gelu(e)
        return f.reshape(f.size(0) * f.size(1))


def _args():
    torch.manual_seed(0)
    return torch.randn(2, 6), torch.randn(2, 6)


@pytest.fixture
def both_registered(request):
    """Register the file's symbolics with both exporters at the test's opset (legacy lets a built-in
    re-registered above a custom registration's opset shadow it; registering at the export opset
    avoids that difference, see docs/migration.md)."""
    opset = request.node.callspec.params["opset"]
    legacy = _as_torch_onnx()
    for name, fn, _ in ours.REGISTRATIONS:
        tso.register_custom_op_symbolic(name, fn, opset)
        torch.onnx.register_custom_op_symbolic(name, getattr(legacy, fn.__name__), opset)
    yield
    for name, _, _ in ours.REGISTRATIONS:
        tso.unregister_custom_op_symbolic(name, opset)
        torch.onnx.unregister_custom_op_symbolic(name, opset)


def _legacy_export(model, args, **options):
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, buffer, dynamo=False, **options)
    return onnx.load_from_string(buffer.getvalue())


def _ops(proto):
    return [(n.domain, n.op_type) for n in proto.graph.node if n.op_type not in ("Constant", "Identity")]


@pytest.mark.parametrize("opset", [11, 13, 17])
def test_legacy_symbolic_file_runs_unchanged(both_registered, opset):
    model, args = UsesAll().eval(), _args()
    options = dict(opset_version=opset, custom_opsets={"com.microsoft": 1})
    proto = tso.export(model, args, **options)
    ops = _ops(proto)
    assert ("", "Softmax") not in ops and ("", "LogSoftmax") in ops  # softmax_as_exp_norm
    assert ("", "Erf") in ops  # gelu through symbolic_opset9.gelu
    assert ("com.microsoft", "Gelu") in ops
    assert ("", "Shape") not in ops  # setType gave static sizes; f.size() folded
    verify(model, args, **options)


@pytest.mark.parametrize("opset", [11, 17])
def test_same_graph_as_with_torch_onnx(both_registered, opset):
    model, args = UsesAll().eval(), _args()
    options = dict(opset_version=opset, custom_opsets={"com.microsoft": 1})
    ours_ops = [op for op in _ops(tso.export(model, args, **options))]
    legacy_ops = [op for op in _ops(_legacy_export(model, args, **options))]
    assert sorted(ours_ops) == sorted(legacy_ops)


def test_value_surface():
    seen = {}

    def probe(g, self):
        seen.update(
            sizes=self.type().sizes(), scalar=self.type().scalarType(), dim=self.type().dim(),
            kind=self.node().kind(), complete=self.isCompleteTensor(),
        )
        out = g.op("Relu", self)
        seen["out_kind"] = out.node().kind()
        return out

    class M(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x + 1)

    tso.register_custom_op_symbolic("::relu", probe, 9)
    try:
        tso.export(M(), (torch.randn(2, 3),), opset_version=17)
    finally:
        tso.unregister_custom_op_symbolic("::relu", 9)
    assert seen == dict(sizes=[2, 3], scalar="Float", dim=2, kind="onnx::Add", complete=True,
                        out_kind="onnx::Relu")


def test_symbolic_opsets_importable_from_the_package():
    from torchscript_onnx import symbolic_opset9, symbolic_opset18

    assert symbolic_opset9.gelu is importlib.import_module("torchscript_onnx.symbolic.symbolic_opset9").gelu
    assert symbolic_opset18.__name__ == "torchscript_onnx.symbolic.symbolic_opset18"
    with pytest.raises(ImportError):
        from torchscript_onnx import symbolic_opset99  # noqa: F401
