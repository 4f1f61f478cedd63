"""Rearranging at opset 18: col2im as Col2Im."""

from __future__ import annotations

import torch

from .. import onnx_ops
from .. import symbolic_helper as sh
from ..registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(18)


@_onnx_symbolic("aten::col2im")
@sh.parse_args("v", "is", "is", "is", "is", "is")
def col2im(g, self, output_size, kernel_size, dilation, padding, stride):
    """col2im(Tensor self, SymInt[2] output_size, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride) -> Tensor"""
    unbatched = self.rank == 2
    x = onnx_ops.unsqueeze(g, self, [0]) if unbatched else self
    out = g.op("Col2Im", x, g.constant(output_size, torch.int64), g.constant(kernel_size, torch.int64),
               dilations_i=dilation, pads_i=padding + padding, strides_i=stride)
    return onnx_ops.squeeze(g, out, [0]) if unbatched else out
