"""Convolution beyond tests/ops/test_nn.py: padding modes, conv_tbc, aten::_convolution and
aten::convolution called directly, dynamic batch/spatial sizes."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.optable import Case, params, run_case


def randn(*shape):
    return lambda: (torch.randn(*shape),)


def dynamic(names: dict) -> dict:
    return {"input_names": ["x"], "dynamic_axes": {"x": names}}


PAD_OPSETS = (11,)  # padding ops take pads as an input from opset 11

CASES = [
    # padding_mode through nn.Conv*d (the module pads with F.pad, then convolves unpadded)
    Case("conv1d_reflect", nn.Conv1d(2, 3, 3, padding=2, padding_mode="reflect"), randn(1, 2, 7),
         opsets=PAD_OPSETS),
    Case("conv2d_reflect", nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode="reflect"), randn(1, 2, 6, 7),
         opsets=PAD_OPSETS),
    Case("conv2d_replicate", nn.Conv2d(2, 3, 3, padding=1, stride=2, padding_mode="replicate"),
         randn(2, 2, 6, 7), opsets=PAD_OPSETS),
    Case("conv3d_replicate", nn.Conv3d(2, 2, 3, padding=1, padding_mode="replicate"), randn(1, 2, 4, 5, 5),
         opsets=PAD_OPSETS),
    Case("conv1d_circular", nn.Conv1d(2, 3, 3, padding=1, padding_mode="circular"), randn(1, 2, 8),
         opsets=PAD_OPSETS),
    Case("conv2d_circular", nn.Conv2d(2, 3, 3, padding=(2, 1), padding_mode="circular"), randn(1, 2, 6, 7),
         opsets=PAD_OPSETS),
    Case("conv2d_same_reflect", nn.Conv2d(2, 3, 4, padding="same", padding_mode="reflect"), randn(1, 2, 6, 7),
         opsets=PAD_OPSETS),
    Case("conv2d_zeros_mode", nn.Conv2d(2, 3, 3, padding=1, padding_mode="zeros"), randn(1, 2, 5, 5)),
    # padding forms
    Case("conv1d_same_even_kernel", nn.Conv1d(2, 3, 4, padding="same"), randn(1, 2, 9)),
    Case("conv3d_same", nn.Conv3d(2, 2, (3, 2, 1), padding="same"), randn(1, 2, 4, 5, 3)),
    Case("conv1d_valid_stride", nn.Conv1d(2, 3, 3, stride=3, padding="valid"), randn(2, 2, 11)),
    Case("conv2d_functional_same", lambda x, w: F.conv2d(x, w, padding="same", dilation=2),
         lambda: (torch.randn(1, 2, 7, 6), torch.randn(4, 2, 3, 2))),
    Case("conv1d_groups_dilation_stride", nn.Conv1d(6, 9, 3, stride=2, dilation=3, groups=3, padding=2),
         randn(2, 6, 17)),
    Case("conv3d_groups", nn.Conv3d(4, 4, 2, groups=2, bias=False), randn(1, 4, 3, 4, 5)),
    # transposed
    Case("conv_transpose1d_output_padding", nn.ConvTranspose1d(2, 4, 3, stride=3, output_padding=2, groups=2),
         randn(1, 2, 5)),
    Case("conv_transpose3d_dilation_groups", nn.ConvTranspose3d(4, 2, 2, dilation=2, groups=2, bias=False),
         randn(1, 4, 2, 3, 3)),
    Case("conv_transpose2d_functional", lambda x, w, b: F.conv_transpose2d(x, w, b, stride=(2, 1), padding=1),
         lambda: (torch.randn(1, 3, 4, 5), torch.randn(3, 2, 3, 3), torch.randn(2))),
    # aten ops called directly
    Case("_convolution", lambda x, w, b: torch._convolution(x, w, b, [2, 1], [1, 0], [1, 1], False, [0, 0], 1,
                                                            False, False, True, True),
         lambda: (torch.randn(1, 2, 6, 5), torch.randn(3, 2, 3, 3), torch.randn(3))),
    Case("_convolution_transposed", lambda x, w: torch._convolution(x, w, None, [2], [1], [1], True, [1], 1,
                                                                    False, False, True, True),
         lambda: (torch.randn(1, 2, 6), torch.randn(2, 3, 3))),
    Case("convolution", lambda x, w, b: torch.convolution(x, w, b, [1, 1], [1, 1], [2, 1], False, [0, 0], 1),
         lambda: (torch.randn(1, 2, 7, 5), torch.randn(4, 2, 3, 3), torch.randn(4))),
    Case("conv_tbc", lambda x, w, b: torch.conv_tbc(x, w, b, 1),
         lambda: (torch.randn(7, 2, 3), torch.randn(3, 3, 4), torch.randn(4))),
    Case("conv_tbc_no_pad", lambda x, w, b: torch.conv_tbc(x, w, b),
         lambda: (torch.randn(6, 1, 2), torch.randn(2, 2, 5), torch.randn(5))),
    # dynamic batch and spatial sizes
    Case("conv2d_dynamic", nn.Conv2d(3, 4, 3, stride=2, padding=1), randn(2, 3, 9, 10),
         export_options=dynamic({0: "batch", 2: "h", 3: "w"}),
         other_inputs=lambda: [(torch.randn(3, 3, 12, 7),)]),
    Case("conv1d_same_dynamic", nn.Conv1d(2, 3, 4, padding="same"), randn(1, 2, 9),
         export_options=dynamic({0: "batch", 2: "t"}), other_inputs=lambda: [(torch.randn(4, 2, 5),)]),
    Case("conv_transpose2d_dynamic", nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1, output_padding=1),
         randn(1, 2, 4, 5), export_options=dynamic({0: "batch", 2: "h", 3: "w"}),
         other_inputs=lambda: [(torch.randn(2, 2, 6, 3),)]),
    Case("conv2d_reflect_dynamic", nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"), randn(1, 2, 6, 7),
         opsets=PAD_OPSETS, export_options=dynamic({0: "batch", 2: "h", 3: "w"}),
         other_inputs=lambda: [(torch.randn(3, 2, 5, 9),)]),
    Case("conv2d_circular_dynamic", nn.Conv2d(2, 3, 3, padding=1, padding_mode="circular"), randn(1, 2, 6, 7),
         opsets=PAD_OPSETS, export_options=dynamic({0: "batch", 2: "h", 3: "w"}),
         other_inputs=lambda: [(torch.randn(3, 2, 5, 9),)]),
    Case("conv_tbc_dynamic", lambda x, w, b: torch.conv_tbc(x, w, b, 1),
         lambda: (torch.randn(7, 2, 3), torch.randn(3, 3, 4), torch.randn(4)),
         export_options={"input_names": ["x", "w", "b"], "dynamic_axes": {"x": {0: "t", 1: "b"}}},
         other_inputs=lambda: [(torch.randn(4, 5, 3), torch.randn(3, 3, 4), torch.randn(4))]),
]


@pytest.mark.parametrize("case, opset", params(CASES))
def test_conv(case, opset):
    run_case(case, opset)
