"""symbolic_opset7 ... symbolic_opset26 are exact legacy facades: the public names of
``torch.onnx.symbolic_opsetN`` (no more: no torch, onnx, helpers or topic-module leftovers), each
read as our built-in conversion of that op at that opset, callable the way legacy custom symbolics
call them. symbolic_helper exports every name of torch's ``symbolic_helper.__all__`` (and the named
API our conversions use), each function taking legacy's parameters (what they do:
tests/test_legacy_helper_facade.py). torch.onnx is imported here only to read its modules' names and
signatures."""

from __future__ import annotations

import __future__
import importlib
import inspect
import io
import math
import types
import warnings

import numpy as np
import onnxruntime as ort
import pytest
import torch

import torchscript_onnx as tso
from torchscript_onnx.symbolic import registry

TORCH_OPSETS = range(7, 21)  # torch.onnx has symbolic_opset7 ... symbolic_opset20
NEWER_OPSETS = range(21, 27)  # ours only: they expose the names of torch's newest, symbolic_opset20

# Names torch's facade has and ours leaves out: (opset, name) -> why.
LEFT_OUT = {
    **{(n, "block_listed_op"): "the loop variable legacy's module leaks (a string: the last name of "
       "block_listed_operators), not a function" for n in (7, 8)},
    **{(n, "block_listed_operators"): "legacy's list of the ops it refuses below opset 9; ours converts a different "
       "set (registry.registered_names(opset) says which)" for n in (7, 8)},
    (9, "convert_element_type"): "prim::convert_element_type does not reach our converter; no conversion of ours",
    (9, "get_pool_ceil_padding"): "a pooling helper of legacy's (not an op); our pools compute ceil mode padding "
                                  "inside their conversion",
    (9, "is_pinned"): "we register no conversion for aten::is_pinned (a trace records its result as a constant)",
    (9, "lift"): "we register no conversion for aten::lift (ours converts aten::lift_fresh)",
    (9, "onnx_placeholder"): "onnx::Placeholder is a node legacy's own passes create; ours never creates it",
    (9, "prim_shape"): "prim::shape is answered from the value's shape before any symbolic runs; no conversion",
    (9, "unsupported_complex_operators"): "aten::_conj / conj_physical convert from opset 17 here (complex as a "
                                          "trailing pair, DFT); at opset 9 there is nothing to resolve to",
    (9, "wrap_logical_op_with_cast_to"): "a decorator legacy builds its comparison symbolics with, not a conversion",
    (9, "wrap_logical_op_with_negation"): "a decorator legacy builds its comparison symbolics with, not a conversion",
}

# Parameter names follow the ATen schema (STYLE 3), so a keyword spelled as legacy spells it
# (input= for self=) may differ; legacy symbolics call each other positionally, and every positional
# call legacy's function accepts is accepted by ours, except these: (opset, name) -> why.
_QUANTIZED = ("quantized::<op> takes the packed weight object, as the op does; legacy's takes the weight, bias "
              "and conv parameters its own unpack pass split out of it: legacy's argument list does not apply")
_PRIM = "legacy's prim:: conversions take (*inputs, **attrs) from its node; ours name the node's inputs"
_VARARGS = "legacy spells the schema's optional arguments *args; ours names them (every arity the op has is accepted)"
SIGNATURE_DIFFERENCES = {
    (9, "avg_pool1d"): "aten::avg_pool1d has no divisor_override; legacy's shared pool symbolic takes one",
    (9, "div"): _VARARGS, (10, "div"): _VARARGS,
    (9, "eye"): "legacy's eye(g, *args) always receives n first; ours names it",
    (9, "scalar_tensor"): _VARARGS,
    (9, "slice"): _VARARGS, (10, "slice"): _VARARGS,
    (9, "std"): _VARARGS, (9, "std_mean"): _VARARGS, (9, "var"): _VARARGS, (9, "var_mean"): _VARARGS,
    (9, "upsample_bilinear2d"): "align_corners is named (the schema has it); legacy's *args starts with it",
    (9, "upsample_linear1d"): "align_corners is named (the schema has it); legacy's *args starts with it",
    (9, "upsample_trilinear3d"): "align_corners is named (the schema has it); legacy's *args starts with it",
    **{(9, n): _PRIM for n in ("prim_constant", "prim_device", "prim_if", "prim_list_unpack", "prim_loop",
                               "prim_type", "prim_uninitialized")},
    **{(n, f"quantized_{op}"): _QUANTIZED for n in (10, 13)
       for op in ("conv1d", "conv1d_relu", "conv2d", "conv2d_relu", "conv3d", "conv3d_relu", "conv_transpose1d",
                  "conv_transpose2d", "conv_transpose3d", "linear", "linear_relu")},
    (11, "constant_pad_nd"): "value has no default in ours (the converter always passes it)",
    (13, "fake_quantize_per_channel_affine"): "quant_min/quant_max have no default in ours (the converter always "
                                              "passes them)",
}


def _torch_facade(opset: int) -> types.ModuleType:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return importlib.import_module(f"torch.onnx.symbolic_opset{opset}")


def _torch_names(opset: int) -> set[str]:
    """torch's public names: no underscore, no imported module or __future__ feature."""
    module = _torch_facade(opset)
    return {n for n in dir(module) if not n.startswith("_")
            and not isinstance(getattr(module, n), (types.ModuleType, __future__._Feature))}


def _ours(opset: int) -> types.ModuleType:
    return importlib.import_module(f"torchscript_onnx.symbolic.symbolic_opset{opset}")


def _expected_names(opset: int) -> set[str]:
    source = opset if opset in TORCH_OPSETS else 20
    return {n for n in _torch_names(source) if (opset, n) not in LEFT_OUT}


@pytest.mark.parametrize("opset", [*TORCH_OPSETS, *NEWER_OPSETS])
def test_public_names_are_torchs(opset):
    module = _ours(opset)
    expected = _expected_names(opset)
    assert set(module.__all__) == expected
    assert {n for n in dir(module) if not n.startswith("_")} == expected
    # nothing else is bound in the module: torch, onnx, sh, Value, topic functions are not reachable
    assert [n for n in vars(module) if not n.startswith("_")] == []
    for leak in ("torch", "onnx", "sh", "Value", "symbolic", "ops", "annotations", "legacy_facade"):
        assert not hasattr(module, leak)
    # the star import gives exactly the names, each resolved
    namespace: dict = {}
    exec(f"from {module.__name__} import *", namespace)
    assert set(namespace) - {"__builtins__"} == expected


@pytest.mark.parametrize("opset", TORCH_OPSETS)
def test_left_out_names_are_torchs_and_absent(opset):
    for (n, name), reason in LEFT_OUT.items():
        if n == opset:
            assert reason and name in _torch_names(opset)
            assert not hasattr(_ours(opset), name)


def _conversion(module, name):
    """The conversion behind a facade name (the facade wraps those in its _LEGACY_EXTRAS)."""
    value = getattr(module, name)
    return value.__wrapped__ if name in getattr(module, "_LEGACY_EXTRAS", {}) else value


@pytest.mark.parametrize("opset", [*TORCH_OPSETS, *NEWER_OPSETS])
def test_names_resolve_to_the_builtin_conversion_at_that_opset(opset):
    module = _ours(opset)
    builtins = {id(fn) for _, _, fn in registry.all_functions()}
    ops = getattr(module, "_OPS", {})
    for name in module.__all__:
        if name in getattr(module, "_CONSTANTS", {}):
            continue  # not conversions: symbolic_opset16's grid mode tables, symbolic_opset9.unused
        fn = _conversion(module, name)
        assert id(fn) in builtins, name
        assert registry.builtin_lookup(ops.get(name) or registry.legacy_op_name(name), opset) is fn, name


def test_names_follow_the_opset():
    # the facade of opset N gives the version the registry uses at N
    from torchscript_onnx.symbolic.ops import activation, reduction

    assert _ours(9).cumsum is reduction.cumsum
    assert _ours(11).cumsum is reduction.cumsum_11
    assert _ours(9).gelu is activation.gelu and _ours(20).gelu is activation.gelu_20
    assert _ours(21).gelu is _ours(20).gelu
    assert _ours(16).GRID_SAMPLE_PADDING_MODES == torch.nn.functional.GRID_SAMPLE_PADDING_MODES
    assert _ours(16).GRID_SAMPLE_INTERPOLATION_MODES == torch.nn.functional.GRID_SAMPLE_INTERPOLATION_MODES


def test_a_custom_registration_does_not_change_the_facade():
    builtin = _ours(9).relu
    tso.register_custom_op_symbolic("::relu", lambda g, x: g.op("Relu", x), 9)
    try:
        assert _ours(9).relu is builtin
    finally:
        tso.unregister_custom_op_symbolic("::relu", 9)


def _positional_range(fn) -> tuple[int, float]:
    low = high = 0
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            high += 1
            low += p.default is p.empty
        elif p.kind is p.VAR_POSITIONAL:
            high = math.inf
    return low, high


def _signature_mismatches(opset: int) -> set[str]:
    theirs, ours = _torch_facade(opset), _ours(opset)
    bad = set()
    for name in ours.__all__:
        if not callable(getattr(ours, name)):
            continue  # symbolic_opset16's grid mode tables
        t_low, t_high = _positional_range(getattr(theirs, name))
        o_low, o_high = _positional_range(getattr(ours, name))
        if not (o_low <= t_low and o_high >= t_high):
            bad.add(name)
    return bad


@pytest.mark.parametrize("opset", TORCH_OPSETS)
def test_signatures_accept_legacys_positional_calls(opset):
    documented = {name for (n, name), reason in SIGNATURE_DIFFERENCES.items() if n == opset and reason}
    assert _signature_mismatches(opset) == documented


def test_legacy_trailing_arguments_are_accepted_and_dropped():
    split = _ours(13).split
    params = list(inspect.signature(split).parameters)
    assert params[-1] == "_outputs" and split.__wrapped__ is registry.builtin_lookup("aten::split", 13)
    assert list(inspect.signature(_ours(11).topk).parameters)[-1] == "out"
    with pytest.raises(TypeError):  # more than legacy's extras still fails
        split(None, None, 1, 0, 2, "one too many")


# ---- legacy-style custom symbolics calling the facades, exported and run against eager ----

def _add_via_opset11(g, self, other, alpha=None):
    from torchscript_onnx import symbolic_opset11

    return symbolic_opset11.add(g, self, other, alpha)


def _split_via_opset13(g, self, split_size_or_sizes, dim, _outputs=None):
    from torchscript_onnx import symbolic_opset13

    return symbolic_opset13.split(g, self, split_size_or_sizes, dim, _outputs)


def _relu_via_opset9(g, self):
    from torchscript_onnx import symbolic_opset9

    return symbolic_opset9.relu(g, symbolic_opset9.neg(g, self))  # a recognisably different lowering


def _relu_as_clip_via_unused(g, self):
    from torchscript_onnx import symbolic_opset9

    # legacy's way to leave Clip's min input out
    return g.op("Clip", self, symbolic_opset9.unused(g), g.op("Constant", value_t=torch.tensor(0.5)))


def _where_via_opset13(g, condition, self, other):
    from torchscript_onnx import symbolic_opset13

    return symbolic_opset13.where(g, condition, self, other, 1)


class Add(torch.nn.Module):
    def forward(self, x, y):
        return torch.add(x, y, alpha=2)


class Split(torch.nn.Module):
    def forward(self, x, y):
        a, b = torch.split(x, [1, 2], dim=1)
        return a * 2 + y[:, :1], b


class NegRelu(torch.nn.Module):
    def forward(self, x, y):
        return torch.relu(x) + y


class Where(torch.nn.Module):
    def forward(self, x, y):
        return torch.where(x > 0, x, y)


def _neg_relu_eager(x, y):
    return (torch.relu(-x) + y,)


def _clip_max_eager(x, y):
    return (torch.clamp(x, max=0.5) + y,)


# (op, custom symbolic, model, opset, eager reference or None for the model itself)
FACADE_CALLS = [
    ("::add", _add_via_opset11, Add(), 11, None),
    ("::add", _add_via_opset11, Add(), 17, None),
    ("::split", _split_via_opset13, Split(), 13, None),
    ("::split", _split_via_opset13, Split(), 18, None),
    ("::relu", _relu_via_opset9, NegRelu(), 9, _neg_relu_eager),
    ("::relu", _relu_via_opset9, NegRelu(), 20, _neg_relu_eager),
    ("::relu", _relu_as_clip_via_unused, NegRelu(), 11, _clip_max_eager),
    ("::where", _where_via_opset13, Where(), 13, None),
]


@pytest.mark.parametrize("op, symbolic_fn, model, opset, reference", FACADE_CALLS,
                         ids=[f"{c[1].__name__}-{c[3]}" for c in FACADE_CALLS])
def test_custom_symbolic_calling_a_facade_matches_eager(op, symbolic_fn, model, opset, reference):
    torch.manual_seed(0)
    traced = (torch.randn(2, 3), torch.randn(2, 3))
    tso.register_custom_op_symbolic(op, symbolic_fn, opset)
    try:
        f = io.BytesIO()
        tso.export(model, traced, f, opset_version=opset, input_names=["x", "y"],
                   dynamic_axes={"x": {0: "n"}, "y": {0: "n"}})
    finally:
        tso.unregister_custom_op_symbolic(op, opset)
    session = ort.InferenceSession(f.getvalue(), providers=["CPUExecutionProvider"])
    for rows in (2, 5):  # the traced size and another
        x, y = torch.randn(rows, 3), torch.randn(rows, 3)
        expected = (reference or model)(x, y)
        expected = expected if isinstance(expected, tuple) else (expected,)
        got = session.run(None, {"x": x.numpy(), "y": y.numpy()})
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e.numpy(), rtol=1e-5, atol=1e-6)


# ---- symbolic_helper: every name of torch's symbolic_helper.__all__, taking the same parameters ----

# Ours beyond legacy's names: the named API our conversions use (symbolic_helper's docstring).
HELPER_NAMED_API = {
    "UNKNOWN", "SymbolicValueError", "const", "dtype", "is_const", "is_none", "is_packed_list", "is_static",
    "is_value", "is_wrapped_number", "needs_opset", "promote_types", "rank", "scalar_type_of", "sizes",
    "static_sizes", "unimplemented", "unpack_list", "value_error",
}


def _torch_helper() -> types.ModuleType:
    """torch's symbolic_helper: under _internal since torch 2.9 (torch.onnx.symbolic_helper re-exports it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return importlib.import_module("torch.onnx._internal.torchscript_exporter.symbolic_helper")
        except ImportError:
            return importlib.import_module("torch.onnx.symbolic_helper")


@pytest.mark.parametrize("path", ["torchscript_onnx.symbolic.symbolic_helper", "torchscript_onnx.symbolic_helper"])
def test_symbolic_helper_names_are_torchs_and_the_named_api(path):
    theirs = set(_torch_helper().__all__)
    module = importlib.import_module(path)
    assert len(module.__all__) == len(set(module.__all__))
    assert set(module.__all__) == theirs | HELPER_NAMED_API
    namespace: dict = {}
    exec(f"from {path} import *", namespace)
    assert set(namespace) - {"__builtins__"} == theirs | HELPER_NAMED_API
    assert not HELPER_NAMED_API & theirs


def test_symbolic_helper_functions_take_torchs_parameters():
    # the same parameter names, kinds and order: every call legacy's accepts, by position or keyword
    theirs, ours = _torch_helper(), importlib.import_module("torchscript_onnx.symbolic.symbolic_helper")
    differ = {}
    for name in theirs.__all__:
        if callable(getattr(theirs, name)):
            mine = [(p.name, p.kind) for p in inspect.signature(getattr(ours, name)).parameters.values()]
            legacy = [(p.name, p.kind) for p in inspect.signature(getattr(theirs, name)).parameters.values()]
            if mine != legacy:
                differ[name] = (mine, legacy)
    assert differ == {}

