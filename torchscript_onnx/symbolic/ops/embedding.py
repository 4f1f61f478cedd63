"""Embeddings at opset 9: embedding (with max_norm), embedding_renorm_, embedding_bag.

embedding_bag is lowered without Loop: a (bags, indices) membership mask built from the offsets
turns sum and mean into one MatMul, and max into a masked ReduceMax over a (bags, indices, dim)
tensor. It works for offsets known only at runtime and at every opset from 9; the max mode's
intermediate grows with bags x indices x dim.

The versions for higher opsets follow, each registered with ``since=N``: opset 11."""

from __future__ import annotations

import torch

from torchscript_onnx.builder import onnx_ops
from torchscript_onnx.builder.ir import Value

from .. import symbolic_helper as sh
from ..registry import declare_opset_requirements, symbolic
from .rnn import int_range

# The conditions under which a conversion here needs more than opset 7 (OPSET.require states
# them) -> the lowest opset that meets each; a registration at 9 serves 7 and 8 where ONNX allows.
OPSET = declare_opset_requirements({}, unlisted={
    "ONNX ops from opset 9": 9,
    "renormalising rows": 9,
})


__all__ = ["embedding", "embedding_renorm", "embedding_bag", "_embedding_bag"]

_MODES = ("sum", "mean", "max")


@symbolic("aten::embedding")
@sh.parse_args("v", "v", "i", "b", "b")
def embedding(g, weight, indices, padding_idx, scale_grad_by_freq, sparse):
    """embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False,
    bool sparse=False) -> Tensor"""
    rows = g.op("Gather", weight, indices, axis_i=0)
    renorm = _renorm_before(g.original_node)
    if renorm is None:
        return rows
    max_norm, norm_type = renorm
    return renormed_rows(g, rows, max_norm, norm_type)


_RENORM = ("aten::embedding_renorm_", "aten::embedding_renorm")
_LOOKUPS = ("aten::embedding", "aten::embedding_bag")


def _renorm_before(node) -> tuple[float, float] | None:
    """(max_norm, norm_type) when this lookup reads its weight through an ``embedding_renorm_`` on
    the same indices that only lookups read (F.embedding(max_norm=...) renormalizes the weight in
    place, then reads it). The rows a lookup reads are exactly the renormalized ones, so the lookup
    renormalizes what it gathers and the renorm itself emits nothing."""
    if node is None or node.kind() not in _LOOKUPS:
        return None
    weight = node.inputsAt(0)
    while weight.node().kind() == "aten::detach":
        weight = weight.node().inputsAt(0)
    renorm = weight.node()
    if renorm.kind() not in _RENORM or renorm.inputsAt(1) is not node.inputsAt(1) or not only_lookups(renorm):
        return None
    max_norm, norm_type = (renorm.inputsAt(k).toIValue() for k in (2, 3))
    return float(max_norm), float(norm_type)


def only_lookups(renorm) -> bool:
    """Whether every reader of the renormalized weight (through detach) is a lookup with its indices."""
    pending, indices = [renorm.output()], renorm.inputsAt(1)
    while pending:
        for use in pending.pop().uses():
            user = use.user
            if user.kind() == "aten::detach":
                pending.append(user.output())
            elif user.kind() not in _LOOKUPS or use.offset != 0 or user.inputsAt(1) is not indices:
                return False
    return all(renorm.inputsAt(k).node().kind() == "prim::Constant" for k in (2, 3))


def _row_norms(g, rows: Value, norm_type: float) -> Value:
    """The ``norm_type``-norm of each row over the last axis, keeping that axis."""
    axis = [rows.rank - 1]
    if norm_type == 2.0:
        return onnx_ops.reduce(g, "ReduceL2", rows, axis, True)
    if norm_type == 1.0:
        return onnx_ops.reduce(g, "ReduceL1", rows, axis, True)
    if norm_type == float("inf"):
        return onnx_ops.reduce(g, "ReduceMax", g.op("Abs", rows), axis, True)
    p = g.constant(norm_type, rows.dtype)
    total = onnx_ops.reduce(g, "ReduceSum", g.op("Pow", g.op("Abs", rows), p), axis, True)
    return g.op("Pow", total, g.constant(1.0 / norm_type, rows.dtype))


def renormed_rows(g, rows: Value, max_norm: float, norm_type: float) -> Value:
    # torch (Embedding.cpp): a row whose norm exceeds max_norm is scaled by max_norm / (norm + 1e-7).
    norms = _row_norms(g, rows, norm_type)
    limit = g.constant(max_norm, rows.dtype)
    scale = g.op("Div", limit, g.op("Add", norms, g.constant(1e-7, rows.dtype)))
    over = g.op("Greater", norms, limit)
    if onnx_ops.has_op(g, "Where"):
        scale = g.op("Where", over, scale, g.constant(1.0, rows.dtype))
    else:  # no Where before opset 9: 1 + over * (scale - 1)
        step = g.op("Mul", onnx_ops.cast(g, over, rows.dtype), g.op("Sub", scale, g.constant(1.0, rows.dtype)))
        scale = g.op("Add", step, g.constant(1.0, rows.dtype))
    return g.op("Mul", rows, scale)


@symbolic("aten::embedding_renorm")
@sh.parse_args("v", "v", "f", "f")
def embedding_renorm(g, self, indices, max_norm, norm_type):
    """embedding_renorm_(Tensor(a!) self, Tensor indices, float max_norm, float norm_type) -> Tensor(a!)"""
    # The whole weight with the rows ``indices`` reads renormalized. When only lookups with the
    # same indices read it (F.embedding), they renormalize the rows they gather instead.
    node = g.original_node
    if node is not None and only_lookups(node):
        return self
    OPSET.require(g, "renormalising rows")
    renormed = renormed_rows(g, self, max_norm, norm_type)
    vocabulary = int_range(g, onnx_ops.size(g, self, 0))
    flat = g.op("Reshape", onnx_ops.cast(g, indices, torch.int64), g.constant([1, -1], torch.int64))
    hit = g.op("Equal", onnx_ops.unsqueeze(g, vocabulary, [1]), flat)
    hit = onnx_ops.reduce(g, "ReduceMax", onnx_ops.cast(g, hit, torch.int32), [1], True)
    return g.op("Where", onnx_ops.cast(g, hit, torch.bool), renormed, self)


@symbolic("aten::embedding_bag")
def embedding_bag(g, weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights=None,
                  include_last_offset=None, padding_idx=None):
    """embedding_bag.padding_idx(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq,
    int mode, bool sparse, Tensor? per_sample_weights, bool include_last_offset, int? padding_idx)
    -> (Tensor, Tensor, Tensor, Tensor)"""
    OPSET.require(g, "ONNX ops from opset 9")
    mode = _MODES[sh._get_const(mode, "i", "mode")]
    include_last = not sh.is_none(include_last_offset) and sh._get_const(include_last_offset, "b",
                                                                         "include_last_offset")
    padding = None if sh.is_none(padding_idx) else sh._get_const(padding_idx, "i", "padding_idx")
    if indices.rank != 1:
        sh.value_error("embedding_bag: indices must be 1-D here (F.embedding_bag flattens 2-D input)", indices)
    dtype = weight.dtype
    indices = onnx_ops.cast(g, indices, torch.int64)
    offsets = onnx_ops.cast(g, offsets, torch.int64)
    count = onnx_ops.unsqueeze(g, onnx_ops.size(g, indices, 0), [0])
    starts = offsets
    if include_last:
        starts = onnx_ops.slice(g, offsets, [0], [0], [-1])
        ends = onnx_ops.slice(g, offsets, [0], [1], [onnx_ops.INT64_MAX])
    else:
        ends = g.op("Concat", onnx_ops.slice(g, offsets, [0], [1], [onnx_ops.INT64_MAX]), count, axis_i=0)
    # member[b, i]: index i lies in bag b, i.e. starts[b] <= i < ends[b].
    position = onnx_ops.unsqueeze(g, int_range(g, count), [0])
    member = g.op("And", g.op("Not", g.op("Less", position, onnx_ops.unsqueeze(g, starts, [1]))),
                  g.op("Less", position, onnx_ops.unsqueeze(g, ends, [1])))
    if padding is not None and padding >= 0:  # padding entries are left out of every bag
        member = g.op("And", member, onnx_ops.unsqueeze(g, g.op("Not", g.op("Equal", indices, g.constant(
            padding, torch.int64))), [0]))
    rows = g.op("Gather", weight, indices, axis_i=0)
    renorm = _renorm_before(g.original_node)
    if renorm is not None:
        rows = renormed_rows(g, rows, *renorm)
    weights = onnx_ops.cast(g, member, dtype)
    sizes = onnx_ops.reduce(g, "ReduceSum", weights, [1], True)
    if mode == "max":
        if not sh.is_none(per_sample_weights):
            sh.value_error("embedding_bag: per_sample_weights only work with mode='sum'")
        lowest = g.constant(torch.finfo(dtype).min, dtype)
        masked = g.op("Where", onnx_ops.unsqueeze(g, member, [2]), onnx_ops.unsqueeze(g, rows, [0]), lowest)
        out = onnx_ops.reduce(g, "ReduceMax", masked, [1], False)
        # torch gives zeros for empty bags
        out = g.op("Where", g.op("Greater", sizes, g.constant(0.0, dtype)), out, g.constant(0.0, dtype))
        return out, None, None, None
    if not sh.is_none(per_sample_weights):
        if mode != "sum":
            sh.value_error("embedding_bag: per_sample_weights only work with mode='sum'")
        weights = g.op("Mul", weights, onnx_ops.unsqueeze(g, onnx_ops.cast(g, per_sample_weights, dtype), [0]))
    out = g.op("MatMul", weights, rows)
    if mode == "mean":
        out = g.op("Div", out, g.op("Max", sizes, g.constant(1.0, dtype)))
    return out, None, None, None


@symbolic("aten::_embedding_bag")
def _embedding_bag(g, weight, indices, offsets, scale_grad_by_freq=None, mode=None, sparse=None,
                   per_sample_weights=None, include_last_offset=None, padding_idx=None):
    """_embedding_bag(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq=False, int mode=0,
    bool sparse=False, Tensor? per_sample_weights=None, bool include_last_offset=False, int padding_idx=-1)
    -> (Tensor, Tensor, Tensor, Tensor)"""
    return embedding_bag(g, weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
                         include_last_offset, padding_idx)


# ---------------------------------------------------------------------------------------------
# Opset 11. Embeddings at opset 11: embedding_renorm_ writes the renormalized rows back with ScatterND over
# the unique indices, instead of opset 9's (vocabulary x indices) membership mask.


__all__ = ["embedding_renorm"]


@symbolic("aten::embedding_renorm", since=11)
@sh.parse_args("v", "v", "f", "f")
def embedding_renorm_11(g, self, indices, max_norm, norm_type):
    """embedding_renorm_(Tensor(a!) self, Tensor indices, float max_norm, float norm_type) -> Tensor(a!)"""
    if g.original_node is not None and only_lookups(g.original_node):
        return self  # the lookups renormalize the rows they gather (see renormed_rows)
    flat = g.op("Reshape", onnx_ops.cast(g, indices, torch.int64), g.constant([-1], torch.int64))
    unique = g.op("Unique", flat)
    rows = renormed_rows(g, g.op("Gather", self, unique, axis_i=0), max_norm, norm_type)
    return g.op("ScatterND", self, onnx_ops.unsqueeze(g, unique, [1]), rows)
