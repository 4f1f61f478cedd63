"""The legacy helpers that emit ops (symbolic/legacy_lowerings.py, legacy_helpers.py), called the way
custom symbolics written for the legacy exporter call them: each case registers such a symbolic,
exports with ``torchscript_onnx.export`` at the opsets where the helper's output changes, and runs
the model in onnxruntime against eager PyTorch, traced sizes and others. The same symbolic written
against torch's ``symbolic_helper`` runs through the legacy exporter too, where the case says so,
and must give the same numbers (torch.onnx is used here only to compare)."""

from __future__ import annotations

import dataclasses
import io
import pathlib
import sys
import warnings
from collections.abc import Callable

import numpy as np
import onnxruntime as ort
import pytest
import torch
import torch.nn.functional as F  # noqa: N812

import torchscript_onnx as tso
from torchscript_onnx.symbolic import symbolic_helper as OURS

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import legacy_exporter  # noqa: E402
from legacy_exporter import Calls  # noqa: E402

LEGACY = legacy_exporter.SYMBOLIC_HELPER


def _const(g, value):
    return g.op("Constant", value_t=torch.tensor(value))


@dataclasses.dataclass
class Case:
    """``symbolic(sh)`` builds the custom symbolic of ``op`` on the helper module ``sh``; ``forward``
    is the model (its ``op`` converted by that symbolic), ``reference`` what the symbolic computes,
    in eager PyTorch (default: the model); ``make(rows)`` the inputs, ``rows`` varying when dynamic."""

    id: str
    op: str
    symbolic: Callable
    forward: Callable
    make: Callable
    opsets: tuple
    reference: Callable | None = None
    dynamic: bool = True
    legacy: bool = True  # also run the symbolic on torch's helpers through the legacy exporter
    atol: float = 1e-5


def _randn(*shape):
    return lambda rows: (torch.randn(rows, *shape),)


def _ints(*shape, dtype=torch.int32):
    return lambda rows: (torch.randint(-5, 5, (rows, *shape), dtype=dtype),)


def _mixed(rows):
    return torch.randint(-5, 5, (rows, 3), dtype=torch.int32), torch.randn(rows, 3)


def _index_fill(sh):
    def index_fill(g, self, dim, index, value):
        expanded_shape, expanded_index = sh._index_fill_reshape_helper(g, self, dim, index)
        fill = g.op("Constant", value_t=sh._if_scalar_type_as(sh._maybe_get_scalar(value), self))
        return sh._scatter_helper(g, self, dim, expanded_index, g.op("Expand", fill, expanded_shape))

    return index_fill


def _batch_norm(sh):
    def batch_norm(g, input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
        weight, bias, running_mean, running_var = sh._batchnorm_helper(g, input, weight, bias, running_mean,
                                                                       running_var)
        return g.op("BatchNormalization", input, weight, bias, running_mean, running_var,
                    epsilon_f=sh._maybe_get_const(eps, "f"))

    return batch_norm


def _upsample_opset9(sh):
    """What legacy's opset-9 upsample does: scales from the trailing arguments or from the size."""

    def upsample_nearest2d(g, input, output_size, *args):
        scales, _ = sh._get_interpolate_attributes(g, "nearest", args)
        if scales is None:
            scales = sh._interpolate_size_to_scales(g, input, output_size, 4)
        return g.op("Upsample", input, scales, mode_s="nearest")

    return upsample_nearest2d


def _upsample_scales_and_mode(sh):
    def upsample_nearest2d(g, input, output_size, scales):
        scales, mode = sh._interpolate_get_scales_and_mode(g, input, output_size, scales, "nearest", None)
        return g.op("Upsample", input, scales, mode_s=mode)

    return upsample_nearest2d


def _arange_via_cast_helper(sh):
    def arange(g, end, dtype, *rest):
        scalar_type, end, _, _ = sh._arange_cast_helper(g, end=end, dtype=sh._maybe_get_const(dtype, "i"))
        start = g.op("Constant", value_t=torch.tensor(0, dtype=scalar_type.dtype()))
        step = g.op("Constant", value_t=torch.tensor(1, dtype=scalar_type.dtype()))
        return g.op("Range", start, end, step)

    return arange


def _promoted_add(sh):
    def add(g, self, other, alpha=None):
        target = sh._type_promote_from_values(self, other)
        return g.op("Add", sh._maybe_cast_to_type(g, self, target), sh._maybe_cast_to_type(g, other, target))

    return add


def _fake_quantize(sh):
    def relu(g, self):
        scale, zero_point = _const(g, 0.1), g.op("Constant", value_t=torch.tensor(128, dtype=torch.uint8))
        return sh.dequantize_helper(g, sh.quantize_helper(g, self, scale, zero_point))[0]

    return relu


def _fake_quantize_per_channel(sh):
    def relu(g, self):
        scale = _const(g, [0.1, 0.2, 0.05])
        zero_point = g.op("Constant", value_t=torch.tensor([0, 10, 250], dtype=torch.uint8))
        return sh.dequantize_helper(g, sh.quantize_helper(g, self, scale, zero_point, _const(g, 1)))[0]

    return relu


def _bias_added(sh):
    def relu(g, self):
        bias = sh.requantize_bias_helper(g, _const(g, [0.3, -1.26, 2.0]), _const(g, 0.1), _const(g, 0.07))
        return g.op("Add", self, sh.dequantize_helper(g, bias)[0])

    return relu


def _weighted(a, b, c):
    return a + 2 * b + 3 * c


def _bias_reference(x):
    scale = torch.tensor(0.07) * torch.tensor(0.1)
    return x + torch.trunc(torch.tensor([0.3, -1.26, 2.0]) / scale) * scale


def _quantized_sigmoid(sh):
    return sh.quantized_args(True, scale=1.0 / 256, zero_point=0)(lambda g, x: g.op("Sigmoid", x))


def _embedding_bag(sh):
    def embedding_bag(g, weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
                      include_last_offset, padding_idx):
        padding = None if sh._is_none(padding_idx) else sh._get_const(padding_idx, "i", "padding_idx")
        return sh._embedding_bag_helper(g, weight, indices, offsets, sh._get_const(scale_grad_by_freq, "b", "s"),
                                        sh._get_const(mode, "i", "mode"), sh._get_const(sparse, "b", "sparse"),
                                        per_sample_weights, sh._get_const(include_last_offset, "b", "last"),
                                        None if padding is not None and padding < 0 else padding)

    return embedding_bag


_BAG = torch.nn.EmbeddingBag(10, 3, mode="mean").requires_grad_(False)


def _bag_inputs(rows):
    return torch.randint(0, 10, (rows * 3,)), torch.arange(0, rows * 3, 3)


CASES = [
    Case("slice-static", "::relu", lambda sh: lambda g, x: sh._slice_helper(g, x, axes=[1], starts=[1], ends=[3]),
         torch.relu, _randn(4), (9, 10, 13), reference=lambda x: x[:, 1:3]),
    Case("slice-steps", "::relu", lambda sh: lambda g, x: sh._slice_helper(g, x, [1], [0], [4], steps=[2]),
         torch.relu, _randn(4), (10, 13), reference=lambda x: x[:, ::2]),
    Case("slice-runtime-end", "::relu", lambda sh: lambda g, x: sh._slice_helper(
        g, x, axes=[0], starts=[1], ends=sh._size_helper(g, x, _const(g, 0))),
        torch.relu, _randn(3), (10, 13), reference=lambda x: x[1:]),
    Case("unsqueeze-squeeze", "::relu", lambda sh: lambda g, x: sh._squeeze_helper(
        g, sh._unsqueeze_helper(g, x, [0, 3]), [0]), torch.relu, _randn(4), (11, 13),
        reference=lambda x: x.unsqueeze(-1)),
    Case("unsqueeze-runtime-axes", "::relu", lambda sh: lambda g, x: sh._unsqueeze_helper(
        g, x, [g.op("Reshape", g.op("Shape", g.op("Shape", x)), _const(g, [-1]))]),
        torch.relu, _randn(4), (13,), reference=lambda x: x.unsqueeze(-1)),  # axes [2]: the rank, at runtime
    Case("reducesum", "::relu", lambda sh: lambda g, x: sh._reducesum_helper(g, x, axes_i=[1], keepdims_i=0),
         torch.relu, _randn(4), (11, 13, 18), reference=lambda x: x.sum(1)),
    Case("reducesum-noop", "::relu", lambda sh: lambda g, x: sh._reducesum_helper(g, x, noop_with_empty_axes_i=1),
         torch.relu, _randn(4), (13,), reference=lambda x: x),
    Case("reducesum-all", "::relu", lambda sh: lambda g, x: sh._reducesum_helper(g, x, keepdims_i=0),
         torch.relu, _randn(4), (11, 13), reference=lambda x: x.sum()),
    Case("reshape", "::relu", lambda sh: lambda g, x: sh._reshape_helper(g, x, [-1]), torch.relu, _randn(4),
         (9, 14), reference=lambda x: x.reshape(-1)),
    Case("reshape-value", "::relu", lambda sh: lambda g, x: sh._reshape_helper(
        g, x, _const(g, [0, -1, 2])), torch.relu, _randn(4), (13, 14), reference=lambda x: x.reshape(x.size(0), 2, 2)),
    Case("size", "::relu", lambda sh: lambda g, x: g.op("Mul", x, g.op(
        "Cast", g.op("Add", sh._size_helper(g, x, _const(g, 0)), sh._size_helper(g, x, _const(g, 1))), to_i=1)),
        torch.relu, _randn(4), (9, 13), reference=lambda x: x * (x.size(0) + x.size(1))),
    Case("numel", "::relu", lambda sh: lambda g, x: g.op("Mul", x, g.op("Cast", sh._numel_helper(g, x), to_i=1)),
         torch.relu, _randn(4), (9, 13), reference=lambda x: x * x.numel()),
    Case("select", "::relu", lambda sh: lambda g, x: sh._select_helper(g, x, 1, _const(g, 2)), torch.relu,
         _randn(4), (9,), reference=lambda x: x[:, 2:3]),
    Case("sort", "::relu", lambda sh: lambda g, x: sh._sort_helper(g, x, 1, descending=True)[0], torch.relu,
         _randn(4), (10, 11), reference=lambda x: x.sort(1, descending=True).values),
    Case("topk", "::relu", lambda sh: lambda g, x: sh._topk_helper(g, x, 2, 1, True, True)[0], torch.relu, _randn(4),
         (10, 11), reference=lambda x: x.topk(2, 1).values),
    Case("argmax", "::relu", lambda sh: lambda g, x: sh._argmin_argmax_helper(g, x, _const(g, 1), False, "ArgMax"),
         torch.relu, _randn(4), (11, 12), reference=lambda x: x.argmax(1)),
    Case("flatten", "::relu", lambda sh: lambda g, x: sh._flatten_helper(g, x, 1, 2, 3), torch.relu, _randn(3, 4),
         (9, 11), reference=lambda x: x.flatten(1, 2)),
    Case("index_fill", "::index_fill", _index_fill, lambda x: x.index_fill(1, torch.tensor([0, 2]), -1.0),
         _randn(4), (9, 11)),
    Case("repeat_interleave-split", "::relu", lambda sh: lambda g, x: g.op(
        "Concat", *reversed(sh._repeat_interleave_split_helper(g, x, 4, 1)), axis_i=1), torch.relu, _randn(4),
        (11, 13), reference=lambda x: x.flip(1)),
    Case("repeat_interleave-single", "::relu", lambda sh: lambda g, x: sh._repeat_interleave_single_value_repeat_helper(
        g, x, _const(g, 2), 1), torch.relu, _randn(4), (9, 13), reference=lambda x: x.repeat_interleave(2, dim=1)),
    Case("batchnorm", "::batch_norm", _batch_norm, lambda x: F.batch_norm(x, None, None, training=True),
         lambda rows: (torch.randn(2, 3, 4),), (9, 15), dynamic=False),
    Case("var_mean", "::var_mean", lambda sh: lambda g, x, dim, correction, keepdim: sh._var_mean_helper(
        g, x, dim, correction, keepdim), lambda x: torch.var_mean(x, dim=1), _randn(4), (9, 18)),
    Case("var_mean-correction-0", "::var_mean", lambda sh: lambda g, x, dim, correction, keepdim: sh._var_mean_helper(
        g, x, dim, correction, keepdim), lambda x: torch.var_mean(x, dim=1, correction=0, keepdim=True), _randn(4),
        (9, 18)),
    Case("linalg_vector_norm", "::linalg_vector_norm", lambda sh: lambda g, x, ord, dim, keepdim, dtype:
         sh._linalg_vector_norm_helper(g, x, sh._get_const(ord, "f", "ord"), sh._get_const(dim, "is", "dim"),
                                       sh._get_const(keepdim, "b", "keepdim"), dtype),
         lambda x: torch.linalg.vector_norm(x, 2, dim=1), _randn(4), (11, 18)),
    Case("max", "::max", lambda sh: lambda g, x, dim=None, keepdim=None: sh._max_helper(g, x, dim, keepdim),
         lambda x: tuple(torch.max(x, 1)), _randn(4), (11, 18)),
    Case("min", "::min", lambda sh: lambda g, x, dim=None, keepdim=None: sh._min_helper(g, x, dim, keepdim),
         lambda x: tuple(torch.min(x, 1, keepdim=True)), _randn(4), (11, 18)),
    Case("reduce_op", "::amax", lambda sh: lambda g, x, dim, keepdim: sh._reduce_op_symbolic_helper("ReduceMax")(
        g, x, dim, keepdim), lambda x: torch.amax(x, 1), _randn(4), (11, 18)),
    Case("reduce_with_dtype-dim", "::sum", lambda sh: sh._reduce_with_dtype_helper("ReduceSum", "sum"),
         lambda x: x.sum(1), _randn(4), (11, 18)),
    # at 13-17 legacy's _reduce_op_symbolic_helper gives ReduceSum its axes as an attribute, which
    # ReduceSum-13 no longer has (onnxruntime refuses the model): compared with eager only
    Case("reduce_with_dtype-dim-13", "::sum", lambda sh: sh._reduce_with_dtype_helper("ReduceSum", "sum"),
         lambda x: x.sum(1, keepdim=True), _randn(4), (13,), legacy=False),
    Case("reduce_with_dtype-dtype", "::sum", lambda sh: sh._reduce_with_dtype_helper("ReduceSum", "sum"),
         lambda x: x.sum(dtype=torch.float64), _ints(4), (11, 13)),
    Case("reduce_dim_none", "::sum", lambda sh: lambda g, x, dtype: sh._handle_reduce_dim_none(
        g, sh._maybe_cast_reduce_op_input(g, x), "ReduceSum"), lambda x: x.sum(), _ints(4, dtype=torch.int32),
        (11, 13)),
    Case("interpolate_helper-nearest", "::upsample_nearest2d",
         lambda sh: sh._interpolate_helper("upsample_nearest2d", 4, "nearest"),
         lambda x: F.interpolate(x, scale_factor=2.0, mode="nearest"), _randn(2, 3, 3), (11, 13)),
    Case("interpolate_helper-bilinear", "::upsample_bilinear2d",
         lambda sh: sh._interpolate_helper("upsample_bilinear2d", 4, "linear"),
         lambda x: F.interpolate(x, size=(5, 7), mode="bilinear"), _randn(2, 3, 3), (11, 13)),
    Case("upsample-opset9-scales", "::upsample_nearest2d", _upsample_opset9,
         lambda x: F.interpolate(x, scale_factor=2.0, mode="nearest"), _randn(2, 3, 3), (9,)),
    # legacy's _interpolate_size_to_scales takes a traced size list (a ListConstruct of constants) for a
    # runtime value and fails on it (TypeError): compared with eager only
    Case("upsample-opset9-size", "::upsample_nearest2d", _upsample_opset9,
         lambda x: F.interpolate(x, size=(6, 9), mode="nearest"), _randn(2, 3, 3), (9,), legacy=False),
    Case("interpolate_get_scales_and_mode", "::upsample_nearest2d", _upsample_scales_and_mode,
         lambda x: F.interpolate(x, size=(6, 9), mode="nearest"), _randn(2, 3, 3), (9,), legacy=False),
    Case("interpolate_get_scales_and_mode-scales", "::upsample_nearest2d", _upsample_scales_and_mode,
         lambda x: F.interpolate(x, scale_factor=(2.0, 3.0), mode="nearest"), _randn(2, 3, 3), (9,)),
    Case("optional_input_placeholder", "::upsample_nearest2d", lambda sh: lambda g, x, size, scales: g.op(
        "Resize", x, sh._optional_input_placeholder_tensor(g), _const(g, [1.0, 1.0, 2.0, 2.0]),
        mode_s="nearest", coordinate_transformation_mode_s="asymmetric", nearest_mode_s="floor"),
        lambda x: F.interpolate(x, scale_factor=2.0, mode="nearest"), _randn(2, 3, 3), (13,)),
    Case("op_with_optional_float_cast", "::relu", lambda sh: lambda g, x: sh._op_with_optional_float_cast(
        g, "Max", x, g.op("Constant", value_t=torch.tensor(0, dtype=torch.int32)), opset_before=12),
        torch.relu, _ints(4), (11, 12), dynamic=False),  # legacy casts only inputs of complete (static) type
    Case("type_promote", "::add", _promoted_add, lambda x, y: x + y, _mixed, (9, 13)),
    Case("arange_cast_helper", "::arange", _arange_via_cast_helper,
         lambda x: x + torch.arange(x.size(0)).unsqueeze(1), _randn(4), (11,)),
    Case("arange_helper", "::arange", lambda sh: lambda g, *args: sh._arange_helper(g, *args),
         lambda x: x + torch.arange(x.size(0)).unsqueeze(1), _randn(4), (11,)),
    Case("scatter", "::scatter", lambda sh: lambda g, self, dim, index, src: sh._scatter_helper(
        g, self, dim, index, src), lambda x: x.scatter(1, torch.tensor([[1], [3]]), torch.ones(2, 1)), _randn(4),
        (9, 11), dynamic=False),
    Case("lt", "::lt", lambda sh: lambda g, a, b: sh._lt_helper(g, a, b), lambda x: x < x * 0.5, _randn(4),
         (9,)),
    Case("unbind", "::unbind", lambda sh: lambda g, self, dim, _outputs=None: sh._unbind_helper(g, self, dim, 3),
         lambda x: _weighted(*torch.unbind(x, 1)), _randn(3), (11, 13), legacy=False),
    Case("node_get", "::relu", lambda sh: lambda g, x: g.op("Mul", x, g.op("Constant", value_t=2 * sh._node_get(
        _const(g, 2.0).node(), "value"))), torch.relu, _randn(4), (9,), reference=lambda x: x * 4),
    Case("generate_wrapped_number", "::relu", lambda sh: lambda g, x: g.op("Add", x, g.op(
        "Cast", sh._generate_wrapped_number(g, 2.5), to_i=1)), torch.relu, _randn(4), (9,),
        reference=lambda x: x + 2.5),
    Case("quantize_helper", "::relu", _fake_quantize, torch.relu, _randn(4), (10, 13),
         reference=lambda x: torch.fake_quantize_per_tensor_affine(x, 0.1, 128, 0, 255), atol=1e-6),
    Case("quantize_helper-axis", "::relu", _fake_quantize_per_channel, torch.relu, _randn(3), (13,),
         reference=lambda x: torch.fake_quantize_per_channel_affine(
             x, torch.tensor([0.1, 0.2, 0.05]), torch.tensor([0, 10, 250], dtype=torch.int32), 1, 0, 255),
         atol=1e-6),
    Case("requantize_bias_helper", "::relu", _bias_added, torch.relu, _randn(3), (13,), reference=_bias_reference),
    Case("quantized_args", "::sigmoid", _quantized_sigmoid,
         lambda x: torch.sigmoid(torch.quantize_per_tensor(x, 0.05, 128, torch.quint8)).dequantize(), _randn(4),
         (13,), atol=1.01 / 256),
    Case("embedding_bag", "::embedding_bag", _embedding_bag, lambda i, o: _BAG(i, o), _bag_inputs, (11,)),
]


def _flat(result) -> list:
    return [t for item in result for t in _flat(item)] if isinstance(result, (tuple, list)) else [result]


def _export(exporter, register, unregister, case, sh, opset, inputs) -> bytes:
    names = [f"x{k}" for k in range(len(inputs))]
    register(case.op, case.symbolic(sh), opset)
    try:
        f = io.BytesIO()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exporter(Calls(case.forward), inputs, f, opset_version=opset, input_names=names,
                     dynamic_axes={n: {0: "rows"} for n in names} if case.dynamic else None)
    finally:
        unregister(case.op, opset)
    return f.getvalue()


def _ours(case, opset, inputs):
    return _export(tso.export, tso.register_custom_op_symbolic, tso.unregister_custom_op_symbolic, case, OURS,
                   opset, inputs)


def _legacy(case, opset, inputs):
    return _export(legacy_exporter.export, torch.onnx.register_custom_op_symbolic,
                   torch.onnx.unregister_custom_op_symbolic, case, LEGACY, opset, inputs)


def _check(model: bytes, case, sizes):
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    for rows in sizes:
        inputs = case.make(rows)
        expected = _flat((case.reference or case.forward)(*inputs))
        got = session.run(None, {f"x{k}": x.numpy() for k, x in enumerate(inputs)})
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert g.shape == tuple(e.shape)
            np.testing.assert_allclose(g, e.numpy(), rtol=1e-5, atol=case.atol)


_RUNS = [(case, opset) for case in CASES for opset in case.opsets]


@pytest.mark.parametrize("case, opset", _RUNS, ids=[f"{c.id}-{o}" for c, o in _RUNS])
def test_helper_in_a_custom_symbolic_matches_eager(case, opset):
    torch.manual_seed(0)
    model = _ours(case, opset, case.make(2))
    _check(model, case, (2, 5) if case.dynamic else (2,))


_LEGACY_RUNS = [(case, opset) for case, opset in _RUNS if case.legacy]


@pytest.mark.skipif(LEGACY is None, reason="this torch has no legacy exporter to compare with")
@pytest.mark.parametrize("case, opset", _LEGACY_RUNS, ids=[f"{c.id}-{o}" for c, o in _LEGACY_RUNS])
def test_same_symbolic_on_legacys_helpers_agrees(case, opset):
    torch.manual_seed(0)
    model = _legacy(case, opset, case.make(2))
    _check(model, case, (2, 5) if case.dynamic else (2,))
