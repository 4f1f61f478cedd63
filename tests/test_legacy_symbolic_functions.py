"""Symbolics that call torch's own legacy symbolic functions run on our values.

Custom symbolics written for the legacy exporter call ``torch.onnx.symbolic_opset9.softmax`` and the
like on the values they receive (SEW-D's ``XSoftmax``). Those functions read our values through
torch's JIT API (``isinstance(v, torch._C.Value)``, ``v.type().isSubtypeOf(...)``, ``v.node().kind()``,
``jit_utils.add_op_with_blocks``, ...): here they convert ops of a model in place of ours, and the
model runs in onnxruntime as in eager PyTorch. Where torch still has the legacy exporter, the
arguments of a symbolic are also compared with what the legacy exporter hands the same symbolic.
"""

from __future__ import annotations

import importlib
import io
import os
import warnings

import numpy as np
import onnxruntime as ort
import pytest
import torch

import torchscript_onnx as tso
from torchscript_onnx.verify import verify

os.environ["HF_HUB_OFFLINE"] = "1"
_C = torch._C


def _legacy_registry():
    """torch's legacy symbolic registry, every opset's module loaded; skips on a torch without it."""
    registration = pytest.importorskip("torch.onnx._internal.torchscript_exporter.registration",
                                       reason="this torch has no legacy exporter whose functions to call")
    for opset in range(7, 21):
        importlib.import_module(f"torch.onnx._internal.torchscript_exporter.symbolic_opset{opset}")
    return registration.registry


def _x(*shape):
    torch.manual_seed(0)
    return torch.randn(*shape)


# (case, model, inputs, ops converted by torch's functions, opset, dynamic axes, other inputs)
CASES = [
    ("softmax-masked_fill", lambda x, m: torch.softmax(x.masked_fill(m, -1e4), -1),
     lambda: (_x(2, 5), _x(2, 5) > 0), ("aten::softmax", "aten::masked_fill"), 13, {"x": {0: "n"}, "m": {0: "n"}},
     lambda: [(_x(3, 5), _x(3, 5) > 0)]),
    ("view-runtime-sizes", lambda x: x.view(x.size(0), -1, 2).transpose(1, 2), lambda: (_x(2, 3, 4),),
     ("aten::view", "aten::transpose"), 13, {"x": {0: "n"}}, lambda: [(_x(5, 3, 4),)]),
    ("cat-with-empty", lambda x, y: torch.cat([x, torch.zeros(0), y]), lambda: (_x(3), _x(2)),
     ("aten::cat",), 13, None, None),
    ("index-none-and-tensor", lambda x, i: x[i, None], lambda: (_x(3, 4), torch.tensor([2, 0])),
     ("aten::index",), 13, None, None),
    ("layer_norm", lambda x: torch.nn.functional.layer_norm(x, (4,)), lambda: (_x(2, 3, 4),),
     ("aten::layer_norm",), 17, {"x": {0: "n"}}, lambda: [(_x(5, 3, 4),)]),
    ("sum-keepdim", lambda x: x.sum([1], keepdim=True), lambda: (_x(2, 3, 4),), ("aten::sum",), 13, None, None),
    ("diagonal (If)", lambda x: torch.diagonal(x, 1), lambda: (_x(3, 4),), ("aten::diagonal",), 17, None, None),
    ("scatter_reduce (If)", lambda x, i, s: x.scatter_reduce(0, i, s, "amax"),
     lambda: (_x(3, 4), torch.tensor([[0, 1, 2, 0], [1, 2, 0, 1]]), _x(2, 4)), ("aten::scatter_reduce",), 16,
     None, None),
]


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


@pytest.fixture
def torch_functions():
    """Register torch's legacy functions for ops with our exporter; unregistered afterwards."""
    registry, made = _legacy_registry(), []

    def register(ops, opset):
        for op in ops:
            tso.register_custom_op_symbolic(op, registry.get_function_group(op).get(opset), opset)
            made.append((op, opset))

    yield register
    for op, opset in made:
        tso.unregister_custom_op_symbolic(op, opset)


@pytest.mark.parametrize(("case", "fn", "inputs", "ops", "opset", "axes", "others"), CASES, ids=[c[0] for c in CASES])
def test_torch_functions_convert_ops_on_our_values(torch_functions, case, fn, inputs, ops, opset, axes, others):
    torch_functions(ops, opset)
    model, args = Fn(fn).eval(), inputs()
    names = [f"in{k}" for k in range(len(args))] if axes is None else list(axes)
    options = dict(opset_version=opset, input_names=names, dynamic_axes=axes or {})
    verify(model, args, other_inputs=others() if others else (), **options)


# ---------------------------------------------------------------------------------------------------
# The arguments a symbolic receives, as the legacy exporter hands them


PROBE_TYPES = {"Tensor": _C.TensorType.get(), "List[int]": _C.ListType.ofInts(), "List[Tensor]": _C.ListType.ofTensors(),
               "Optional[Tensor]": _C.OptionalType.ofTensor(), "None": _C.NoneType.get(), "int": _C.IntType.get()}


def _describe(value):
    """What a symbolic can learn about an argument through torch's JIT API."""
    if not isinstance(value, _C.Value):
        return repr(value)
    jit_type, node = value.type(), value.node()
    seen = {"type": type(jit_type).__name__, "str": str(jit_type), "node": node.kind(), "none": node.mustBeNone(),
            "subtype of": sorted(k for k, probe in PROBE_TYPES.items() if jit_type.isSubtypeOf(probe))}
    for method in ("scalarType", "dim", "sizes", "varyingSizes", "dtype"):
        try:
            seen[method] = getattr(jit_type, method)()
        except Exception as error:  # noqa: BLE001 - the exception is the answer
            seen[method] = type(error).__name__
    if seen["node"] == "onnx::Constant":
        seen["kindOf"] = node.kindOf("value")
        if seen["kindOf"] == "s":  # legacy's string constant has an undefined scalar type; ours none
            if seen["scalarType"] == "UNKNOWN_SCALAR" and seen["dtype"] == "ValueError":
                seen["scalarType"] = seen["dtype"] = None
    return seen


class Probed(torch.nn.Module):
    def forward(self, x, y, i):
        a = torch.softmax(x, 1)  # an int and a None argument
        b = a.view(x.size(0), -1)  # a list of runtime and constant sizes
        c = torch.cat([b, y], 1)  # a list of tensors
        d = c.sum([1], keepdim=True)  # a constant list, a bool
        e = torch.nn.functional.gelu(x, approximate="tanh")  # a string
        f = torch.stack([e.sum(), e.mean()])  # a list of 0-d tensors
        g = x.expand(2, x.size(0), x.size(1))
        return d[i, None] + 2.5, f, g  # a list with None; a float


PROBED_OPS = ("aten::softmax", "aten::view", "aten::cat", "aten::sum", "aten::index", "aten::gelu", "aten::add",
              "aten::expand", "aten::stack")


def test_symbolic_arguments_answer_as_in_legacy():
    registry = _legacy_registry()
    args = (_x(2, 3), _x(2, 4), torch.tensor([1, 0]))
    options = dict(opset_version=13, input_names=["x", "y", "i"], dynamic_axes={"x": {0: "b"}, "y": {0: "b"}})
    seen = {"legacy": [], "ours": []}

    def probing(which, op, convert):
        def symbolic(g, *inputs):
            seen[which].append((op, [_describe(v) for v in inputs]))
            return convert(g, *inputs)

        return symbolic

    for op in PROBED_OPS:
        torch.onnx.register_custom_op_symbolic(op, probing("legacy", op, registry.get_function_group(op).get(13)), 13)
        tso.register_custom_op_symbolic(op, probing("ours", op, tso.symbolic.registry.builtin_lookup(op, 13)), 13)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(Probed(), args, io.BytesIO(), dynamo=False, **options)
        tso.export(Probed(), args, io.BytesIO(), **options)
    finally:
        for op in PROBED_OPS:
            torch.onnx.unregister_custom_op_symbolic(op, 13)
            tso.unregister_custom_op_symbolic(op, 13)
    assert len(seen["ours"]) == len(seen["legacy"]) == len(PROBED_OPS) + 1  # index's list, add twice
    for legacy, ours in zip(seen["legacy"], seen["ours"]):
        assert ours == legacy


# ---------------------------------------------------------------------------------------------------
# SEW-D: XSoftmax.symbolic calls torch.onnx.symbolic_opset9's masked_fill and softmax


def _sew_d():
    transformers = pytest.importorskip("transformers")
    config = transformers.SEWDConfig(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37, conv_dim=(32, 32, 32),
        conv_stride=(5, 2, 2), conv_kernel=(10, 3, 3), squeeze_factor=2, num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=2, position_buckets=16, max_position_embeddings=64)
    torch.manual_seed(0)
    return transformers.SEWDModel(config).eval()


SEW_D_OPTIONS = dict(opset_version=14, input_names=["input_values"], output_names=["last_hidden_state"],
                     dynamic_axes={"input_values": {0: "batch", 1: "samples"},
                                   "last_hidden_state": {0: "batch", 1: "frames"}})


def test_sew_d_exports_with_its_symbolic():
    model = _sew_d()
    proto = tso.export(model, (_x(1, 2000),), **SEW_D_OPTIONS)
    assert "Softmax" in {n.op_type for n in proto.graph.node}  # XSoftmax through opset9.softmax
    verify(model, (_x(1, 2000),), other_inputs=[(_x(2, 3200),)], **SEW_D_OPTIONS)


def test_sew_d_exports_through_torch_onnx_export_once_installed(installed_on_both_torches):
    """As HF optimum exports it: torch.onnx.export(..., dynamo=False) routed by install(). On a
    torch without the legacy exporter, XSoftmax.symbolic's imports of torch.onnx.symbolic_helper
    and symbolic_opset9 find ours, which install() put there."""
    model, buffer = _sew_d(), io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (_x(1, 2000),), buffer, dynamo=False, do_constant_folding=True, **SEW_D_OPTIONS)
    session = ort.InferenceSession(buffer.getvalue())
    for shape in ((1, 2000), (2, 3200)):
        x = _x(*shape)
        with torch.no_grad():
            expected = model(x).last_hidden_state.numpy()
        (got,) = session.run(None, {"input_values": x.numpy()})
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
