"""Pooling beyond tests/ops/test_nn.py: adaptive pooling to non-divisible sizes, lp_pool, max_unpool,
more ceil_mode/dilation/divisor combinations, dynamic sizes."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.optable import Case, params, run_case


def randn(*shape):
    return lambda: (torch.randn(*shape),)


def dynamic(names: dict) -> dict:
    return {"input_names": ["x"], "dynamic_axes": {"x": names}}


POOL_OPSETS = (10,)  # ceil_mode and dilations attributes


class Unpool(nn.Module):
    """max_pool with indices, then aten::max_unpool back to a static size (F.max_unpool*d checks the
    size with tensors under tracing and fails; the aten op is what it calls)."""

    def __init__(self, n: int, kernel, size, stride=None):
        super().__init__()
        pool = {1: nn.MaxPool1d, 2: nn.MaxPool2d, 3: nn.MaxPool3d}[n]
        self.pool = pool(kernel, stride, return_indices=True)
        self.n, self.size, self.stride = n, list(size), stride or kernel

    def forward(self, x):
        values, indices = self.pool(x)
        if self.n == 1:
            out = torch._C._nn.max_unpool2d(values.unsqueeze(-1), indices.unsqueeze(-1), self.size + [1])
            return out.squeeze(-1)
        if self.n == 2:
            return torch._C._nn.max_unpool2d(values, indices, self.size)
        return torch._C._nn.max_unpool3d(values, indices, self.size, [self.stride] * 3, [0, 0, 0])


CASES = [
    # max pooling
    Case("max_pool1d_ceil_dilation", nn.MaxPool1d(3, stride=2, dilation=2, ceil_mode=True), randn(2, 3, 12),
         min_opset=10),
    Case("max_pool3d_padded_strided", nn.MaxPool3d((2, 3, 3), stride=(1, 2, 2), padding=(1, 1, 0)),
         randn(1, 2, 4, 6, 7)),
    Case("max_pool2d_indices_dilation", nn.MaxPool2d(2, stride=2, dilation=2, return_indices=True),
         randn(1, 2, 7, 8), min_opset=10),
    Case("max_pool1d_int64", lambda x: F.max_pool1d(x.double(), 2).long(),
         lambda: (torch.randint(-5, 5, (1, 2, 8)),))
    .xfail([7], "MaxPool-7 has no float64 (opset 12 adds it)"),
    # average pooling
    Case("avg_pool1d_ceil_exclude", nn.AvgPool1d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
         randn(2, 3, 10), opsets=POOL_OPSETS),
    Case("avg_pool3d_divisor", nn.AvgPool3d(2, stride=1, padding=1, divisor_override=3), randn(1, 2, 3, 4, 4)),
    # ceil mode with counted padding: torch drops a last window that would start in the right
    # padding (9 -> 5 windows, not 6), and clips the others to the padded input
    Case("avg_pool2d_ceil_include_pad", nn.AvgPool2d(2, stride=2, padding=1, ceil_mode=True),
         randn(2, 3, 9, 7), opsets=POOL_OPSETS),
    Case("avg_pool1d_ceil_include_pad_stride3", nn.AvgPool1d(3, stride=3, padding=1, ceil_mode=True),
         randn(2, 3, 8), opsets=POOL_OPSETS),
    # divisor_override with ceil_mode: the extra tail windows are sum / divisor as well
    Case("avg_pool2d_divisor_ceil", nn.AvgPool2d(3, stride=2, ceil_mode=True, divisor_override=4),
         randn(1, 2, 6, 8)),
    Case("avg_pool2d_divisor_ceil_padded", nn.AvgPool2d((3, 4), stride=2, padding=(1, 2), ceil_mode=True,
                                                        divisor_override=5), randn(2, 3, 8, 9)),
    Case("avg_pool2d_divisor_ceil_stride_gt_kernel", nn.AvgPool2d(2, stride=3, ceil_mode=True, divisor_override=3),
         randn(1, 2, 7, 8)),
    Case("avg_pool3d_divisor_ceil", nn.AvgPool3d((2, 3, 2), stride=2, padding=(1, 0, 1), ceil_mode=True,
                                                 divisor_override=7), randn(1, 2, 5, 6, 7)),
    Case("avg_pool2d_divisor_ceil_functional", lambda x: F.avg_pool2d(x, 3, 2, ceil_mode=True, divisor_override=2),
         randn(1, 2, 6, 7)),
    Case("avg_pool2d_divisor_ceil_dynamic_batch", nn.AvgPool2d(3, stride=2, ceil_mode=True, divisor_override=2),
         randn(2, 3, 6, 8), export_options=dynamic({0: "batch"}), other_inputs=lambda: [(torch.randn(4, 3, 6, 8),)]),
    Case("avg_pool3d_ceil", nn.AvgPool3d(3, stride=2, ceil_mode=True), randn(1, 2, 5, 6, 7), opsets=POOL_OPSETS),
    # adaptive pooling to sizes that do not divide the input (per-bin reductions)
    Case("adaptive_avg_pool1d_uneven", nn.AdaptiveAvgPool1d(4), randn(2, 3, 10)),
    Case("adaptive_avg_pool2d_uneven", nn.AdaptiveAvgPool2d((3, 5)), randn(1, 3, 7, 8), opsets=(13, 18)),
    Case("adaptive_avg_pool2d_upsample", nn.AdaptiveAvgPool2d((7, 4)), randn(1, 2, 5, 4)),
    Case("adaptive_avg_pool3d_uneven", nn.AdaptiveAvgPool3d((2, 3, 3)), randn(1, 2, 3, 5, 4), opsets=(13, 18)),
    Case("adaptive_max_pool1d_uneven", nn.AdaptiveMaxPool1d(3), randn(2, 3, 7), opsets=(18,)),
    Case("adaptive_max_pool2d_uneven", nn.AdaptiveMaxPool2d((3, 4)), randn(1, 2, 7, 9), opsets=(18,)),
    Case("adaptive_max_pool3d_uneven", nn.AdaptiveMaxPool3d((2, 2, 3)), randn(1, 2, 5, 3, 4), opsets=(18,)),
    # lp pooling: torch computes (sum over the window of x^p)^(1/p) as (avg * kernel size)^(1/p)
    Case("lp_pool1d", nn.LPPool1d(2, 3, stride=2), lambda: (torch.rand(2, 3, 10) + 0.1,)),
    Case("lp_pool2d", nn.LPPool2d(2, (2, 3)), lambda: (torch.rand(1, 3, 6, 7) + 0.1,)),
    Case("lp_pool2d_p3", nn.LPPool2d(3, 2, stride=1), lambda: (torch.rand(1, 2, 5, 5) + 0.1,)),
    Case("lp_pool2d_p1_signed", nn.LPPool2d(1, 2), randn(1, 2, 6, 6)),
    Case("lp_pool2d_ceil", nn.LPPool2d(2, 3, stride=2, ceil_mode=True), lambda: (torch.rand(1, 2, 7, 8) + 0.1,),
         opsets=POOL_OPSETS),
    # max_unpool
    Case("max_unpool1d", Unpool(1, 2, [8]), randn(2, 3, 8), min_opset=9),
    Case("max_unpool2d", Unpool(2, 2, [6, 8]), randn(2, 3, 6, 8), min_opset=9),
    Case("max_unpool2d_larger", Unpool(2, 2, [7, 9]), randn(2, 3, 6, 8), min_opset=9),
    Case("max_unpool2d_strided", Unpool(2, 3, [7, 7], stride=2), randn(1, 2, 7, 7), min_opset=9),
    Case("max_unpool3d", Unpool(3, 2, [4, 4, 6]), randn(1, 2, 4, 4, 6), min_opset=9),
    # dynamic sizes
    Case("max_pool2d_dynamic", nn.MaxPool2d(3, stride=2, padding=1), randn(2, 3, 9, 10),
         export_options=dynamic({0: "batch", 2: "h", 3: "w"}), other_inputs=lambda: [(torch.randn(1, 3, 6, 13),)]),
    Case("max_pool2d_ceil_dynamic", nn.MaxPool2d(3, stride=2, ceil_mode=True), randn(1, 3, 10, 11),
         min_opset=10, export_options=dynamic({0: "batch", 2: "h", 3: "w"}),
         other_inputs=lambda: [(torch.randn(2, 3, 8, 9),)]),
    Case("avg_pool2d_dynamic", nn.AvgPool2d(2), randn(2, 3, 8, 10),
         export_options=dynamic({0: "batch", 2: "h", 3: "w"}), other_inputs=lambda: [(torch.randn(3, 3, 6, 4),)]),
    Case("adaptive_avg_pool2d_global_dynamic", nn.AdaptiveAvgPool2d(1), randn(2, 3, 5, 7),
         export_options=dynamic({0: "batch", 2: "h", 3: "w"}), other_inputs=lambda: [(torch.randn(1, 3, 9, 2),)]),
    Case("adaptive_max_pool2d_global_dynamic", nn.AdaptiveMaxPool2d(1), randn(2, 3, 5, 7),
         export_options=dynamic({0: "batch", 2: "h", 3: "w"}), other_inputs=lambda: [(torch.randn(1, 3, 9, 2),)]),
    Case("adaptive_avg_pool2d_dynamic_batch", nn.AdaptiveAvgPool2d((3, 5)), randn(2, 3, 7, 8),
         export_options=dynamic({0: "batch"}), other_inputs=lambda: [(torch.randn(4, 3, 7, 8),)]),
]


@pytest.mark.parametrize("case, opset", params(CASES))
def test_pooling(case, opset):
    run_case(case, opset)
