"""Creation at opset 15: the Bernoulli op samples a tensor of probabilities."""

from __future__ import annotations

from torchscript_onnx import dtypes

from .. import onnx_ops
from ..opset9.creation import typed_sample
from ..opset9.creation import bernoulli as bernoulli_by_scalar
from ..registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(15)


@_onnx_symbolic("aten::bernoulli")
def bernoulli(g, self, p=None, generator=None):
    """bernoulli(Tensor self, *, Generator? generator=None) -> Tensor;
    bernoulli.p(Tensor self, float p, *, Generator? generator=None) -> Tensor"""
    if p is not None and generator is not None:  # bernoulli.p: a probability for every element
        return bernoulli_by_scalar(g, self, p, generator)
    out_dtype = g.output_dtype() or self.dtype
    if not dtypes.is_floating(self.dtype):
        return bernoulli_by_scalar(g, self, p, generator)
    sample = typed_sample(g.op("Bernoulli", self, dtype_i=dtypes.to_onnx(self.dtype)), self.dtype, self.shape)
    return onnx_ops.cast(g, sample, out_dtype)
