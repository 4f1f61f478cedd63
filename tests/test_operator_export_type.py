"""operator_export_type: ATen nodes everywhere, ATen only where no conversion exists, or ops as they are."""

import pytest
import torch

import torchscript_onnx
from torchscript_onnx import OperatorExportTypes


class HalfSupported(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.special.i0(torch.relu(self.linear(x))) + 1


def _nodes(mode, opset=17):
    proto = torchscript_onnx.export(HalfSupported(), (torch.randn(2, 4),), None, operator_export_type=mode,
                                    opset_version=opset)
    return proto, [(n.domain, n.op_type, {a.name: a.s.decode() for a in n.attribute if a.type == a.STRING})
                   for n in proto.graph.node if n.op_type != "Constant"]


def test_onnx_aten_makes_every_aten_op_an_aten_node():
    proto, nodes = _nodes(OperatorExportTypes.ONNX_ATEN)
    assert [(d, op, attrs["operator"]) for d, op, attrs in nodes] == [
        ("org.pytorch.aten", "ATen", "linear"), ("org.pytorch.aten", "ATen", "relu"),
        ("org.pytorch.aten", "ATen", "i0"), ("org.pytorch.aten", "ATen", "add")]
    assert nodes[3][2]["overload_name"] == "Tensor"
    assert {(o.domain, o.version) for o in proto.opset_import} == {("", 17), ("org.pytorch.aten", 1)}


def test_onnx_aten_fallback_only_where_no_conversion_exists():
    _, nodes = _nodes(OperatorExportTypes.ONNX_ATEN_FALLBACK)
    assert [(d, op) for d, op, _ in nodes] == [("", "Gemm"), ("", "Relu"), ("org.pytorch.aten", "ATen"), ("", "Add")]
    assert nodes[2][2] == {"operator": "i0", "overload_name": ""}


def test_onnx_fallthrough_keeps_unconvertible_ops_as_they_are():
    proto, nodes = _nodes(OperatorExportTypes.ONNX_FALLTHROUGH)
    assert [(d, op) for d, op, _ in nodes] == [("", "Gemm"), ("", "Relu"), ("aten", "i0"), ("", "Add")]
    assert ("aten", 1) in {(o.domain, o.version) for o in proto.opset_import}


def test_torch_enum_members_are_accepted():
    _, nodes = _nodes(torch.onnx.OperatorExportTypes.ONNX_ATEN_FALLBACK)
    assert ("org.pytorch.aten", "ATen") in {(d, op) for d, op, _ in nodes}


def test_plain_onnx_still_reports_the_unsupported_op():
    with pytest.raises(torchscript_onnx.UnsupportedOperatorError, match="aten::i0"):
        _nodes(OperatorExportTypes.ONNX)


def test_g_at_in_a_custom_symbolic():
    def i0(g, x):
        return g.at("i0", x)

    torchscript_onnx.register_custom_op_symbolic("aten::i0", i0, 9)
    try:
        _, nodes = _nodes(OperatorExportTypes.ONNX)
    finally:
        torchscript_onnx.unregister_custom_op_symbolic("aten::i0", 9)
    assert ("org.pytorch.aten", "ATen", {"operator": "i0", "overload_name": ""}) in nodes
