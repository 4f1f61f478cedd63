"""Padding: F.pad in every mode, the nn padding layers, negative pads, as one table run against
eager PyTorch via onnxruntime (Pad attribute before 11, input from 11, "wrap" from 19)."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.optable import Case, below_min_params, exported_op_types, params, run_below_min, run_case

OPSETS = (11, 19)


def randn(*shape, dtype=torch.float32):
    return lambda: (torch.randn(*shape).to(dtype),)


def pad(pads, **kwargs):
    return lambda x: F.pad(x, pads, **kwargs)


CASES = [
    Case("constant1d", pad((1, 2)), randn(2, 3, 4), opsets=OPSETS),
    Case("constant2d_value", pad((1, 2, 0, 3), value=1.5), randn(2, 3, 4, 5), opsets=OPSETS),
    Case("constant3d", pad((1, 0, 2, 1, 0, 2), value=-2.0), randn(1, 2, 3, 4, 5), opsets=OPSETS),
    Case("constant_all_dims", pad((1, 1, 0, 2, 1, 0)), randn(3, 4, 5), opsets=OPSETS),
    Case("constant_negative", pad((-1, 2, 1, -2)), randn(2, 3, 5, 6), opsets=OPSETS),
    Case("constant_crop_only", pad((-1, -1, 0, -2)), randn(2, 3, 5, 6), opsets=OPSETS),
    # before opset 11 Pad takes floats only: padded as double and cast back
    Case("constant_int64", pad((1, 2), value=7), lambda: (torch.randint(-5, 5, (2, 3)),), opsets=OPSETS),
    Case("constant_bool", pad((1, 1)), lambda: (torch.rand(2, 3) > 0.5,), opsets=OPSETS),
    Case("constant_bool_true", pad((1, 0, 0, 1), value=1.0), lambda: (torch.rand(2, 3) > 0.5,), opsets=OPSETS),
    Case("constant_float64", pad((2, 1)), randn(2, 3, dtype=torch.float64), opsets=OPSETS),
    Case("constant_pad_module", nn.ConstantPad2d((1, 2, 3, 0), 0.5), randn(1, 2, 3, 4), opsets=OPSETS),
    Case("zero_pad_module", nn.ZeroPad2d(2), randn(1, 2, 3, 4), opsets=OPSETS),
    Case("reflect1d", pad((2, 1), mode="reflect"), randn(2, 3, 5), opsets=OPSETS),
    Case("reflect2d", nn.ReflectionPad2d((1, 2, 2, 0)), randn(1, 2, 4, 5), opsets=OPSETS),
    Case("reflect3d", nn.ReflectionPad3d(1), randn(1, 2, 3, 4, 3), opsets=OPSETS),
    Case("replicate1d", nn.ReplicationPad1d((3, 1)), randn(2, 3, 4), opsets=OPSETS),
    Case("replicate2d", pad((1, 2, 3, 0), mode="replicate"), randn(1, 2, 3, 4), opsets=OPSETS),
    Case("replicate3d", nn.ReplicationPad3d((1, 0, 2, 1, 0, 1)), randn(1, 2, 2, 3, 4), opsets=OPSETS),
    Case("circular1d", pad((2, 1), mode="circular"), randn(2, 3, 5), opsets=OPSETS),
    Case("circular2d", nn.CircularPad2d((1, 2, 2, 0)), randn(1, 2, 4, 5), opsets=OPSETS),
    Case("circular3d", pad((1, 1, 0, 2, 1, 0), mode="circular"), randn(1, 2, 3, 4, 3), opsets=OPSETS),
    Case("pad_circular_op", lambda x: torch.ops.aten._pad_circular(x, [1, 2, 1, 0]), randn(1, 2, 3, 4),
         opsets=OPSETS),
    Case("circular2d_int64", pad((1, 2, 1, 0), mode="circular"), lambda: (torch.randint(0, 9, (1, 2, 3, 4)),),
         opsets=OPSETS),
    Case("reflect2d_dynamic", nn.ReflectionPad2d(1), randn(1, 2, 4, 5), opsets=OPSETS,
         export_options={"input_names": ["x"], "dynamic_axes": {"x": {0: "n", 2: "h", 3: "w"}}},
         other_inputs=lambda: [(torch.randn(3, 2, 6, 3),)]),
    Case("circular2d_dynamic", pad((1, 2, 2, 1), mode="circular"), randn(1, 2, 4, 5), opsets=OPSETS,
         export_options={"input_names": ["x"], "dynamic_axes": {"x": {0: "n", 2: "h", 3: "w"}}},
         other_inputs=lambda: [(torch.randn(3, 2, 6, 3),)]),
    Case("constant_runtime_pads", lambda x: F.pad(x, (0, (4 - x.shape[-1] % 4) % 4, 1, x.shape[-2] % 3)),
         randn(1, 2, 4, 5), min_opset=11, opsets=OPSETS,
         export_options={"input_names": ["x"], "dynamic_axes": {"x": {2: "h", 3: "w"}}},
         other_inputs=lambda: [(torch.randn(1, 2, 6, 8),), (torch.randn(1, 2, 5, 3),)]),
    Case("reflect_runtime_pads", lambda x: F.pad(x, (0, (4 - x.shape[-1] % 4) % 4), mode="reflect"),
         randn(1, 2, 5), min_opset=11, opsets=OPSETS,
         export_options={"input_names": ["x"], "dynamic_axes": {"x": {2: "w"}}},
         other_inputs=lambda: [(torch.randn(1, 2, 8),), (torch.randn(1, 2, 7),)]),
    Case("circular_runtime_pads", lambda x: F.pad(x, (x.shape[-1] // 2, 1), mode="circular"),
         randn(1, 2, 4), min_opset=19,
         export_options={"input_names": ["x"], "dynamic_axes": {"x": {2: "w"}}},
         other_inputs=lambda: [(torch.randn(1, 2, 6),)]),
]


@pytest.mark.parametrize("case, opset", params(CASES))
def test_padding(case, opset):
    run_case(case, opset)


@pytest.mark.parametrize("case, opset", below_min_params(CASES))
def test_padding_below_min_opset(case, opset):
    run_below_min(case, opset)


@pytest.mark.parametrize("opset, op_types", [(11, ["Slice", "Concat", "Slice", "Slice", "Concat"]),
                                             (19, ["Pad"])])
def test_circular_lowering(opset, op_types):
    case = CASES[[c.name for c in CASES].index("circular2d")]
    assert [t for t in exported_op_types(case, opset) if t != "Constant"] == op_types
