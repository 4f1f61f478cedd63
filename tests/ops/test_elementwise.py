"""Elementwise arithmetic and math functions: one table, run against eager PyTorch via onnxruntime."""

import pytest
import torch

from tests.optable import Case, below_min_params, exported_op_types, params, per_dtype, run_below_min, run_case, sample

F32, F64, I64, I32, I8, U8, BOOL = torch.float32, torch.float64, torch.int64, torch.int32, torch.int8, torch.uint8, torch.bool
NUMERIC = (F32, I64, I32)
ALL = (F32, I64, I32, BOOL)
# opsets where the integer lowering changes: 7 (Pow/Max float-only, no Sign/Where), 9, 11 (Round), 12 (int Max/Min/Clip/Pow), 14
ARITH = (9, 12, 14)


def _inplace_add(x):
    y = x.clone()
    y.add_(2, alpha=3)
    return y


def _inplace_mul(x):
    y = x.clone()
    y.mul_(x)
    return y


def _inplace_clamp(x):
    y = x.clone()
    y.clamp_(-1, 1)
    return y


def _inplace_div(x):
    y = x.clone()
    y.div_(3)
    return y


class _ScaledByHalfBatch(torch.nn.Module):
    def forward(self, x):
        return x * (x.size(0) // 2)


class _ListAdd(torch.nn.Module):
    def forward(self, x):
        sizes = [x.size(0)] + [x.size(1), 1]
        return x.reshape(sizes) * 2


CASES = [
    # add / sub / mul / div, with alpha, scalars and mixed dtypes
    *per_dtype("add", lambda a, b: a + b, (F32, I64, I32, BOOL, I8, U8), ("any", "any"), opsets=ARITH),
    *per_dtype("add_alpha", lambda a, b: torch.add(a, b, alpha=2), NUMERIC, ("any", "any"), opsets=ARITH),
    *per_dtype("add_scalar", lambda a: a + 3, NUMERIC, opsets=ARITH),
    *per_dtype("add_float_scalar", lambda a: a + 2.5, NUMERIC, opsets=ARITH),
    *per_dtype("sub", lambda a, b: a - b, (F32, I64, I32, I8), ("any", "any"), opsets=ARITH),
    *per_dtype("sub_alpha", lambda a, b: torch.sub(a, b, alpha=3), NUMERIC, ("any", "any"), opsets=ARITH),
    *per_dtype("rsub", lambda a: 1 - a, NUMERIC, opsets=ARITH),
    *per_dtype("rsub_alpha", lambda a, b: torch.rsub(a, b, alpha=2), NUMERIC, ("any", "any"), opsets=ARITH),
    *per_dtype("mul", lambda a, b: a * b, ALL, ("any", "any"), opsets=ARITH),
    *per_dtype("mul_scalar", lambda a: a * 0.5, NUMERIC, opsets=ARITH),
    *per_dtype("div", lambda a, b: a / b, NUMERIC, ("any", "nonzero"), opsets=ARITH),
    *per_dtype("div_floor", lambda a, b: torch.div(a, b, rounding_mode="floor"), NUMERIC, ("any", "nonzero"),
               opsets=ARITH),
    *per_dtype("div_trunc", lambda a, b: torch.div(a, b, rounding_mode="trunc"), NUMERIC, ("any", "nonzero"),
               opsets=ARITH),
    *per_dtype("div_scalar_floor", lambda a: torch.div(a, -3, rounding_mode="floor"), NUMERIC, opsets=ARITH),
    *per_dtype("true_divide", lambda a, b: torch.true_divide(a, b), NUMERIC, ("any", "nonzero")),
    *per_dtype("floor_divide", lambda a, b: torch.floor_divide(a, b), NUMERIC, ("any", "nonzero"), opsets=ARITH),
    *per_dtype("floordiv_op", lambda a: a // 4, (F32, I64), opsets=ARITH),
    Case("add_int32_int64", lambda a, b: a + b, lambda: (sample(I32), sample(I64)), opsets=ARITH),
    Case("add_int_float", lambda a, b: a + b, lambda: (sample(I64), sample(F32)), opsets=ARITH),
    Case("mul_bool_int", lambda a, b: a * b, lambda: (sample(BOOL), sample(I64)), opsets=ARITH),
    Case("add_float64", lambda a, b: a + b, lambda: (sample(F64), sample(F64))),
    Case("add_0d_tensor", lambda a, b: a + b, lambda: (sample(I32), torch.tensor(2.5))),
    Case("add_inplace", _inplace_add, lambda: (sample(F32),)),
    Case("add_inplace_int", _inplace_add, lambda: (sample(I64),), opsets=ARITH),
    Case("mul_inplace", _inplace_mul, lambda: (sample(F32),)),
    Case("div_inplace", _inplace_div, lambda: (sample(F32),)),
    Case("clamp_inplace", _inplace_clamp, lambda: (sample(F32),)),
    *per_dtype("square", torch.square, ALL, opsets=ARITH),
    *per_dtype("addcmul", lambda a, b, c: torch.addcmul(a, b, c, value=0.5), (F32,), ("any", "any", "any")),
    *per_dtype("addcmul_int", lambda a, b, c: torch.addcmul(a, b, c, value=2), (I64, I32), ("any", "any", "any"),
               opsets=ARITH),
    *per_dtype("addcdiv", lambda a, b, c: torch.addcdiv(a, b, c, value=-2), (F32,), ("any", "any", "nonzero")),
    *per_dtype("lerp_scalar", lambda a, b: torch.lerp(a, b, 0.3), (F32,), ("any", "any")),
    *per_dtype("lerp_scalar_high", lambda a, b: torch.lerp(a, b, 0.8), (F32,), ("any", "any")),
    *per_dtype("lerp_tensor", lambda a, b, w: torch.lerp(a, b, w), (F32,), ("any", "any", "unit"), min_opset=9),
    *per_dtype("logaddexp", torch.logaddexp, (F32,), ("any", "any")),
    *per_dtype("xlogy", torch.xlogy, (F32,), ("any", "pos"), min_opset=9, opsets=(11,)),
    Case("xlogy_zero", torch.xlogy, lambda: (torch.tensor([0.0, 1.0, 0.0, 2.0]), torch.tensor([0.0, 3.0, 5.0, 0.5])),
         min_opset=9, opsets=(11,)),
    *per_dtype("sgn", torch.sgn, (F32, I64), opsets=(9,)),
    *per_dtype("positive", torch.positive, (F32, I64)),
    Case("copysign", torch.copysign, lambda: (sample(F32), torch.tensor([1.0, -1.0, 0.0, -0.0] * 3).reshape(3, 4)),
         min_opset=9),
    Case("copysign_int", torch.copysign, lambda: (sample(I64), sample(F32)), min_opset=9),
    Case("heaviside", torch.heaviside, lambda: (torch.tensor([-1.5, 0.0, 2.0, 0.0]), torch.tensor([0.5, 0.25, 7.0, 1.0])),
         min_opset=9, opsets=(11,)),
    Case("heaviside_int", torch.heaviside, lambda: (sample(I64), sample(I64)), min_opset=9, opsets=(11,)),
    *per_dtype("hypot", torch.hypot, (F32,), ("any", "any")),
    *per_dtype("logaddexp2", torch.logaddexp2, (F32,), ("any", "any")),
    *per_dtype("deg2rad", torch.deg2rad, (F32, I64)),
    *per_dtype("rad2deg", torch.rad2deg, (F32, I64)),
    Case("sinc", torch.sinc, lambda: (torch.tensor([0.0, 0.5, -1.5, 2.25, 1e-3]),), min_opset=9, opsets=(11,)),
    Case("floordiv_scripted", torch.jit.script(_ScaledByHalfBatch()), lambda: (sample(F32, shape=(5, 2)),)),
    Case("floordiv_scripted_dynamic", torch.jit.script(_ScaledByHalfBatch()), lambda: (sample(F32, shape=(5, 2)),),
         export_options=dict(input_names=["x"], dynamic_axes={"x": {0: "n"}}),
         other_inputs=lambda: [(sample(F32, shape=(8, 2)),), (sample(F32, shape=(1, 2)),)]),
    # float16: onnxruntime computes float16 nodes without a float16 kernel in float32
    *[Case(f"{name}-float16", fn, lambda: (sample(torch.float16),), rtol=1e-2, atol=1e-2, opsets=opsets)
      for name, fn, opsets in (("add", lambda a: a + 1.5, (9,)), ("exp", torch.exp, ()), ("round", torch.round, (11,)),
                               ("clamp", lambda a: a.clamp(-0.5, 0.5), (11, 12)), ("remainder", lambda a: a % 0.7, (10,)),
                               ("pow", lambda a: a ** 2, (12,)), ("sign", torch.sign, (9,)), ("trunc", torch.trunc, (9,)),
                               ("sinh", torch.sinh, (9,)))],
    Case("erf-float16", torch.erf, lambda: (sample(torch.float16),), rtol=1e-2, atol=1e-2, min_opset=9),
    # float64: onnxruntime lacks float64 Tan, Sinh, ..., Erf; the first ones lower to Sin/Cos, Exp, Log
    *[Case(f"{name}-float64", fn, lambda kind=kind: (sample(F64, kind),), rtol=1e-7, atol=1e-9, opsets=(9,))
      for name, fn, kind in (("tan", torch.tan, "unit"), ("sinh", torch.sinh, "any"), ("cosh", torch.cosh, "any"),
                             ("asinh", torch.asinh, "any"), ("atanh", torch.atanh, "unit"), ("exp", torch.exp, "any"),
                             ("sqrt", torch.sqrt, "pos"), ("round", torch.round, "any"), ("trunc", torch.trunc, "any"))],
    Case("acosh-float64", torch.acosh, lambda: (sample(F64, "pos") + 1,), rtol=1e-7, atol=1e-9, opsets=(9,)),
    Case("logaddexp-float64", torch.logaddexp, lambda: (sample(F64), sample(F64)), rtol=1e-7, atol=1e-9, opsets=(9,)),
    Case("clamp-float64", lambda x: x.clamp(-0.5, 1), lambda: (sample(F64),), opsets=(8, 11, 12)),
    *[Case(f"{name}-float64", fn, lambda: (sample(F64, "unit"),), min_opset=min_opset).xfail(
        [min_opset, 26], f"onnxruntime has no float64 {op} kernel")
      for name, fn, op, min_opset in (("asin", torch.asin, "Asin", 7), ("acos", torch.acos, "Acos", 7),
                                      ("atan", torch.atan, "Atan", 7), ("erf", torch.erf, "Erf", 9),
                                      ("erfinv", torch.erfinv, "Erf", 9))],
    Case("atan2-float64", torch.atan2, lambda: (sample(F64), sample(F64)), min_opset=9).xfail(
        [9, 26], "onnxruntime has no float64 Atan kernel"),
    Case("add_lists_scripted", torch.jit.script(_ListAdd()), lambda: (sample(F32),)),
    Case("add_lists_scripted_dynamic", torch.jit.script(_ListAdd()), lambda: (sample(F32),),
         export_options=dict(input_names=["x"], dynamic_axes={"x": {0: "n"}}),
         other_inputs=lambda: [(sample(F32, shape=(6, 4)),)]),
    # remainder / fmod (Mod from opset 10)
    *per_dtype("remainder", torch.remainder, NUMERIC, ("any", "nonzero"), opsets=(9, 10, 12)),
    *per_dtype("remainder_scalar", lambda a: torch.remainder(a, -3), NUMERIC, opsets=(9, 10, 12)),
    *per_dtype("rremainder", lambda a: 5 % a, (F32, I64), ("nonzero",), opsets=(9, 10)),
    *per_dtype("fmod", torch.fmod, NUMERIC, ("any", "nonzero"), opsets=(9, 10, 12)),
    *per_dtype("fmod_scalar", lambda a: torch.fmod(a, 2.5), (F32,), opsets=(9, 10)),
    # unary
    *per_dtype("neg", torch.neg, (F32, I64, I32, I8), opsets=ARITH),
    *per_dtype("abs", torch.abs, (F32, I64, I32, I8, U8), opsets=ARITH),
    *per_dtype("sign", torch.sign, ALL, opsets=(9,)),
    *per_dtype("reciprocal", torch.reciprocal, (F32, I64), ("nonzero",)),
    *per_dtype("sqrt", torch.sqrt, (F32, I64, I32, BOOL), ("pos",)),
    *per_dtype("rsqrt", torch.rsqrt, (F32, I64), ("pos",)),
    *per_dtype("exp", torch.exp, (F32, I64, BOOL)),
    *per_dtype("exp2", torch.exp2, (F32, I64)),
    *per_dtype("expm1", torch.expm1, (F32, I32)),
    *per_dtype("log", torch.log, (F32, I64), ("pos",)),
    *per_dtype("log1p", torch.log1p, (F32, I64), ("pos",)),
    *per_dtype("log2", torch.log2, (F32, I32), ("pos",)),
    *per_dtype("log10", torch.log10, (F32, I64), ("pos",)),
    *per_dtype("erf", torch.erf, (F32, I64), min_opset=9),
    *per_dtype("erfinv", torch.erfinv, (F32,), ("unit",), min_opset=9),
    Case("erfinv_edges", torch.erfinv, lambda: (torch.tensor([-1.0, 1.0, 0.0, 0.999, -0.9999, 1e-6]),), min_opset=9),
    *per_dtype("sin", torch.sin, (F32, I64)),
    *per_dtype("cos", torch.cos, (F32, I64)),
    *per_dtype("tan", torch.tan, (F32,), ("unit",)),
    *per_dtype("asin", torch.asin, (F32,), ("unit",)),
    *per_dtype("acos", torch.acos, (F32,), ("unit",)),
    *per_dtype("atan", torch.atan, (F32, I64)),
    *per_dtype("tanh", torch.tanh, (F32, I64)),
    *per_dtype("sinh", torch.sinh, (F32, I64), opsets=(9,)),
    *per_dtype("cosh", torch.cosh, (F32, I64), opsets=(9,)),
    *per_dtype("asinh", torch.asinh, (F32,), opsets=(9,)),
    Case("acosh", torch.acosh, lambda: (torch.rand(3, 4) * 5 + 1,), opsets=(9,)),
    *per_dtype("atanh", torch.atanh, (F32,), ("unit",), opsets=(9,)),
    *per_dtype("atan2", torch.atan2, (F32,), ("any", "any"), min_opset=9, opsets=(11,)),
    Case("atan2_axes", torch.atan2, lambda: (torch.tensor([0.0, 1.0, -1.0, 0.0, 0.0, 2.0]),
                                             torch.tensor([0.0, 0.0, 0.0, -1.0, 1.0, -3.0])), min_opset=9, opsets=(11,)),
    # powers
    *per_dtype("pow_tensor", torch.pow, (F32,), ("pos", "any"), opsets=(12,)),
    *per_dtype("pow_int_tensor", torch.pow, (I64, I32), ("any", "pos"), opsets=(9, 11, 12)),
    *per_dtype("pow_square", lambda a: a ** 2, NUMERIC, opsets=(12,)),
    *per_dtype("pow_half", lambda a: a ** 0.5, (F32, I64), ("pos",), opsets=(12,)),
    *per_dtype("pow_int_scalar_7", lambda a: a ** 7, (I64,), opsets=(9, 11, 12)),
    *per_dtype("rpow", lambda a: 2 ** a, (F32, I64), ("pos",), opsets=(9, 11, 12)),
    *per_dtype("rpow_float", lambda a: 1.5 ** a, (F32, I64), opsets=(12,)),
    Case("pow_float_int_tensor", torch.pow, lambda: (sample(F32, "pos"), sample(I64)), opsets=(12,)),
    Case("float_power", torch.float_power, lambda: (sample(F32, "pos"), sample(F32)), opsets=(12,)),
    # rounding
    *per_dtype("floor", torch.floor, NUMERIC),
    *per_dtype("ceil", torch.ceil, NUMERIC),
    *per_dtype("round", torch.round, NUMERIC, opsets=(11,)),
    Case("round_ties", torch.round, lambda: (torch.tensor([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.49, -0.51]),),
         opsets=(11,)),
    Case("round_decimals", lambda x: torch.round(x, decimals=2), lambda: (sample(F32) * 10,), opsets=(11,)),
    Case("round_decimals_negative", lambda x: torch.round(x, decimals=-1), lambda: (sample(F32) * 100,),
         opsets=(11,)),
    *per_dtype("trunc", torch.trunc, NUMERIC, opsets=(9,)),
    *per_dtype("fix", torch.fix, (F32,), opsets=(9,)),
    *per_dtype("frac", torch.frac, (F32,), opsets=(9,)),
    # clamp
    *per_dtype("clamp", lambda x: torch.clamp(x, -1, 2), NUMERIC, opsets=(11, 12)),
    *per_dtype("clamp_float_bounds", lambda x: torch.clamp(x, -0.5, 0.5), (F32, I64), opsets=(11, 12)),
    *per_dtype("clamp_min", lambda x: torch.clamp(x, min=0), NUMERIC, opsets=(11, 12)),
    *per_dtype("clamp_max", lambda x: torch.clamp(x, max=1), NUMERIC, opsets=(11, 12)),
    *per_dtype("clamp_min_fn", lambda x: torch.clamp_min(x, 0.5), (F32,), opsets=(11,)),
    *per_dtype("clamp_max_fn", lambda x: torch.clamp_max(x, 0.5), (F32,), opsets=(11,)),
    *per_dtype("clip", lambda x: torch.clip(x, -2, 2), NUMERIC, opsets=(11, 12)),
    *per_dtype("clamp_tensor", lambda x, lo, hi: torch.clamp(x, lo, hi - 10), NUMERIC, ("any", "any", "any"),
               opsets=(11, 12)),
    *per_dtype("clamp_tensor_min", lambda x, lo: torch.clamp(x, min=lo), NUMERIC, ("any", "any"), opsets=(12,)),
    Case("clamp_bool", lambda x: torch.clamp(x, 0, 1), lambda: (sample(BOOL),), opsets=(12,)),
]


@pytest.mark.parametrize("case,opset", params(CASES))
def test_elementwise(case, opset):
    run_case(case, opset)


@pytest.mark.parametrize("case,opset", below_min_params(CASES))
def test_elementwise_below_min_opset(case, opset):
    run_below_min(case, opset)


@pytest.mark.parametrize("name", ["aten::add_", "aten::sub_", "aten::mul_", "aten::div_", "aten::clamp_",
                                  "aten::relu_", "aten::sigmoid_", "aten::pow_", "aten::remainder_",
                                  "aten::bitwise_and_", "aten::logical_not_", "aten::where_"])
def test_inplace_ops_map_to_functional(name):
    from torchscript_onnx.symbolic import registry

    for opset in (7, 9, 10, 18, 26):
        assert registry.lookup(name, opset) is registry.lookup(name[:-1], opset) is not None


# (case, opset, op types the export must contain, op types it must not contain)
NATIVE = [
    (Case("fmod", torch.fmod, lambda: (sample(F32), sample(F32, "nonzero"))), 10, {"Mod"}, {"Floor"}),
    (Case("fmod", torch.fmod, lambda: (sample(F32), sample(F32, "nonzero"))), 9, {"Div", "Floor"}, {"Mod"}),
    (Case("remainder_int", torch.remainder, lambda: (sample(I64), sample(I64, "nonzero"))), 10, {"Mod"}, {"Div"}),
    (Case("round", torch.round, lambda: (sample(F32),)), 11, {"Round"}, {"Floor"}),
    (Case("round", torch.round, lambda: (sample(F32),)), 10, {"Floor"}, {"Round"}),
    (Case("sign", torch.sign, lambda: (sample(F32),)), 9, {"Sign"}, set()),
    (Case("sign", torch.sign, lambda: (sample(F32),)), 8, {"Greater", "Less"}, {"Sign"}),
    (Case("sinh", torch.sinh, lambda: (sample(F32),)), 9, {"Sinh"}, {"Exp"}),
    (Case("sinh-float64", torch.sinh, lambda: (sample(F64),)), 9, {"Exp"}, {"Sinh"}),
    (Case("pow_int", torch.pow, lambda: (sample(I64), sample(I64, "pos"))), 12, {"Pow"}, {"Cast"}),
    (Case("pow_int", torch.pow, lambda: (sample(I64), sample(I64, "pos"))), 11, {"Pow", "Round", "Cast"}, set()),
    (Case("clamp_int", lambda x: x.clamp(-1, 2), lambda: (sample(I64),)), 12, {"Clip"}, {"Cast"}),
    (Case("clamp_int", lambda x: x.clamp(-1, 2), lambda: (sample(I64),)), 11, {"Less"}, {"Clip", "Max"}),
    (Case("add_int8", lambda a, b: a + b, lambda: (sample(I8), sample(I8))), 14, {"Add"}, {"Cast"}),
    (Case("add_int8", lambda a, b: a + b, lambda: (sample(I8), sample(I8))), 13, {"Add", "Cast"}, set()),
]


@pytest.mark.parametrize("case,opset,present,absent", NATIVE, ids=lambda v: v.name if isinstance(v, Case) else None)
def test_elementwise_lowering(case, opset, present, absent):
    op_types = set(exported_op_types(case, opset))
    assert present <= op_types and not (absent & op_types), sorted(op_types)
