"""Resizing: F.interpolate / nn.Upsample in every mode, as one table run against eager PyTorch via
onnxruntime at the opsets where the lowering changes (Upsample 7/9, Resize 10/11/13/18)."""

import pytest
import torch
import torch.nn.functional as F

from tests.optable import Case, below_min_params, exported_op_types, params, run_below_min, run_case

OPSETS = (8, 9, 10, 11, 13, 18)


def randn(*shape, dtype=torch.float32):
    return lambda: (torch.randn(*shape).to(dtype),)


def interp(**kwargs):
    return lambda x: F.interpolate(x, **kwargs)


def dynamic(*names_by_axis):
    return {"input_names": ["x"], "dynamic_axes": {"x": dict(names_by_axis)}}


CASES = [
    # nearest: floor(dst * in / out), ONNX asymmetric + floor, so every opset
    Case("nearest1d_scale", interp(scale_factor=2, mode="nearest"), randn(1, 2, 5), opsets=OPSETS),
    Case("nearest2d_scale", interp(scale_factor=(2, 3), mode="nearest"), randn(2, 3, 4, 5), opsets=OPSETS),
    Case("nearest2d_size", interp(size=(8, 15), mode="nearest"), randn(1, 2, 4, 5), opsets=OPSETS),
    Case("nearest2d_down", interp(size=(3, 2), mode="nearest"), randn(1, 2, 6, 4), min_opset=10,
         opsets=OPSETS),
    Case("nearest3d_scale", interp(scale_factor=2, mode="nearest"), randn(1, 2, 2, 3, 4), opsets=OPSETS),
    Case("nearest2d_uint8", interp(scale_factor=2, mode="nearest"),
         lambda: (torch.randint(0, 255, (1, 2, 3, 4), dtype=torch.uint8),), opsets=OPSETS),
    Case("nearest2d_dynamic_scale", interp(scale_factor=2, mode="nearest"), randn(1, 2, 4, 5), opsets=OPSETS,
         export_options=dynamic((2, "h"), (3, "w")),
         other_inputs=lambda: [(torch.randn(1, 2, 3, 7),)]),
    # Runtime sizes at opset 10 are refused: Resize-10 could be downsampling by a fraction (see above).
    Case("nearest2d_dynamic_size", lambda x: F.interpolate(x, size=(x.shape[2] * 2, x.shape[3] + 1)),
         randn(1, 2, 4, 5), min_opset=9, opsets=(9, 11, 13, 18), export_options=dynamic((0, "n"), (2, "h"), (3, "w")),
         other_inputs=lambda: [(torch.randn(2, 2, 3, 7),)]),
    Case("nearest2d_down_fraction", interp(size=(4, 3), mode="nearest"), randn(1, 2, 6, 5), min_opset=11),
    Case("nearest2d_recompute", interp(scale_factor=1.7, mode="nearest", recompute_scale_factor=True),
         randn(1, 2, 4, 5), opsets=OPSETS),
    # nearest-exact: half_pixel + round_prefer_ceil (opset 11)
    Case("nearest_exact2d", interp(scale_factor=1.5, mode="nearest-exact"), randn(1, 2, 4, 6), min_opset=11,
         opsets=OPSETS),
    Case("nearest_exact1d_down", interp(size=3, mode="nearest-exact"), randn(1, 2, 7), min_opset=11),
    Case("nearest_exact3d", interp(size=(3, 5, 2), mode="nearest-exact"), randn(1, 1, 2, 3, 4), min_opset=11),
    # linear family: half_pixel / align_corners (opset 11)
    Case("linear1d", interp(scale_factor=2, mode="linear"), randn(1, 2, 5), min_opset=11, opsets=OPSETS),
    Case("linear1d_align", interp(size=9, mode="linear", align_corners=True), randn(1, 2, 5), min_opset=11),
    Case("bilinear2d", interp(scale_factor=2, mode="bilinear"), randn(2, 3, 4, 5), min_opset=11,
         opsets=OPSETS),
    Case("bilinear2d_size_down", interp(size=(3, 4), mode="bilinear"), randn(1, 2, 7, 9), min_opset=11),
    Case("bilinear2d_align", interp(size=(7, 9), mode="bilinear", align_corners=True), randn(1, 2, 4, 5),
         min_opset=11, opsets=OPSETS),
    Case("bilinear2d_size1", interp(size=(1, 1), mode="bilinear"), randn(1, 2, 4, 5), min_opset=11),
    Case("bilinear2d_float64", interp(scale_factor=2, mode="bilinear"), randn(1, 2, 3, 4, dtype=torch.float64),
         min_opset=11).xfail([11, 26], "onnxruntime has no float64 Resize kernel (the model passes onnx.checker)"),
    Case("bilinear2d_dynamic", interp(scale_factor=2, mode="bilinear"), randn(1, 2, 4, 5), min_opset=11,
         opsets=OPSETS, export_options=dynamic((0, "n"), (2, "h"), (3, "w")),
         other_inputs=lambda: [(torch.randn(2, 2, 3, 7),)]),
    Case("bilinear2d_dynamic_size", lambda x: F.interpolate(x, size=(x.shape[2] * 2, 5), mode="bilinear"),
         randn(1, 2, 4, 5), min_opset=11, export_options=dynamic((2, "h")),
         other_inputs=lambda: [(torch.randn(1, 2, 6, 5),)]),
    Case("trilinear3d", interp(scale_factor=(2, 1.5, 2), mode="trilinear"), randn(1, 2, 2, 4, 3),
         min_opset=11, opsets=OPSETS),
    Case("trilinear3d_align", interp(size=(3, 5, 4), mode="trilinear", align_corners=True),
         randn(1, 2, 2, 4, 3), min_opset=11),
    Case("bicubic2d", interp(scale_factor=2, mode="bicubic"), randn(1, 2, 4, 5), min_opset=11, opsets=OPSETS,
         rtol=1e-4, atol=1e-4),
    Case("bicubic2d_align", interp(size=(7, 3), mode="bicubic", align_corners=True), randn(1, 2, 4, 5),
         min_opset=11, atol=1e-4),
    # antialias (opset 18)
    Case("bilinear2d_antialias", interp(size=(3, 4), mode="bilinear", antialias=True), randn(1, 2, 9, 11),
         min_opset=18, atol=1e-4),
    Case("bicubic2d_antialias", interp(scale_factor=0.4, mode="bicubic", antialias=True), randn(1, 2, 10, 12),
         min_opset=18, atol=1e-4),
]


def interpolate_op(x):
    return torch.ops.aten.__interpolate(x, None, [2.0, 1.5], "bilinear", False, None, False)


def interpolate_op_size(x):
    return torch.ops.aten.__interpolate(x, 3, None, "nearest", None, None, False)


CASES += [
    Case("aten_interpolate_bilinear", interpolate_op, randn(1, 2, 4, 4), min_opset=11),
    Case("aten_interpolate_nearest_size", interpolate_op_size, randn(1, 2, 6, 5), min_opset=11),
    Case("aten_interpolate_nearest_size_whole", interpolate_op_size, randn(1, 2, 6, 9), min_opset=10),
]


@pytest.mark.parametrize("case, opset", params(CASES))
def test_resize(case, opset):
    run_case(case, opset)


@pytest.mark.parametrize("case, opset", below_min_params(CASES))
def test_resize_below_min_opset(case, opset):
    run_below_min(case, opset)


@pytest.mark.parametrize("opset, op_type", [(7, "Upsample"), (9, "Upsample"), (10, "Resize"), (11, "Resize")])
def test_resize_lowering(opset, op_type):
    case = CASES[[c.name for c in CASES].index("nearest2d_scale")]
    assert [t for t in exported_op_types(case, opset) if t != "Constant"] == [op_type]
