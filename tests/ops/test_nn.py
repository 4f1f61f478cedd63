"""Layers: convolution, pooling, batch norm, linear, dropout, pixel (un)shuffle; one table, run
against eager PyTorch via onnxruntime."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.optable import Case, below_min_params, exported_op_types, params, run_below_min, run_case

F64 = torch.float64


def randn(*shape, dtype=torch.float32):
    return lambda: (torch.randn(*shape, dtype=dtype),)


def seeded(module: nn.Module) -> nn.Module:
    """Batch norms with non-trivial running statistics and affine parameters."""
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                if m.running_mean is not None:
                    m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=generator))
                    m.running_var.copy_(torch.rand(m.running_var.shape, generator=generator) + 0.5)
                if m.weight is not None:
                    m.weight.copy_(torch.randn(m.weight.shape, generator=generator))
                    m.bias.copy_(torch.randn(m.bias.shape, generator=generator))
    return module.eval()


POOL_OPSETS = (10,)  # ceil_mode and dilations attributes

CASES = [
    # Convolution
    Case("conv1d", nn.Conv1d(3, 4, 3, stride=2, padding=1), randn(2, 3, 9)),
    Case("conv2d", nn.Conv2d(3, 4, 3, stride=(2, 1), padding=(1, 2), dilation=(1, 2)), randn(2, 3, 9, 10)),
    Case("conv2d_groups_no_bias", nn.Conv2d(4, 6, 3, groups=2, bias=False), randn(1, 4, 7, 7)),
    Case("conv2d_depthwise", nn.Conv2d(4, 4, 3, padding=1, groups=4), randn(1, 4, 6, 6)),
    Case("conv2d_float64", nn.Conv2d(2, 3, 3).double(), randn(1, 2, 5, 5, dtype=F64))
    .xfail([7, 26], "onnxruntime has no float64 Conv kernel (the model passes onnx.checker)"),
    Case("conv2d_same", nn.Conv2d(3, 4, (4, 3), padding="same", dilation=(2, 1)), randn(1, 3, 9, 8)),
    Case("conv2d_valid", nn.Conv2d(3, 4, 3, padding="valid"), randn(1, 3, 6, 6)),
    Case("conv2d_functional", lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1),
         lambda: (torch.randn(1, 3, 8, 8), torch.randn(5, 3, 3, 3), torch.randn(5))),
    Case("conv3d", nn.Conv3d(2, 3, (2, 3, 3), stride=(1, 2, 2), padding=(1, 0, 1)), randn(1, 2, 5, 6, 7)),
    Case("conv_transpose1d", nn.ConvTranspose1d(3, 2, 4, stride=2, padding=1), randn(1, 3, 6)),
    Case("conv_transpose2d", nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
         randn(2, 4, 5, 5)),
    Case("conv_transpose2d_dilation", nn.ConvTranspose2d(3, 2, 3, dilation=2, bias=False), randn(1, 3, 4, 5)),
    Case("conv_transpose3d", nn.ConvTranspose3d(2, 3, 3, stride=(1, 2, 2), padding=1), randn(1, 2, 3, 4, 4)),
    # Pooling
    Case("max_pool1d", nn.MaxPool1d(3, stride=2, padding=1), randn(2, 3, 10)),
    Case("max_pool2d", nn.MaxPool2d(3, stride=2, padding=1), randn(2, 3, 9, 10)),
    Case("max_pool2d_ceil", nn.MaxPool2d(3, stride=2, ceil_mode=True), randn(1, 3, 10, 11), opsets=POOL_OPSETS),
    Case("max_pool2d_ceil_padded", nn.MaxPool2d(2, stride=2, padding=1, ceil_mode=True), randn(1, 2, 5, 6),
         opsets=POOL_OPSETS),
    Case("max_pool2d_dilation", nn.MaxPool2d(2, stride=1, dilation=2), randn(1, 2, 6, 6), min_opset=10),
    Case("max_pool3d", nn.MaxPool3d(2), randn(1, 2, 4, 4, 6)),
    Case("max_pool2d_indices", nn.MaxPool2d(3, stride=2, padding=1, return_indices=True), randn(2, 3, 7, 8),
         min_opset=8),
    Case("max_pool1d_indices", nn.MaxPool1d(2, return_indices=True), randn(2, 3, 8), min_opset=8),
    Case("max_pool3d_indices_ceil", nn.MaxPool3d(2, ceil_mode=True, return_indices=True), randn(1, 2, 3, 5, 4),
         min_opset=8, opsets=POOL_OPSETS),
    Case("avg_pool1d", nn.AvgPool1d(3, stride=2, padding=1), randn(2, 3, 10)),
    Case("avg_pool2d", nn.AvgPool2d(3, stride=2, padding=1), randn(2, 3, 9, 10)),
    Case("avg_pool2d_exclude_pad", nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False),
         randn(1, 3, 5, 6)),
    Case("avg_pool2d_ceil", nn.AvgPool2d(3, stride=2, ceil_mode=True), randn(1, 3, 10, 11), opsets=POOL_OPSETS),
    Case("avg_pool2d_ceil_padded", nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True), randn(1, 3, 10, 11),
         opsets=POOL_OPSETS),
    Case("avg_pool2d_ceil_padded_exclude", nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False),
         randn(1, 3, 10, 11), opsets=POOL_OPSETS),
    Case("avg_pool2d_divisor", nn.AvgPool2d(3, stride=2, padding=1, divisor_override=4), randn(1, 3, 9, 10)),
    Case("avg_pool3d", nn.AvgPool3d(2, stride=(1, 2, 2)), randn(1, 2, 4, 4, 6)),
    Case("adaptive_avg_pool1d", nn.AdaptiveAvgPool1d(3), randn(2, 3, 12)),
    Case("adaptive_avg_pool2d_global", nn.AdaptiveAvgPool2d(1), randn(2, 3, 5, 7)),
    Case("adaptive_avg_pool2d", nn.AdaptiveAvgPool2d((2, 3)), randn(2, 3, 8, 9)),
    Case("adaptive_avg_pool2d_none", nn.AdaptiveAvgPool2d((None, 2)), randn(1, 3, 5, 8)),
    Case("adaptive_avg_pool2d_identity", nn.AdaptiveAvgPool2d((5, 7)), randn(1, 3, 5, 7)),
    Case("adaptive_avg_pool3d", nn.AdaptiveAvgPool3d((1, 2, 2)), randn(1, 2, 3, 4, 6)),
    Case("adaptive_max_pool1d", nn.AdaptiveMaxPool1d(4), randn(2, 3, 12)),
    Case("adaptive_max_pool2d_global", nn.AdaptiveMaxPool2d(1), randn(2, 3, 5, 7)),
    Case("adaptive_max_pool2d_indices", nn.AdaptiveMaxPool2d((2, 3), return_indices=True), randn(2, 3, 8, 9),
         min_opset=8),
    Case("adaptive_max_pool2d_global_indices", nn.AdaptiveMaxPool2d(1, return_indices=True), randn(2, 3, 5, 7)),
    Case("adaptive_max_pool3d", nn.AdaptiveMaxPool3d(2), randn(1, 2, 4, 4, 6)),
    Case("adaptive_max_pool2d_values_of_pair", lambda x: F.adaptive_max_pool2d(x, (2, 3), return_indices=True)[0],
         randn(2, 3, 8, 9)),
    # Batch norm
    Case("batch_norm1d_2d_input", seeded(nn.BatchNorm1d(5)), randn(4, 5)),
    Case("batch_norm1d_3d_input", seeded(nn.BatchNorm1d(3)), randn(2, 3, 6)),
    Case("batch_norm2d", seeded(nn.BatchNorm2d(3, eps=1e-3)), randn(2, 3, 4, 5)),
    Case("batch_norm2d_float64", seeded(nn.BatchNorm2d(3)).double(), randn(2, 3, 4, 5, dtype=F64)),
    Case("batch_norm2d_no_affine", seeded(nn.BatchNorm2d(3, affine=False)), randn(2, 3, 4, 5)),
    Case("batch_norm2d_no_running_stats", seeded(nn.BatchNorm2d(3, track_running_stats=False)),
         randn(2, 3, 4, 5)),
    Case("batch_norm3d", seeded(nn.BatchNorm3d(2)), randn(2, 2, 3, 4, 5)),
    Case("batch_norm_functional", lambda x, m, v: F.batch_norm(x, m, v, eps=1e-2),
         lambda: (torch.randn(2, 3, 4), torch.randn(3), torch.rand(3) + 0.5)),
    # Linear
    Case("linear", nn.Linear(5, 3), randn(4, 5)),
    Case("linear_3d_input", nn.Linear(5, 3), randn(2, 4, 5)),
    Case("linear_no_bias", nn.Linear(5, 3, bias=False), randn(4, 5)),
    Case("linear_1d_input", nn.Linear(5, 3), randn(5)),
    Case("linear_float64", nn.Linear(5, 3).double(), randn(4, 5, dtype=F64)),
    # Dropout (eval: identity)
    Case("dropout", nn.Dropout(0.3), randn(3, 4)),
    Case("dropout2d", nn.Dropout2d(0.3), randn(2, 3, 4, 4)),
    Case("alpha_dropout", nn.AlphaDropout(0.3), randn(3, 4)),
    Case("feature_alpha_dropout", nn.FeatureAlphaDropout(0.3), randn(2, 3, 4, 4)),
    Case("dropout_functional_eval", lambda x: F.dropout(x, 0.5, training=False), randn(3, 4)),
    # Rearranging
    Case("pixel_shuffle", nn.PixelShuffle(2), randn(2, 12, 3, 4), opsets=(11,)),
    Case("pixel_unshuffle", nn.PixelUnshuffle(2), randn(2, 3, 4, 6)),
]


@pytest.mark.parametrize("case, opset", params(CASES))
def test_nn(case, opset):
    run_case(case, opset)


@pytest.mark.parametrize("case, opset", below_min_params(CASES))
def test_nn_below_min_opset(case, opset):
    run_below_min(case, opset)


TRAINING_DROPOUT = Case("dropout_training", lambda x: F.dropout(x, 0.5, training=True), randn(3, 4),
                        opsets=(12,), check_values=False)


@pytest.mark.parametrize("case, opset", params([TRAINING_DROPOUT]))
def test_dropout_training(case, opset):
    run_case(case, opset)
    assert "Dropout" in exported_op_types(case, opset)


@pytest.mark.parametrize("opset", [9, 11])
def test_pixel_shuffle_lowering(opset):
    types = exported_op_types(CASES[[c.name for c in CASES].index("pixel_shuffle")], opset)
    types = [t for t in types if t != "Constant"]
    assert types == (["DepthToSpace"] if opset >= 11 else ["Reshape", "Transpose", "Reshape"])
