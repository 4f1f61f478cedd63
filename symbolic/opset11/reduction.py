"""Reductions at opset 11: CumSum arrives."""

from __future__ import annotations

import torch

from .. import onnx_ops
from ..opset9.reduction import axes_of, dtype_arg, sum_dtype
from ..registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(11)


@_onnx_symbolic("aten::cumsum")
def cumsum(g, self, dim, dtype=None):
    """cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor"""
    out_dtype = g.output_dtype() or dtype_arg(dtype) or sum_dtype(self.dtype)
    x = onnx_ops.cast(g, self, out_dtype)
    if self.rank == 0:
        return x
    axis = axes_of(dim, self.rank)[0]
    # CumSum takes float16 from opset 14 and no 8/16-bit integers: compute wider, cast back.
    compute = out_dtype
    if out_dtype in (torch.int8, torch.uint8, torch.int16, torch.bool):
        compute = torch.int64
    elif out_dtype in (torch.float16, torch.bfloat16) and g.opset < 14:
        compute = torch.float32
    out = g.op("CumSum", onnx_ops.cast(g, x, compute), g.constant(axis, torch.int64))
    return onnx_ops.cast(g, out, out_dtype)


__all__ = ["cumsum"]
