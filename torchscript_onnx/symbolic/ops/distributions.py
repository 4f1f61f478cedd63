"""Samplers beyond ONNX's uniform and normal ones: Gamma by rejection sampling in a Loop, and
Dirichlet from it. Like every random op here, the values differ from torch's generator; their
distribution is torch's."""

from __future__ import annotations

import torch

from torchscript_onnx.builder import dtypes, onnx_ops
from torchscript_onnx.builder.ir import Graph, Value

from ..registry import declare_opset_requirements, symbolic
from .creation import typed_sample

# The conditions under which a conversion here needs more than opset 7 (OPSET.require states
# them) -> the lowest opset that meets each; a registration at 9 serves 7 and 8 where ONNX allows.
OPSET = declare_opset_requirements({}, unlisted={
    "ONNX Where": 9,
})

__all__ = ["_standard_gamma", "_sample_dirichlet"]

# Each round accepts a candidate with probability above 0.95 for every concentration, so the rounds
# stop long before this bound; it only keeps a NaN concentration (never accepted) from looping forever.
_MAX_ROUNDS = 1000


@symbolic("aten::_standard_gamma")
def _standard_gamma(g, self, generator=None):
    """_standard_gamma(Tensor self, Generator? generator=None) -> Tensor"""
    return _gamma(g, self)


@symbolic("aten::_sample_dirichlet")
def _sample_dirichlet(g, self, generator=None):
    """_sample_dirichlet(Tensor self, Generator? generator=None) -> Tensor: Gamma samples of the
    concentrations, normalised along the last dim"""
    gamma = _gamma(g, self)
    return g.op("Div", gamma, onnx_ops.reduce(g, "ReduceSum", gamma, [-1], True))


def _gamma(g, alpha: Value) -> Value:
    """Gamma(alpha, 1) samples of alpha's shape and dtype, by Marsaglia and Tsang's method: for a
    concentration a >= 1, with d = a - 1/3 and c = 1 / sqrt(9 d), draw x ~ N(0, 1) and u ~ U(0, 1)
    until v = (1 + c x)^3 > 0 and log u < x^2 / 2 + d - d v + d log v; the sample is d v. Below 1,
    a sample at a + 1 times u^(1/a). Each round of the Loop draws for every element and keeps the
    first accepted candidate; the Loop ends once all are accepted."""
    OPSET.require(g, "ONNX Where", alpha)
    dtype = alpha.dtype or torch.float32
    one = g.constant(1.0, dtype)
    boosted = g.op("Less", alpha, one)
    a = g.op("Where", boosted, g.op("Add", alpha, one), alpha)
    d = g.op("Sub", a, g.constant(1.0 / 3.0, dtype))
    c = g.op("Reciprocal", g.op("Sqrt", g.op("Mul", d, g.constant(9.0, dtype))))

    body = Graph(parent=g.graph)
    b = g.subgraph_context(body)
    body.add_input(f"{g.scope}/round", torch.int64, ())
    body.add_input(f"{g.scope}/more", torch.bool, ())
    sample = body.add_input(f"{g.scope}/sample", dtype, alpha.shape)
    done = body.add_input(f"{g.scope}/done", torch.bool, alpha.shape)
    x = _draw(b, "RandomNormalLike", alpha, dtype)
    u = _draw(b, "RandomUniformLike", alpha, dtype)
    v = b.op("Pow", b.op("Add", b.constant(1.0, dtype), b.op("Mul", c, x)), b.constant(3.0, dtype))
    bound = b.op("Add", b.op("Mul", b.op("Mul", x, x), b.constant(0.5, dtype)),
                 b.op("Add", b.op("Sub", d, b.op("Mul", d, v)), b.op("Mul", d, b.op("Log", v))))
    # log v of a v <= 0 is NaN, and NaN compares false: such candidates are refused by both tests
    accepted = b.op("And", b.op("Greater", v, b.constant(0.0, dtype)), b.op("Less", b.op("Log", u), bound))
    new = b.op("And", accepted, b.op("Not", done))
    next_sample = b.op("Where", new, b.op("Mul", d, v), sample)
    next_done = b.op("Or", done, accepted)
    pending = onnx_ops.cast(b, b.op("Not", next_done), torch.int32)
    more = onnx_ops.cast(b, onnx_ops.reduce(b, "ReduceMax", pending, None, False), torch.bool)
    body.outputs = [more, next_sample, next_done]

    start = g.op("Mul", alpha, g.constant(0.0, dtype))
    not_done = g.op("Less", alpha, g.op("Sub", alpha, one))  # False everywhere, alpha's shape
    gamma, _ = g.op("Loop", g.constant(_MAX_ROUNDS, torch.int64), g.constant(True, torch.bool), start, not_done,
                    body_g=body, outputs=2)
    gamma.dtype, gamma.shape = dtype, alpha.shape
    u = _draw(g, "RandomUniformLike", alpha, dtype)
    scale = g.op("Where", boosted, g.op("Pow", u, g.op("Reciprocal", alpha)), one)
    return g.op("Mul", gamma, scale)


def _draw(g, kind: str, like: Value, dtype: torch.dtype) -> Value:
    return typed_sample(g.op(kind, like, dtype_i=dtypes.to_onnx(dtype)), dtype, like.shape)
