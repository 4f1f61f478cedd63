"""Sorting and searching at opset 9: topk, sort, argsort, searchsorted, bucketize, one_hot, unique."""

from __future__ import annotations

import torch

from torchscript_onnx.builder import onnx_ops
from torchscript_onnx.builder.ir import Value

from .. import symbolic_helper as sh
from ..registry import declare_opset_requirements, symbolic
from .indexing import INT64_MAX, _int_const, gather
from .operand_types import as_operand
from .tensor import axis_of, require_rank


# When an op here needs a higher opset than it is registered at: the condition (the reason its
# conversion states with OPSET.require) -> the lowest opset that converts it (docs/supported_ops.md).
OPSET = declare_opset_requirements({
    ("aten::topk", "aten::sort", "aten::argsort"): {"k known only at runtime": 10, "non-float input": 11},
    ("aten::_unique", "aten::_unique2", "aten::unique_dim"): {"ONNX Unique": 11},
    "aten::unique_consecutive": {"return_inverse=True (ONNX CumSum)": 11},
}, unlisted={
    # Where, NonZero, Compress, Scatter and OneHot, and integer Less/Greater, came at opset 9
    "one_hot": 9,
    "searchsorted/bucketize": 9,
    "unique_consecutive": 9,
})


# ---------------------------------------------------------------------------------------------
# topk, sort, argsort


def topk_values(g, self, k, axis: int, largest: bool, sorted_: bool = True):
    """(values, indices) of TopK with k an int or a runtime 0-d/1-element value."""
    if self.dtype == torch.bool:  # sort/argsort of a mask: TopK has no bool; order 0/1 as numbers
        number = torch.int64 if OPSET.met(g, "non-float input") else torch.float32
        values, indices = topk_values(g, onnx_ops.cast(g, self, number), k, axis, largest, sorted_)
        return onnx_ops.cast(g, values, torch.bool), indices
    if not self.dtype.is_floating_point:
        OPSET.require(g, "non-float input", self)
    return onnx_ops.topk(g, self, k, axis, largest, sorted_)


@symbolic("aten::topk")
def topk(g, self, k, dim=None, largest=None, sorted=None):
    """topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True)
    -> (Tensor values, Tensor indices)"""
    rank = require_rank("topk", self)
    axis = axis_of(_int_const(dim, -1), rank)
    count = _int_const(k, sh.UNKNOWN)
    count = count if isinstance(count, int) else k
    return topk_values(g, self, count, axis, bool(_int_const(largest, True)), bool(_int_const(sorted, True)))


def _sort(g, self, dim, descending):
    rank = require_rank("sort", self)
    if rank == 0:
        return self, g.constant(0, torch.int64)
    axis = axis_of(dim, rank)
    count = sh.sizes(self)[axis] if sh.is_static(self, axis) else onnx_ops.size(g, self, axis)
    return topk_values(g, self, count, axis, descending)


def _sort_args(args):
    """sort(self, dim, descending) or sort.stable(self, stable, dim, descending): (dim, descending)."""
    if len(args) == 3:  # stable overload; ONNX TopK keeps equal elements in index order
        args = args[1:]
    dim = _int_const(args[0], -1) if args else -1
    descending = bool(_int_const(args[1], False)) if len(args) > 1 else False
    return dim, descending


@symbolic("aten::sort")
def sort(g, self, *args):
    """sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices);
    sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)"""
    return _sort(g, self, *_sort_args(args))


@symbolic("aten::argsort")
def argsort(g, self, *args):
    """argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor;
    argsort.stable(Tensor self, *, bool stable, int dim=-1, bool descending=False) -> Tensor"""
    return _sort(g, self, *_sort_args(args))[1]


# ---------------------------------------------------------------------------------------------
# searchsorted, bucketize, one_hot


def _count_below(g, boundaries: Value, values: Value, right: bool, int32: bool) -> Value:
    """For each value, how many boundaries lie below it (<= with right=True): the insertion index."""
    OPSET.require(g, "searchsorted/bucketize")
    dtype = sh.promote_types(boundaries, values)
    boundaries, values = as_operand(g, boundaries, dtype), as_operand(g, values, dtype)
    b = boundaries if boundaries.rank == 1 else onnx_ops.unsqueeze(g, boundaries, [boundaries.rank - 1])
    v = onnx_ops.unsqueeze(g, values, [values.rank])
    below = g.op("Not", g.op("Less", v, b)) if right else g.op("Greater", v, b)
    counts = onnx_ops.reduce(g, "ReduceSum", onnx_ops.cast(g, below, torch.int64), [values.rank], False)
    return onnx_ops.cast(g, counts, torch.int32) if int32 else counts


@symbolic("aten::searchsorted")
def searchsorted(g, sorted_sequence, self, out_int32=None, right=None, side=None, sorter=None):
    """searchsorted.Tensor(Tensor sorted_sequence, Tensor self, *, bool out_int32=False, bool right=False,
    str? side=None, Tensor? sorter=None) -> Tensor"""
    if sorter is not None and not sh.is_none(sorter):
        sorted_sequence = gather(g, sorted_sequence, Value("", const=-1), sorter)
    is_right = bool(_int_const(right, False)) or sh.const(side, None) == "right"
    values = as_operand(g, self, sorted_sequence.dtype) if _is_number(self) else self
    return _count_below(g, sorted_sequence, values, is_right, bool(_int_const(out_int32, False)))


def _is_number(v) -> bool:
    """A Python scalar argument (the .Scalar overloads), not a tensor."""
    return not isinstance(v, Value) or (v.is_const and not isinstance(v.const, torch.Tensor) and not v.in_graph)


@symbolic("aten::bucketize")
def bucketize(g, self, boundaries, out_int32=None, right=None):
    """bucketize.Tensor(Tensor self, Tensor boundaries, *, bool out_int32=False, bool right=False) -> Tensor"""
    if _is_number(self):
        self = as_operand(g, self, boundaries.dtype)
    return _count_below(g, boundaries, self, bool(_int_const(right, False)), bool(_int_const(out_int32, False)))


@symbolic("aten::one_hot")
def one_hot(g, self, num_classes=None):
    """one_hot(Tensor self, int num_classes=-1) -> Tensor"""
    OPSET.require(g, "one_hot")
    classes = _int_const(num_classes, -1)
    if classes is sh.UNKNOWN:  # a runtime number of classes, e.g. a size under dynamic axes
        depth = onnx_ops.cast(g, num_classes, torch.int64)
    elif classes == -1:
        top = onnx_ops.reduce(g, "ReduceMax", self, None, False)
        depth = g.op("Add", top, g.constant(1, torch.int64))
    else:
        depth = g.constant(classes, torch.int64)
    on_off = g.constant([0, 1], torch.int64)
    return g.op("OneHot", self, depth, on_off, axis_i=-1)


# ---------------------------------------------------------------------------------------------
# unique


def _unique_all(g, self, axis: int | None):
    OPSET.require(g, "ONNX Unique", self)
    kwargs = {} if axis is None else {"axis_i": axis}
    # onnxruntime's Unique takes float, double, int8 and int64: compute others in a wider type
    wide = {torch.float16: torch.float32, torch.bfloat16: torch.float32}.get(self.dtype, torch.int64)
    source = self if self.dtype in (torch.float32, torch.float64, torch.int8, torch.int64) \
        else onnx_ops.cast(g, self, wide)
    values, _, inverse, counts = g.op("Unique", source, sorted_i=1, outputs=4, **kwargs)
    return onnx_ops.cast(g, values, self.dtype), inverse, counts


@symbolic("aten::_unique2")
def _unique2(g, self, sorted=None, return_inverse=None, return_counts=None):
    """_unique2(Tensor self, bool sorted=True, bool return_inverse=False, bool return_counts=False)
    -> (Tensor, Tensor, Tensor)"""
    values, inverse, counts = _unique_all(g, self, None)
    return values, g.op("Reshape", inverse, onnx_ops.shape_of(g, self)), counts


@symbolic("aten::_unique")
def _unique(g, self, sorted=None, return_inverse=None):
    """_unique(Tensor self, bool sorted=True, bool return_inverse=False) -> (Tensor, Tensor)"""
    values, inverse, _ = _unique_all(g, self, None)
    return values, g.op("Reshape", inverse, onnx_ops.shape_of(g, self))


@symbolic("aten::unique_dim")
def unique_dim(g, self, dim, sorted=None, return_inverse=None, return_counts=None):
    """unique_dim(Tensor self, int dim, bool sorted=True, bool return_inverse=False, bool return_counts=False)
    -> (Tensor, Tensor, Tensor)"""
    axis = axis_of(sh._get_const(dim, "i", "dim"), require_rank("unique_dim", self))
    return _unique_all(g, self, axis)


@symbolic("aten::unique_consecutive")
def unique_consecutive(g, self, return_inverse=None, return_counts=None, dim=None):
    """unique_consecutive(Tensor self, bool return_inverse=False, bool return_counts=False, int? dim=None)
    -> (Tensor, Tensor, Tensor)"""
    OPSET.require(g, "unique_consecutive")
    if dim is not None and not sh.is_none(dim):
        sh.unimplemented("unique_consecutive", "dim")
    flat = g.op("Reshape", self, g.constant([-1], torch.int64))
    head = onnx_ops.slice(g, flat, [0], [1], [INT64_MAX])
    tail = onnx_ops.slice(g, flat, [0], [0], [-1])
    if self.dtype == torch.bool:
        changed = g.op("Xor", head, tail)
    else:
        changed = g.op("Not", g.op("Equal", head, tail))
    starts = g.op("Concat", g.constant([True]), changed, axis_i=0)
    values = g.op("Compress", flat, starts, axis_i=0)
    outputs = [values]
    if bool(_int_const(return_inverse, False)):
        OPSET.require(g, "return_inverse=True (ONNX CumSum)")
        position = g.op("CumSum", onnx_ops.cast(g, starts, torch.int64), g.constant(0, torch.int64))
        inverse = g.op("Sub", position, g.constant(1, torch.int64))
        outputs.append(g.op("Reshape", inverse, onnx_ops.shape_of(g, self)))
    else:
        outputs.append(g.constant(torch.zeros(0, dtype=torch.int64)))
    if bool(_int_const(return_counts, False)):
        first = g.op("Reshape", g.op("NonZero", starts), g.constant([-1], torch.int64))
        ends = g.op("Concat", onnx_ops.slice(g, first, [0], [1], [INT64_MAX]), g.op("Shape", flat), axis_i=0)
        outputs.append(g.op("Sub", ends, first))
    else:
        outputs.append(g.constant(torch.zeros(0, dtype=torch.int64)))
    return tuple(outputs)
