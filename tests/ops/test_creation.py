"""Tensor creation: one table of cases, run against eager PyTorch through onnxruntime.

Random ops are checked for shape and dtype only (``check_values=False``).
"""

from __future__ import annotations

import pytest
import torch

from tests.optable import Case, below_min_params, params, run_below_min, run_case


def f32(*shape):
    return lambda: (torch.randn(*shape),)


def i64(*shape):
    return lambda: (torch.randint(-5, 6, shape),)


DYN = {"input_names": ["x"], "dynamic_axes": {"x": {0: "n"}}}


def dyn_other(*shape):
    return lambda: [(torch.randn(*shape),)]


def dyn_other_int(*shape):
    return lambda: [(torch.randint(1, 6, shape),)]


@torch.jit.script
def _full_of_sum(x):
    # scripted so that the fill value stays a runtime value (a traced .item() becomes a constant)
    return torch.full([2, 3], float(x.sum()))


@torch.jit.script
def _linspace_min_max(x):
    return torch.linspace(float(x.min()), float(x.max()), 6)


@torch.jit.script
def _tensor_of_sizes(x):
    return torch.tensor([x.size(0), x.size(1) * 2, 7])


@torch.jit.script
def _tensor_nested(x):
    return torch.tensor([[float(x.sum()), 1.0], [2.0, float(x.max())]])


@torch.jit.script
def _hann_runtime(x):
    return torch.hann_window(x.size(0))


@torch.jit.script
def _hann_runtime_symmetric(x):
    return torch.hann_window(x.size(0), False, dtype=torch.float64)


# ConstantOfShape arrives at 9 (Expand at 8 carries runtime sizes before it).
FILL_OPSETS = (8, 9)

CASES = [
    # zeros / ones / full / empty with constant sizes (x only anchors the trace)
    Case("zeros", lambda x: x + torch.zeros(3, 4), f32(3, 4), opsets=FILL_OPSETS),
    Case("ones_int64", lambda x: torch.ones(2, 3, dtype=torch.int64) + x, i64(2, 3), opsets=FILL_OPSETS),
    Case("ones_large", lambda x: torch.ones(300, 300) * x, f32(1), opsets=FILL_OPSETS),
    Case("full_float", lambda x: torch.full((2, 3), 1.5) + x, f32(2, 3), opsets=FILL_OPSETS),
    Case("full_int", lambda x: torch.full((2, 3), 7) + x, i64(2, 3), opsets=FILL_OPSETS),
    Case("ones_bool", lambda x: torch.ones(3, 4, dtype=torch.bool) & (x > 0), f32(3, 4), opsets=FILL_OPSETS),
    Case("full_runtime_value", lambda x: _full_of_sum(x), f32(4), min_opset=8),
    Case("empty", lambda x: torch.empty(2, 3, dtype=torch.float64), f32(2), opsets=FILL_OPSETS, check_values=False),
    Case("zeros_like", lambda x: torch.zeros_like(x) + 1, f32(3, 4), opsets=FILL_OPSETS),
    Case("ones_like_dtype", lambda x: torch.ones_like(x, dtype=torch.int32), f32(3, 4), opsets=FILL_OPSETS),
    Case("full_like", lambda x: torch.full_like(x, 2.5), f32(3, 4), opsets=FILL_OPSETS),
    Case("full_like_int", lambda x: torch.full_like(x, 3), i64(3, 4), opsets=FILL_OPSETS),
    Case("empty_like", lambda x: torch.empty_like(x), i64(3, 4), opsets=FILL_OPSETS, check_values=False),
    Case("new_zeros", lambda x: x.new_zeros(2, 3), i64(3, 4), opsets=FILL_OPSETS),
    Case("new_ones", lambda x: x.new_ones((4,)) + x[0], f32(3, 4), opsets=FILL_OPSETS),
    Case("new_full", lambda x: x.new_full((2, 2), 3.0), f32(3, 4), opsets=FILL_OPSETS),
    Case("new_empty", lambda x: x.new_empty((2, 4)), f32(3, 4), opsets=FILL_OPSETS, check_values=False),
    # runtime sizes
    Case("zeros_dynamic", lambda x: torch.zeros(x.size(0), 3), f32(4, 2), min_opset=8, opsets=(9,),
         export_options=DYN, other_inputs=dyn_other(6, 2)),
    Case("ones_dynamic_int", lambda x: torch.ones(x.size(0), x.size(1) + 1, dtype=torch.int64) + x[:, :1],
         i64(4, 2), min_opset=8, opsets=(9,), export_options=DYN, other_inputs=dyn_other_int(6, 2)),
    Case("zeros_like_dynamic", lambda x: torch.zeros_like(x, dtype=torch.bool), f32(4, 2), min_opset=8,
         opsets=(9,), export_options=DYN, other_inputs=dyn_other(5, 2)),
    Case("full_dynamic", lambda x: torch.full((x.shape[0], 2), 5.0), f32(3, 2), min_opset=8, opsets=(9,),
         export_options=DYN, other_inputs=dyn_other(7, 2)),
    Case("new_zeros_dynamic", lambda x: x.new_zeros(x.shape), f32(3, 2), min_opset=8, opsets=(9,),
         export_options=DYN, other_inputs=dyn_other(7, 2)),
    # arange
    Case("arange_end", lambda x: torch.arange(5) + x, i64(5)),
    Case("arange_start_end", lambda x: torch.arange(2, 7) * x, i64(5)),
    Case("arange_float_step", lambda x: torch.arange(1.0, 4.0, 0.5) + x, f32(6)),
    Case("arange_negative_step", lambda x: torch.arange(5, -3, -2) + x, i64(4)),
    Case("arange_dtype", lambda x: torch.arange(4, dtype=torch.float32) + x, f32(4)),
    Case("arange_dynamic", lambda x: torch.arange(x.size(0)) + x, i64(5), min_opset=9, opsets=(11,),
         export_options=DYN, other_inputs=dyn_other_int(8)),
    Case("arange_dynamic_start_step", lambda x: torch.arange(1, x.size(0) * 2, 3), f32(5), min_opset=9,
         opsets=(11,), export_options=DYN, other_inputs=dyn_other(9)),
    Case("arange_dynamic_float", lambda x: torch.arange(0.5, x.size(0), 0.25), f32(3), min_opset=9,
         opsets=(11,), export_options=DYN, other_inputs=dyn_other(6)),
    # dtype int64 truncates each bound first (the 1.5 step becomes 1, the 8.5 end 8)
    Case("arange_int_dtype_float_bounds", lambda x, end: torch.arange(x.size(0), end, 1.5, dtype=torch.int64),
         lambda: (torch.randn(2, 3), torch.tensor(8.5)), min_opset=9, opsets=(11,),
         export_options={"input_names": ["x", "end"], "dynamic_axes": {"x": [0]}},
         other_inputs=lambda: [(torch.randn(5, 3), torch.tensor(9.7)), (torch.randn(3, 3), torch.tensor(3.0))]),
    Case("arange_int_dtype_float_end", lambda end: torch.arange(end, dtype=torch.int64), lambda: (torch.tensor(6.9),),
         min_opset=9, opsets=(11,), other_inputs=lambda: [(torch.tensor(3.2),)]),
    Case("dim_arange", lambda x: torch._dim_arange(x, 1), f32(2, 5)),
    # linspace / eye / tri indices / scalar_tensor
    Case("linspace", lambda x: torch.linspace(0, 1, 7) + x, f32(7)),
    Case("linspace_int", lambda x: torch.linspace(-3, 9, 5, dtype=torch.int64) + x, i64(5)),
    Case("linspace_runtime", lambda x: _linspace_min_max(x), f32(5), min_opset=9),
    Case("eye", lambda x: torch.eye(3) + x, f32(3, 3)),
    Case("eye_rect_int", lambda x: torch.eye(3, 5, dtype=torch.int64) + x, i64(3, 5)),
    Case("eye_large", lambda x: torch.eye(40, 30) * x, f32(1)),
    Case("eye_dynamic", lambda x: torch.eye(x.size(0)), f32(4), min_opset=9, export_options=DYN,
         other_inputs=dyn_other(6)),
    Case("tril_indices", lambda x: torch.tril_indices(4, 3) + x, i64(1)),
    Case("triu_indices_offset", lambda x: torch.triu_indices(3, 5, 1) + x, i64(1)),
    Case("scalar_tensor", lambda x: torch.scalar_tensor(3.5) + x, f32(2)),
    Case("tensor_runtime_sizes", lambda x: _tensor_of_sizes(x), f32(3, 2), export_options=DYN,
         other_inputs=dyn_other(5, 2)),
    Case("tensor_nested_floats", lambda x: _tensor_nested(x), f32(3, 2)),
    Case("as_tensor", lambda x: torch.as_tensor(x, dtype=torch.float64), i64(3)),
    Case("hann_window", lambda x: torch.hann_window(6) + x, f32(6)),
    Case("hann_window_symmetric", lambda x: torch.hann_window(5, periodic=False, dtype=torch.float64), f32(1)),
    Case("hann_window_runtime", lambda x: _hann_runtime(x), f32(6), min_opset=9, opsets=(11,), export_options=DYN,
         other_inputs=lambda: [(torch.randn(9),), (torch.randn(1),)]),
    Case("hann_window_runtime_symmetric", lambda x: _hann_runtime_symmetric(x), f32(6), min_opset=9, opsets=(11,),
         export_options=DYN, other_inputs=lambda: [(torch.randn(9),), (torch.randn(1),)]),
    # random ops: shape and dtype only
    Case("rand", lambda x: torch.rand(2, 3) + x, f32(2, 3), check_values=False),
    Case("randn_double", lambda x: torch.randn(2, 3, dtype=torch.float64), f32(2, 3), check_values=False),
    Case("rand_dynamic", lambda x: torch.rand(x.size(0), 3), f32(2, 3), check_values=False, min_opset=8,
         export_options=DYN),
    Case("randint", lambda x: torch.randint(0, 5, (2, 3)) + x, i64(2, 3), check_values=False),
    Case("randint_high_only", lambda x: torch.randint(5, (4,), dtype=torch.int32), f32(1), check_values=False),
    Case("rand_like", lambda x: torch.rand_like(x), f32(2, 3), check_values=False),
    Case("randn_like_half", lambda x: torch.randn_like(x, dtype=torch.float16), f32(2, 3), check_values=False),
    Case("randint_like", lambda x: torch.randint_like(x, 10), f32(2, 3), check_values=False),
    Case("randint_like_low", lambda x: torch.randint_like(x, 3, 10), i64(2, 3), check_values=False),
    Case("bernoulli", lambda x: torch.bernoulli(torch.sigmoid(x)), f32(2, 3), check_values=False, opsets=(15,)),
    Case("bernoulli_p", lambda x: torch.bernoulli(x, 0.3), f32(2, 3), check_values=False, opsets=(15,)),
    Case("bernoulli_inplace", lambda x: x.clone().bernoulli_(0.5), f32(2, 3), check_values=False, opsets=(15,)),
    Case("normal_tensor_mean", lambda x: torch.normal(x, 2.0), f32(2, 3), check_values=False),
    Case("normal_tensor_tensor", lambda x: torch.normal(x, x.abs()[0]), f32(2, 3), check_values=False),
    Case("normal_size", lambda x: torch.normal(1.0, 2.0, (4, 2)), f32(1), check_values=False),
    Case("normal_inplace", lambda x: x.clone().normal_(0, 3), f32(2, 3), check_values=False),
    Case("uniform_inplace", lambda x: x.clone().uniform_(-1, 1), f32(2, 3), check_values=False),
    Case("multinomial", lambda x: torch.multinomial(torch.softmax(x, 1), 4, True), f32(2, 5), check_values=False),
    Case("multinomial_1d", lambda x: torch.multinomial(x.abs() + 0.1, 1), f32(5), check_values=False),
    Case("standard_gamma", lambda x: torch._standard_gamma(x.abs() + 0.2), f32(2, 3), check_values=False,
         min_opset=9),
    Case("sample_dirichlet", lambda x: torch._sample_dirichlet(x.abs() + 0.2), f32(2, 3), check_values=False,
         min_opset=9),
    # a sample as the second operand of the next op: its dtype must be known without a traced type
    Case("rand_operand", lambda x: x + torch.rand(2, 3), f32(2, 3), check_values=False),
    Case("randn_like_operand", lambda x: x * torch.randn_like(x), f32(2, 3), check_values=False),
    Case("randint_operand", lambda x: x + torch.randint(0, 5, (2, 3)), f32(2, 3), check_values=False),
    Case("bernoulli_operand", lambda x: x * torch.bernoulli(torch.sigmoid(x)), f32(2, 3), check_values=False,
         opsets=(15,)),
    Case("normal_size_operand", lambda x: x - torch.normal(0.0, 1.0, (2, 3)), f32(2, 3), check_values=False),
]


# ONNX 22 revised RandomUniform/RandomNormal/Multinomial/Bernoulli (bfloat16); onnxruntime 1.31 has
# no kernels for those versions, so the newest opset it runs them at is 21.
NO_ORT_RANDOM_22 = "onnxruntime has no kernel for the opset-22 random ops (RandomUniform, RandomNormal, ...)"
for _case in CASES:
    if not _case.check_values:
        _case.opsets = tuple(_case.opsets) + (21,)
        if not _case.name.startswith(("empty", "new_empty")):
            _case.xfail([26], NO_ORT_RANDOM_22)


@pytest.mark.parametrize("case, opset", params(CASES))
def test_creation(case, opset):
    run_case(case, opset)


@pytest.mark.parametrize("case, opset", below_min_params(CASES))
def test_creation_below_min_opset(case, opset):
    run_below_min(case, opset)


# Scripted graphs carry no traced dtypes: a dtype=None argument means torch's default (float) for
# the factories and the input's dtype for the *_like ops; the random ops' samples must stay typed.
# normal_(0, 3)/uniform_(-1, 1) pass ints where TorchScript wants floats: those do not compile.
SCRIPTED = [case for case in CASES if not case.check_values and not case.name.endswith("_inplace")]


@pytest.mark.parametrize("case, opset", params(SCRIPTED))
def test_creation_scripted(case, opset):
    run_case(case, opset, script=True)
