"""Comparisons, logical and bitwise ops, where and the NaN/inf tests: one table against onnxruntime."""

import pytest
import torch

from tests.optable import Case, below_min_params, exported_op_types, params, per_dtype, run_below_min, run_case, sample

F32, F64, F16, I64, I32, I8, U8, BOOL = (torch.float32, torch.float64, torch.float16, torch.int64, torch.int32,
                                        torch.int8, torch.uint8, torch.bool)
NAN, INF = float("nan"), float("inf")
# 7: Less/Greater float-only, Equal int/bool-only; 9: Less/Greater all numeric, IsNaN, Where;
# 10: IsInf; 11: Equal takes floats; 12: LessOrEqual/GreaterOrEqual; 18: Bitwise*
COMPARE = (9, 11, 12)
TYPES = (F32, I64, I32, BOOL, U8, I8)


def _special():
    """Floats with NaN, infinities, zeros and a tie between the two operands."""
    a = torch.tensor([1.0, NAN, INF, -INF, 0.0, -2.5, NAN, INF, 3.0, -0.0])
    b = torch.tensor([1.0, 1.0, INF, INF, -0.0, 2.0, NAN, -INF, NAN, 0.0])
    return a, b


def _with_zeros(dtype):
    x = sample(dtype)
    x[0] = 0
    return x


def _inplace(fn):
    def model(x, y):
        z = x.clone()
        fn(z, y)
        return z

    return model


def _compare_cases(name, fn):
    return [
        *per_dtype(name, fn, TYPES, ("any", "any"), opsets=COMPARE),
        Case(f"{name}-special", fn, _special, opsets=COMPARE),
        Case(f"{name}-float64", fn, lambda: (sample(F64), sample(F64)), opsets=COMPARE),
        Case(f"{name}-float16", fn, lambda: (sample(F16), sample(F16)), opsets=COMPARE),
        Case(f"{name}-int_scalar", lambda a: fn(a, 2), lambda: (sample(I64),), opsets=COMPARE),
        Case(f"{name}-float_scalar_on_int", lambda a: fn(a, 1.5), lambda: (sample(I32),), opsets=COMPARE),
        Case(f"{name}-int_float", fn, lambda: (sample(I64), sample(F32)), opsets=COMPARE),
        Case(f"{name}-broadcast", fn, lambda: (sample(F32, shape=(3, 1)), sample(F32, shape=(4,))), opsets=COMPARE),
    ]


class _ModeSwitch(torch.nn.Module):
    def __init__(self, mode: str):
        super().__init__()
        self.mode = mode

    def forward(self, x):
        if self.mode == "double":
            return x * 2
        if x.size(0) >= 3:
            return x + 1
        return x - 1


CASES = [
    *_compare_cases("eq", torch.eq),
    *_compare_cases("ne", torch.ne),
    *_compare_cases("lt", torch.lt),
    *_compare_cases("le", torch.le),
    *_compare_cases("gt", torch.gt),
    *_compare_cases("ge", torch.ge),
    Case("eq_operator", lambda a, b: a == b, lambda: (sample(I64), sample(I64)), opsets=COMPARE),
    Case("ge_operator", lambda a: a >= 0.5, lambda: (sample(F32),), opsets=COMPARE),
    Case("eq_str_scripted", torch.jit.script(_ModeSwitch("double")), lambda: (sample(F32),)),
    Case("ge_int_scripted", torch.jit.script(_ModeSwitch("other")), lambda: (sample(F32),)),
    Case("ge_int_scripted_dynamic", torch.jit.script(_ModeSwitch("other")), lambda: (sample(F32),), opsets=(9, 11, 12),
         export_options=dict(input_names=["x"], dynamic_axes={"x": {0: "n"}}),
         other_inputs=lambda: [(sample(F32, shape=(2, 4)),), (sample(F32, shape=(5, 4)),)]),
    # logical
    *[Case(f"{op.__name__}-{str(dt)[6:]}", op, lambda dt=dt: (_with_zeros(dt), _with_zeros(dt)))
      for op in (torch.logical_and, torch.logical_or, torch.logical_xor) for dt in (F32, I64, I32, BOOL)],
    *[Case(f"logical_not-{str(dt)[6:]}", torch.logical_not, lambda dt=dt: (_with_zeros(dt),))
      for dt in (F32, I64, I32, BOOL)],
    Case("logical_and_mixed", torch.logical_and, lambda: (_with_zeros(F32), _with_zeros(I64))),
    Case("logical_not_nan", torch.logical_not, lambda: (_special()[0],)),
    # bitwise: And/Or/Xor on bool at every opset, on integers from 18
    *[Case(f"{name}-bool", fn, lambda: (sample(BOOL), sample(BOOL)))
      for name, fn in (("bitwise_and", torch.bitwise_and), ("bitwise_or", torch.bitwise_or),
                       ("bitwise_xor", torch.bitwise_xor), ("and_op", lambda a, b: a & b),
                       ("or_op", lambda a, b: a | b), ("xor_op", lambda a, b: a ^ b))],
    *[Case(f"{name}-{str(dt)[6:]}", fn, lambda dt=dt: (sample(dt), sample(dt)), min_opset=18)
      for name, fn in (("bitwise_and", torch.bitwise_and), ("bitwise_or", torch.bitwise_or),
                       ("bitwise_xor", torch.bitwise_xor), ("and_op", lambda a, b: a & b),
                       ("or_op", lambda a, b: a | b), ("xor_op", lambda a, b: a ^ b))
      for dt in (I64, I32, U8)],
    Case("bitwise_and_scalar", lambda a: a & 5, lambda: (sample(I64),), min_opset=18),
    Case("iand-bool", _inplace(torch.Tensor.__iand__), lambda: (sample(BOOL), sample(BOOL))),
    Case("ior-int64", _inplace(torch.Tensor.__ior__), lambda: (sample(I64), sample(I64)), min_opset=18),
    Case("ixor-bool", _inplace(torch.Tensor.__ixor__), lambda: (sample(BOOL), sample(BOOL))),
    Case("bitwise_and_inplace-int32", _inplace(torch.Tensor.bitwise_and_), lambda: (sample(I32), sample(I32)),
         min_opset=18),
    *per_dtype("bitwise_not", torch.bitwise_not, (I64, I32, I8, U8, BOOL), opsets=(9, 14, 18)),
    Case("invert_op", lambda a: ~a, lambda: (sample(I64),), opsets=(18,)),
    # shifts: BitShift (opset 11) takes unsigned types only; signed shifts multiply / floor-divide
    *per_dtype("lshift_scalar", lambda a: a << 2, (I64, I32, U8), opsets=(9, 11, 12)),
    *per_dtype("rshift_scalar", lambda a: a >> 1, (I64, I32, U8), opsets=(9, 11, 12)),
    *per_dtype("lshift_tensor", lambda a, n: a << n, (I64, I32, U8), ("any", "unit"), opsets=(9, 11, 12)),
    *per_dtype("rshift_tensor", lambda a, n: a >> n, (I64, I32, U8), ("any", "unit"), opsets=(9, 11, 12)),
    *per_dtype("bitwise_left_shift", lambda a, n: torch.bitwise_left_shift(a, n.abs() + 1), (I64, I32),
               ("any", "unit"), opsets=(9, 11, 12)),
    *per_dtype("bitwise_right_shift", lambda a, n: torch.bitwise_right_shift(a, 2 * n), (I64, I32, U8),
               ("any", "unit"), opsets=(9, 11, 12)),
    Case("ilshift-int64", _inplace(torch.Tensor.__ilshift__), lambda: (sample(I64), torch.tensor(3)),
         opsets=(9, 11)),
    Case("irshift-uint8", _inplace(torch.Tensor.__irshift__), lambda: (sample(U8), torch.tensor(1, dtype=U8)),
         opsets=(9, 11)),
    # where
    *[Case(f"where-{str(dt)[6:]}", torch.where, lambda dt=dt: (sample(BOOL), sample(dt), sample(dt)), min_opset=9)
      for dt in (F32, I64, I32, BOOL, U8, F64)],
    Case("where_scalar", lambda c, x: torch.where(c, x, 0.5), lambda: (sample(BOOL), sample(F32)), min_opset=9),
    Case("where_scalar_int", lambda c, x: torch.where(c, 3, x), lambda: (sample(BOOL), sample(I32)), min_opset=9),
    Case("where_promote", torch.where, lambda: (sample(BOOL), sample(I64), sample(F32)), min_opset=9),
    Case("where_broadcast", torch.where, lambda: (sample(BOOL, shape=(3, 1)), sample(F32, shape=(4,)),
                                                  sample(F32, shape=(3, 4))), min_opset=9),
    Case("where_method", lambda c, x: x.where(c, -x), lambda: (sample(BOOL), sample(F32)), min_opset=9),
    Case("where_indices", torch.where, lambda: (sample(BOOL),), min_opset=9),
    Case("where_indices_int", lambda x: torch.where(x), lambda: (sample(I64, shape=(2, 3, 4)),), min_opset=9),
    Case("where_indices_dynamic", torch.where, lambda: (sample(BOOL),), min_opset=9,
         export_options=dict(input_names=["c"], dynamic_axes={"c": {0: "n", 1: "m"}}),
         other_inputs=lambda: [(sample(BOOL, shape=(5, 2)),)]),
    # NaN and infinity tests
    *[Case(f"{fn.__name__}-special", fn, lambda: (_special()[0],), opsets=(9, 10))
      for fn in (torch.isnan, torch.isinf, torch.isfinite, torch.isposinf, torch.isneginf)],
    *[Case(f"{fn.__name__}-float64", fn, lambda: (_special()[0].double(),), opsets=(9, 10))
      for fn in (torch.isnan, torch.isinf, torch.isfinite)],
    *[Case(f"{fn.__name__}-{str(dt)[6:]}", fn, lambda dt=dt: (sample(dt),), opsets=(9, 10))
      for fn in (torch.isnan, torch.isinf, torch.isfinite) for dt in (I64, I32, BOOL)],
    Case("where-float16", torch.where, lambda: (sample(BOOL), sample(F16), sample(F16)), min_opset=9),
    Case("isinf-float16", torch.isinf, lambda: (_special()[0].half(),), opsets=(9, 10)),
    Case("isnan-float16", torch.isnan, lambda: (_special()[0].half(),), opsets=(9, 10)),
    Case("nan_to_num-float16", torch.nan_to_num, lambda: (_special()[0].half(),), min_opset=9, opsets=(10,)),
    Case("nan_to_num", torch.nan_to_num, lambda: (_special()[0],), min_opset=9, opsets=(10,)),
    Case("nan_to_num_values", lambda x: torch.nan_to_num(x, nan=1.5, posinf=100.0, neginf=-7.0),
         lambda: (_special()[0],), min_opset=9, opsets=(10,)),
    Case("nan_to_num_float64", lambda x: torch.nan_to_num(x, posinf=1e300), lambda: (_special()[0].double(),),
         min_opset=9, opsets=(10,)),
    Case("nan_to_num_int", torch.nan_to_num, lambda: (sample(I64),)),
]


@pytest.mark.parametrize("case,opset", params(CASES))
def test_logical(case, opset):
    run_case(case, opset)


@pytest.mark.parametrize("case,opset", below_min_params(CASES))
def test_logical_below_min_opset(case, opset):
    run_below_min(case, opset)


# (case, opset, op types the export must contain, op types it must not contain)
NATIVE = [
    (Case("le", torch.le, lambda: (sample(F32), sample(F32))), 12, {"LessOrEqual"}, {"Or"}),
    (Case("le", torch.le, lambda: (sample(F32), sample(F32))), 11, {"Less", "Equal", "Or"}, {"LessOrEqual"}),
    (Case("eq_float", torch.eq, lambda: (sample(F32), sample(F32))), 11, {"Equal"}, {"Less"}),
    (Case("eq_float", torch.eq, lambda: (sample(F32), sample(F32))), 10, {"Less", "Greater", "IsNaN"}, {"Equal"}),
    (Case("eq_int", torch.eq, lambda: (sample(I64), sample(I64))), 7, {"Equal"}, {"Cast"}),
    (Case("lt_int", torch.lt, lambda: (sample(I64), sample(I64))), 9, {"Less"}, {"Cast"}),
    (Case("bitwise_and", torch.bitwise_and, lambda: (sample(I64), sample(I64))), 18, {"BitwiseAnd"}, set()),
    (Case("bitwise_not", torch.bitwise_not, lambda: (sample(I64),)), 18, {"BitwiseNot"}, set()),
    (Case("bitwise_not", torch.bitwise_not, lambda: (sample(I64),)), 17, {"Neg", "Sub"}, {"BitwiseNot"}),
    (Case("rshift_uint8", lambda a: a >> 2, lambda: (sample(U8),)), 11, {"BitShift"}, {"Div"}),
    (Case("isinf", torch.isinf, lambda: (sample(F32),)), 10, {"IsInf"}, {"Greater"}),
    (Case("isinf", torch.isinf, lambda: (sample(F32),)), 9, {"Greater"}, {"IsInf"}),
    (Case("isnan", torch.isnan, lambda: (sample(F32),)), 9, {"IsNaN"}, set()),
    (Case("where_bool", torch.where, lambda: (sample(BOOL), sample(BOOL), sample(BOOL))), 9, {"Where", "Cast"}, set()),
]


@pytest.mark.parametrize("case,opset,present,absent", NATIVE, ids=lambda v: v.name if isinstance(v, Case) else None)
def test_logical_lowering(case, opset, present, absent):
    op_types = set(exported_op_types(case, opset))
    assert present <= op_types and not (absent & op_types), sorted(op_types)
