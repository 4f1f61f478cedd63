"""Linear algebra at opset 12: Einsum arrives."""

from __future__ import annotations

import torch

from torchscript_onnx import dtypes

from .. import onnx_ops
from .. import symbolic_helper as sh
from ..registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(12)


@_onnx_symbolic("aten::einsum")
def einsum(g, equation, tensors, path=None):
    """einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor"""
    from ..opset9.math import as_operand

    text = sh._get_const(equation, "s", "equation").replace(" ", "")
    operands = sh.unpack_list(tensors)
    dtype = g.output_dtype() or sh.promote_types(*operands)
    if dtype is not None and not (dtypes.is_floating(dtype) or dtype in (torch.int32, torch.int64)):
        # onnxruntime's Einsum computes float, double, int32 and int64: other types go through int64
        values = [onnx_ops.cast(g, as_operand(g, v, dtype), torch.int64) for v in operands]
        return onnx_ops.cast(g, g.op("Einsum", *values, equation_s=text), dtype)
    return g.op("Einsum", *[as_operand(g, v, dtype) for v in operands], equation_s=text)
