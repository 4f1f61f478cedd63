"""Rearranging: channel shuffle, unfold/fold (im2col/col2im), grid_sample, affine_grid, as one
table run against eager PyTorch via onnxruntime (Col2Im at 18, GridSample at 16 and 20,
AffineGrid at 20; decompositions below)."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.optable import Case, below_min_params, exported_op_types, params, run_below_min, run_case


def randn(*shape, dtype=torch.float32):
    return lambda: (torch.randn(*shape).to(dtype),)


def grid(*shape):
    """A sampling grid reaching a little outside [-1, 1], so the padding modes matter."""
    return lambda: (torch.randn(*shape[:1], 3, *shape[2:]), torch.rand(*shape) * 2.4 - 1.2)


def sample(**kwargs):
    return lambda x, grid: F.grid_sample(x, grid, **kwargs)


def affine(size, align_corners):
    return lambda theta: F.affine_grid(theta, size, align_corners=align_corners)


GRID = (16, 20)
CASES = [
    Case("channel_shuffle", nn.ChannelShuffle(3), randn(2, 6, 4, 5)),
    Case("native_channel_shuffle", lambda x: torch.native_channel_shuffle(x, 2), randn(1, 4, 3, 3)),
    Case("channel_shuffle_1d", lambda x: F.channel_shuffle(x, 2), randn(2, 8, 5)),
    Case("channel_shuffle_int64", lambda x: F.channel_shuffle(x, 2), lambda: (torch.randint(0, 99, (1, 4, 3, 3)),)),
    Case("channel_shuffle_dynamic", nn.ChannelShuffle(2), randn(2, 4, 3, 5),
         export_options={"input_names": ["x"], "dynamic_axes": {"x": {0: "n", 2: "h", 3: "w"}}},
         other_inputs=lambda: [(torch.randn(3, 4, 6, 2),)]),
    Case("unfold", nn.Unfold(3), randn(2, 3, 5, 6)),
    Case("unfold_strided", nn.Unfold((2, 3), dilation=(1, 2), padding=1, stride=(2, 1)), randn(1, 2, 6, 7)),
    Case("unfold_unbatched", lambda x: F.unfold(x, 2, stride=2), randn(3, 4, 6)),
    Case("unfold_dynamic", nn.Unfold(2, stride=2), randn(1, 3, 4, 6),
         export_options={"input_names": ["x"], "dynamic_axes": {"x": {0: "n", 2: "h", 3: "w"}}},
         other_inputs=lambda: [(torch.randn(2, 3, 6, 4),)]),
    Case("fold", nn.Fold((4, 5), 2), randn(2, 12, 12), opsets=(18,)),
    Case("fold_overlap", nn.Fold((5, 6), (2, 3), dilation=(2, 1), padding=1, stride=(1, 2)),
         randn(1, 12, 15), opsets=(18,)),
    Case("fold_leftover", nn.Fold((6, 7), 2, stride=2), randn(1, 8, 9), opsets=(18,)),
    Case("fold_unbatched", lambda x: F.fold(x, (3, 3), 2), randn(8, 4), opsets=(18,)),
    Case("grid_sample_bilinear", sample(align_corners=False), grid(2, 4, 5, 2), min_opset=16, opsets=GRID),
    Case("grid_sample_bilinear_align_border", sample(padding_mode="border", align_corners=True),
         grid(1, 4, 5, 2), min_opset=16, opsets=GRID),
    Case("grid_sample_nearest_reflection", sample(mode="nearest", padding_mode="reflection", align_corners=False),
         grid(1, 6, 3, 2), min_opset=16, opsets=GRID),
    Case("grid_sample_bicubic", sample(mode="bicubic", align_corners=False), grid(1, 5, 4, 2), min_opset=16,
         opsets=GRID, atol=1e-4),
    Case("grid_sample_bicubic_reflection_align", sample(mode="bicubic", padding_mode="reflection",
                                                        align_corners=True),
         grid(1, 5, 4, 2), min_opset=16, opsets=GRID, atol=1e-4),
    Case("grid_sample_3d", sample(align_corners=False), grid(1, 3, 4, 5, 3), min_opset=20),
    Case("grid_sample_3d_nearest_border", sample(mode="nearest", padding_mode="border", align_corners=True),
         grid(1, 2, 3, 4, 3), min_opset=20),
    Case("affine_grid", affine((2, 3, 4, 5), False), lambda: (torch.randn(2, 2, 3),), opsets=(20,)),
    Case("affine_grid_align", affine((1, 3, 3, 6), True), lambda: (torch.randn(1, 2, 3),), opsets=(20,)),
    Case("affine_grid_3d", affine((2, 1, 3, 4, 2), False), lambda: (torch.randn(2, 3, 4),), opsets=(20,)),
    Case("affine_grid_then_sample", lambda x, t: F.grid_sample(x, F.affine_grid(t, (1, 2, 4, 4), False),
                                                               align_corners=False),
         lambda: (torch.randn(1, 2, 5, 6), torch.randn(1, 2, 3) * 0.5), min_opset=16, opsets=GRID),
]


@pytest.mark.parametrize("case, opset", params(CASES))
def test_rearrange(case, opset):
    run_case(case, opset)


@pytest.mark.parametrize("case, opset", below_min_params(CASES))
def test_rearrange_below_min_opset(case, opset):
    run_below_min(case, opset)


@pytest.mark.parametrize("name, opset, op_type", [("fold", 17, "ConvTranspose"), ("fold", 18, "Col2Im"),
                                                  ("affine_grid", 19, "MatMul"), ("affine_grid", 20, "AffineGrid"),
                                                  ("unfold", 9, "Conv")])
def test_rearrange_lowering(name, opset, op_type):
    case = CASES[[c.name for c in CASES].index(name)]
    assert op_type in exported_op_types(case, opset)
