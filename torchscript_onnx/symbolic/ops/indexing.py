"""Indexing at opset 9: select/slice, advanced indexing and its writes, gather/scatter, masks,
sorting (topk, sort, searchsorted), nonzero and unique.

Advanced indexing (``x[idx]``, ``x[mask]``, ``x[:, i, j] = v``) is lowered the way torch defines
it: bool masks become one long index per dim they cover (NonZero), the indexed dims move to the
front and merge, and one Gather (reads) or Scatter (writes) on the merged dim does the work, so
every mix of tensors, masks and slices works from opset 9 with static or dynamic sizes."""

from __future__ import annotations

import torch

from torchscript_onnx.builder import onnx_ops
from torchscript_onnx.builder.ir import Value

from .. import symbolic_helper as sh
from ..registry import declare_opset_requirements, symbolic
from .operand_types import as_operand
from .tensor import (
    axis_of, concat_shape, diagonal_layout, dim_value, require_rank, shape_parts, static_dim, where_all_dtypes,
)
import builtins


# When an op here needs a higher opset than it is registered at: the condition (the reason its
# conversion states with OPSET.require) -> the lowest opset that converts it (docs/supported_ops.md).
OPSET = declare_opset_requirements({
    ("aten::scatter", "aten::scatter_add", "aten::scatter_reduce", "aten::index_add", "aten::index_put"): {
        "an index sized at runtime (Pad with a pads input)": 11},
    "aten::scatter_add": {"a boolean input (ScatterElements reduction)": 16},
    "aten::scatter_reduce": {"reduce='mean' (ScatterElements reduction)": 16},
    "aten::masked_scatter": {"ONNX ScatterND": 11},
    "aten::gather": {"an index shaped unlike the input outside dim, or a bool input (ONNX GatherElements)": 11},
    "aten::take_along_dim": {"ONNX GatherElements": 11},
    "aten::__getitem__": {"list bounds known only at runtime (Slice with inputs)": 10},
    # onnx_ops.slice, the builder helper every slicing op uses
    ("aten::slice", "aten::narrow"): {"Slice with runtime bounds or steps": 10},
}, unlisted={
    "gather": 9,
    "index_put": 9,
    "indexing with a boolean mask": 9,
    "indexing with indices known only at runtime": 9,
    "masked_fill": 9,
    "masked_select": 9,
    "nonzero": 9,
    "scatter_add": 9,
    "scatter_reduce": 9,
    "copying a broadcast value (ONNX Expand)": 8,
})
INT64_MAX = onnx_ops.INT64_MAX


def _int_const(v, default=None):
    raw = sh.const(v, sh.UNKNOWN) if not sh.is_none(v) else None
    if raw is None:
        return default
    if isinstance(raw, torch.Tensor) and raw.numel() == 1:
        return int(raw.item())
    return raw


def _as_index(g, index: Value) -> Value:
    if not isinstance(index, Value) or (index.is_const and not index.in_graph):
        raw = sh.const(index)
        return g.constant(raw if isinstance(raw, torch.Tensor) else torch.tensor(raw), torch.int64)
    return onnx_ops.cast(g, index, torch.int64)


def normalize_index(g, index: Value, self: Value, dim: int) -> Value:
    """Indices with negatives wrapped around (Gather before opset 11 and merged indices need it)."""
    raw = sh.const(index)
    if isinstance(raw, torch.Tensor) and sh.is_static(self, dim):
        raw = raw.to(torch.int64)
        return g.constant(torch.where(raw < 0, raw + sh.sizes(self)[dim], raw), torch.int64)
    index = _as_index(g, index)
    OPSET.require(g, "indexing with indices known only at runtime")
    size = onnx_ops.size(g, self, dim)
    return g.op("Where", g.op("Less", index, g.constant(0, torch.int64)), g.op("Add", index, size), index)


# ---------------------------------------------------------------------------------------------
# select / slice


@symbolic("aten::select")
def select(g, self, dim, index):
    """select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)"""
    dim = axis_of(sh._get_const(dim, "i", "dim"), require_rank("select", self))
    idx = _int_const(index, sh.UNKNOWN)
    if isinstance(idx, int):
        if idx < 0 and sh.is_static(self, dim):
            idx += sh.sizes(self)[dim]
        if idx >= 0 or onnx_ops.gathers_negative_indices(g):
            return g.op("Gather", self, g.constant(idx, torch.int64), axis_i=dim)
        end = idx + 1 if idx != -1 else INT64_MAX
        return onnx_ops.squeeze(g, onnx_ops.slice(g, self, [dim], [idx], [end]), [dim])
    index = _as_index(g, index)
    if not onnx_ops.gathers_negative_indices(g):
        index = normalize_index(g, index, self, dim)
    if index.rank == 1:
        index = onnx_ops.squeeze(g, index, [0])
    return g.op("Gather", self, index, axis_i=dim)


@symbolic("aten::slice")
def slice(g, self, dim=None, start=None, end=None, step=None):
    """slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a);
    slice.t(t[] l, int? start=None, int? end=None, int step=1) -> t[]"""
    if sh.is_packed_list(self) or (self.is_const and isinstance(self.const, (list, tuple))):
        return _slice_list(g, self, dim, start, end)  # scripted code slicing a list: dim is the start
    rank = require_rank("slice", self)
    dim = axis_of(_int_const(dim, 0), rank)
    step = _int_const(step, 1)
    begin = _int_const(start, 0)
    stop = _int_const(end, INT64_MAX)
    if not isinstance(step, int):
        sh.value_error("slice: the step must be known at export time", step)
    if isinstance(begin, int) and isinstance(stop, int):
        if begin == 0 and stop >= INT64_MAX and step == 1:
            return self
        if step != 1 and onnx_ops.has_attribute(g, "Slice", "starts"):  # Slice-1: bounds as attributes, no steps
            size = static_dim("slice with a step at opset 9 (Slice has steps from opset 10)", self, dim)
            positions = list(range(size))[begin:stop:step]
            return g.op("Gather", self, g.constant(positions, torch.int64), axis_i=dim)
        return onnx_ops.slice(g, self, [dim], [begin], [stop], [step])
    bounds = [b if isinstance(b, int) else _as_index(g, v) for b, v in ((begin, start), (stop, end))]
    return onnx_ops.slice(g, self, [dim], [bounds[0]], [bounds[1]], [step])


def _slice_list(g, items, start, end, step):
    bounds = [_int_const(v, None) if v is not None else None for v in (start, end, step)]
    if any(b is sh.UNKNOWN for b in bounds):
        return _slice_list_at_runtime(g, items, start, end, step)
    if items.is_const:
        return Value("", const=list(items.const)[builtins.slice(*bounds)])
    return Value("", elements=sh.unpack_list(items)[builtins.slice(*bounds)])


def _slice_list_at_runtime(g, items, start, end, step):
    """A list of numbers sliced by bounds known only at runtime (``x.shape[1:x.size(2)]``): its
    items stacked and sliced, a 1-D tensor, which symbolics take for int[]/float[] arguments (as
    legacy does; an empty ONNX sequence could not be stacked back)."""
    step_value = _int_const(step, 1) if step is not None else 1
    if not isinstance(step_value, int):
        sh.value_error("slicing a list needs a step known at export time", step)
    OPSET.require(g, "list bounds known only at runtime (Slice with inputs)")
    elements = sh.unpack_list(items) if not items.is_const else [Value("", const=v) for v in items.const]
    if any(not isinstance(sh.const(e, 0), (bool, int, float)) and (e.rank or 0) > 0 for e in elements):
        sh.value_error("slicing a list of tensors needs bounds known at export time")
    dtype = next((e.dtype for e in elements if not e.is_const and e.dtype is not None), None) or (
        torch.float64 if any(isinstance(sh.const(e, 0), float) for e in elements) else torch.int64)
    parts = [onnx_ops.unsqueeze(g, onnx_ops.cast(g, g.materialize(e), dtype), [0]) if not e.is_const
             else g.constant([sh.const(e)], dtype) for e in elements]
    stacked = g.op("Concat", *parts, axis_i=0) if parts else g.constant(torch.zeros(0, dtype=dtype))
    last = onnx_ops.INT64_MAX if step_value > 0 else -onnx_ops.INT64_MAX
    bounds = []
    for bound, default in ((start, 0 if step_value > 0 else -1), (end, last)):
        raw = _int_const(bound, None) if bound is not None else None
        if raw is None:
            bounds.append(default)
        elif isinstance(raw, int):
            bounds.append(raw)
        else:
            bounds.append(onnx_ops.unsqueeze(g, _as_index(g, bound), [0]) if bound.rank == 0 else _as_index(g, bound))
    out = onnx_ops.slice(g, stacked, [0], [bounds[0]], [bounds[1]], [step_value])
    out.dtype, out.shape = dtype, (None,)
    return out


# ---------------------------------------------------------------------------------------------
# Advanced indexing: aten::index and aten::index_put


def _is_mask(v: Value) -> bool:
    return v.dtype in (torch.bool, torch.uint8)


def _index_items(indices) -> list:
    items = [None if sh.is_none(v) else v for v in sh.unpack_list(indices)]
    while items and items[-1] is None:
        items.pop()
    return items


def _expand_masks(g, items: list) -> list:
    """One index per indexed dim: a mask over k dims becomes the k rows of NonZero(mask)."""
    out = []
    for v in items:
        if v is not None and _is_mask(v):
            OPSET.require(g, "indexing with a boolean mask")
        if v is None or not _is_mask(v):
            out.append(v)
            continue
        mask = onnx_ops.cast(g, v, torch.bool)
        rows = g.op("NonZero", mask)
        for k in range(require_rank("index", v)):
            out.append(g.op("Gather", rows, g.constant(k, torch.int64), axis_i=0))
    return out


class _Merged:
    """The indexed dims of ``self`` moved to the front and merged into one: [N, rest...]."""

    def __init__(self, g, self_: Value, items: list):
        rank = require_rank("index", self_)
        if len(items) > rank:
            sh.value_error("index: too many indices for the tensor", self_)
        self.positions = [k for k, v in enumerate(items) if v is not None]
        self.rest = [k for k in range(rank) if k not in self.positions]
        self.perm = self.positions + self.rest
        self.moved = self_ if self.perm == list(range(rank)) else g.op("Transpose", self_, perm_i=self.perm)
        self.adjacent = self.positions == list(range(self.positions[0], self.positions[-1] + 1))
        # linear index into the merged dim: sum of index_k * stride_k
        linear, stride = None, 1
        for pos in reversed(self.positions):
            index = normalize_index(g, items[pos], self_, pos)
            term = index if stride == 1 else g.op("Mul", index, _as_int64(g, stride))
            linear = term if linear is None else g.op("Add", term, linear)
            size = dim_value(g, self_, pos)
            stride = stride * size if isinstance(stride, int) and isinstance(size, int) else \
                g.op("Mul", _as_int64(g, stride), _as_int64(g, size))
        self.linear = linear
        rest_dims = [sh.sizes(self_)[k] for k in self.rest]
        if all(isinstance(d, int) for d in rest_dims):
            rest_shape = rest_dims
        else:
            rest_shape = shape_parts(g, self.moved, len(self.positions))
        self.rest_shape = rest_shape
        self.flat = g.op("Reshape", self.moved, concat_shape(g, [[-1], rest_shape]))
        self.batch_rank = linear.rank

    def result_perm(self) -> list[int] | None:
        """From [B..., rest...] to torch's layout (B at the first indexed dim when adjacent)."""
        p, b, r = self.positions[0], self.batch_rank, len(self.rest)
        if not self.adjacent or p == 0:
            return None
        return [b + j for j in range(p)] + list(range(b)) + [b + j for j in range(p, r)]


def _as_int64(g, v):
    return g.constant(v, torch.int64) if isinstance(v, int) else onnx_ops.squeeze(g, v, [0]) if v.rank == 1 else v


def _mask_select(g, self, mask, p: int) -> Value:
    """``self[..., mask]`` with one mask over dims p..p+k-1: Compress on those dims merged."""
    OPSET.require(g, "indexing with a boolean mask")
    k = require_rank("index", mask)
    mask = onnx_ops.cast(g, mask, torch.bool)
    if k > 1 or mask.rank != 1:
        dims = sh.sizes(self)
        before = [d if isinstance(d, int) else 0 for d in dims[:p]]
        after = dims[p + k:]
        target = before + [-1] + after if all(isinstance(d, int) for d in after) else \
            concat_shape(g, [before, [-1], shape_parts(g, self, p + k)])
        self = g.op("Reshape", self, target if isinstance(target, Value) else g.constant(target, torch.int64))
        mask = g.op("Reshape", mask, g.constant([-1], torch.int64))
    return g.op("Compress", self, mask, axis_i=p)


@symbolic("aten::index")
def index(g, self, indices):
    """index.Tensor(Tensor self, Tensor?[] indices) -> Tensor"""
    items = _index_items(indices)
    present = [k for k, v in enumerate(items) if v is not None]
    if not present:
        return self
    if len(present) == 1:
        p, v = present[0], items[present[0]]
        if _is_mask(v):
            return _mask_select(g, self, v, p)
        idx = _as_index(g, v) if onnx_ops.gathers_negative_indices(g) else normalize_index(g, v, self, p)
        return g.op("Gather", self, idx, axis_i=p)
    merged = _Merged(g, self, _expand_masks(g, items))
    out = g.op("Gather", merged.flat, merged.linear, axis_i=0)
    perm = merged.result_perm()
    return out if perm is None else g.op("Transpose", out, perm_i=perm)


@symbolic("aten::index_put")
def index_put(g, self, indices, values, accumulate=None):
    """index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor"""
    OPSET.require(g, "index_put")
    items = _index_items(indices)
    acc = bool(_int_const(accumulate, False)) if accumulate is not None else False
    values = as_operand(g, values, self.dtype)
    if not any(v is not None for v in items):
        return g.op("Add", self, values) if acc else g.op("Expand", values, onnx_ops.shape_of(g, self))
    present = [k for k, v in enumerate(items) if v is not None]
    single_mask = len(present) == 1 and _is_mask(items[present[0]])
    if single_mask and sh.static_sizes(values) is not None and all(d == 1 for d in sh.static_sizes(values)):
        # x[mask] = scalar: a Where, no scatter needed
        p, mask = present[0], onnx_ops.cast(g, items[present[0]], torch.bool)
        trailing = self.rank - p - mask.rank
        if trailing:
            mask = onnx_ops.unsqueeze(g, mask, list(range(mask.rank, mask.rank + trailing)))
        scalar = g.op("Reshape", values, g.constant([], torch.int64))
        new = g.op("Add", self, scalar) if acc else scalar
        return where_all_dtypes(g, mask, new, self)
    merged = _Merged(g, self, _expand_masks(g, items))
    return _scatter_merged(g, self, merged, values, acc)


def _scatter_merged(g, self, merged: _Merged, values, acc: bool) -> Value:
    batch_rank, rest_count = merged.batch_rank, len(merged.rest)
    # values broadcast to the result of the matching read, in the [B..., rest...] layout
    full = batch_rank + rest_count
    if values.rank < full:
        values = onnx_ops.unsqueeze(g, values, list(range(full - values.rank)))
    perm = merged.result_perm()
    if perm is not None:
        inverse = sorted(range(full), key=lambda k: perm[k])
        values = g.op("Transpose", values, perm_i=inverse)
    target = concat_shape(g, [g.op("Shape", merged.linear) if sh.static_sizes(merged.linear) is None
                              else list(sh.static_sizes(merged.linear)), merged.rest_shape])
    values = g.op("Expand", values, target)
    # [N, W] and [L, W]: the merged dim against everything else, W = product of the other dims
    flat = g.op("Flatten", merged.moved, axis_i=len(merged.positions))
    updates = g.op("Flatten", values, axis_i=batch_rank)
    positions = g.op("Expand", g.op("Reshape", merged.linear, g.constant([-1, 1], torch.int64)),
                     g.op("Shape", updates))
    if acc:
        written = _scatter_add(g, flat, 0, positions, updates)
    else:
        written = onnx_ops.scatter_elements(g, flat, 0, positions, updates)
    moved = g.op("Reshape", written, onnx_ops.shape_of(g, merged.moved))
    if merged.perm == list(range(len(merged.perm))):
        return moved
    inverse = sorted(range(len(merged.perm)), key=lambda k: merged.perm[k])
    return g.op("Transpose", moved, perm_i=inverse)


# ---------------------------------------------------------------------------------------------
# index_select, index_fill, index_copy, index_add, take


@symbolic("aten::index_select")
def index_select(g, self, dim, index):
    """index_select(Tensor self, int dim, Tensor index) -> Tensor"""
    dim = axis_of(sh._get_const(dim, "i", "dim"), require_rank("index_select", self))
    index = _as_index(g, index)
    if index.rank == 0:
        index = onnx_ops.unsqueeze(g, index, [0])
    return g.op("Gather", self, index, axis_i=dim)


def _along_dim(g, self, dim: int, index: Value, shape_like: Value | None) -> Value:
    """``index`` (1-D) laid along ``dim`` and broadcast to ``shape_like`` (or self with that dim cut)."""
    rank = self.rank
    index = normalize_index(g, index, self, dim)
    if index.rank == 0:
        index = onnx_ops.unsqueeze(g, index, [0])
    shaped = g.op("Reshape", index, g.constant([1] * dim + [-1] + [1] * (rank - dim - 1), torch.int64))
    if shape_like is not None:
        target = onnx_ops.shape_of(g, shape_like)
    else:
        target = concat_shape(g, [shape_parts(g, self, 0, dim), g.op("Shape", index) if sh.static_sizes(index)
                                  is None else list(sh.static_sizes(index)), shape_parts(g, self, dim + 1)])
    return g.op("Expand", shaped, target)


@symbolic("aten::index_fill")
def index_fill(g, self, dim, index, value):
    """index_fill.int_Scalar(Tensor self, int dim, Tensor index, Scalar value) -> Tensor"""
    dim = axis_of(sh._get_const(dim, "i", "dim"), require_rank("index_fill", self))
    positions = _along_dim(g, self, dim, index, None)
    fill = g.op("Expand", as_operand(g, value, self.dtype), g.op("Shape", positions))
    return onnx_ops.scatter_elements(g, self, dim, positions, fill)


@symbolic("aten::index_copy")
def index_copy(g, self, dim, index, source):
    """index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor"""
    dim = axis_of(sh._get_const(dim, "i", "dim"), require_rank("index_copy", self))
    source = as_operand(g, source, self.dtype)
    return onnx_ops.scatter_elements(g, self, dim, _along_dim(g, self, dim, index, source), source)


@symbolic("aten::index_add")
def index_add(g, self, dim, index, source, alpha=None):
    """index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor"""
    dim = axis_of(sh._get_const(dim, "i", "dim"), require_rank("index_add", self))
    source = as_operand(g, source, self.dtype)
    factor = sh.const(alpha, 1) if alpha is not None and not sh.is_none(alpha) else 1
    if factor != 1:
        source = g.op("Mul", source, g.constant(factor, self.dtype))
    # torch requires source to match self on every dim but ``dim``: the sums cover self
    return _scatter_add(g, self, dim, _along_dim(g, self, dim, index, source), source, covers=True)


def _scatter_add(g, self, dim: int, positions: Value, updates: Value, covers: bool = False) -> Value:
    """ScatterElements(reduction="add"); before opset 16 a one-hot sum, exact for repeated positions
    (scattering into zeros and adding, as the legacy exporter does, drops all but one of them).
    ``covers``: the positions have self's sizes on every dim but ``dim``."""
    if onnx_ops.has_scatter_reduction(g, "add"):
        return onnx_ops.scatter_elements(g, self, dim, positions, updates, "add")
    OPSET.require(g, "scatter_add")
    if self.dtype == torch.bool:
        OPSET.require(g, "a boolean input (ScatterElements reduction)", self)
    # the updates aimed at each slot, summed over the position axis
    hits = g.op("Where", _hits(g, self, dim, positions), onnx_ops.unsqueeze(g, updates, [dim + 1]),
                g.constant(0, self.dtype))
    added = onnx_ops.reduce(g, "ReduceSum", hits, [dim], False)
    return g.op("Add", self, _pad_corner(g, self, dim, added, positions, 0, covers))


def _depth(g, self: Value, dim: int) -> Value:
    return g.constant([static_dim("scatter", self, dim)], torch.int64) if sh.is_static(self, dim) \
        else onnx_ops.unsqueeze(g, onnx_ops.size(g, self, dim), [0])


def _pad_corner(g, self: Value, dim: int, reduced: Value, positions: Value, fill, covers: bool) -> Value:
    """``reduced`` (self's size at ``dim``, the positions' sizes elsewhere) padded with ``fill`` to
    self's shape: positions may cover only a corner of self. ``covers``: they cover all of it."""
    mine, theirs = sh.sizes(self), sh.sizes(positions)
    short = [] if covers else [k for k in range(len(mine)) if k != dim and mine[k] != theirs[k]]
    if short and all(isinstance(mine[k], int) and isinstance(theirs[k], int) for k in short):
        pads = [0] * len(mine) + [mine[k] - theirs[k] if k in short else 0 for k in range(len(mine))]
        return onnx_ops.pad(g, reduced, pads, "constant", fill)
    if not short:
        return reduced
    OPSET.require(g, "an index sized at runtime (Pad with a pads input)", self)
    # the corner's size at runtime: pad the ends by what self has more (0 where they match)
    ends = g.op("Sub", onnx_ops.shape_of(g, self), onnx_ops.shape_of(g, reduced))
    pads = g.op("Concat", g.constant([0] * len(mine), torch.int64), ends, axis_i=0)
    return g.op("Pad", reduced, pads, g.constant(fill, reduced.dtype), mode_s="constant")


# mode -> (ONNX reduce over the hits, value where nothing hits); the combining op is in _scatter_one_hot
_ONE_HOT_REDUCE = {"sum": ("ReduceSum", 0), "prod": ("ReduceProd", 1), "amax": ("ReduceMax", float("-inf")),
                   "amin": ("ReduceMin", float("inf"))}


def _hits(g, self: Value, dim: int, positions: Value) -> Value:
    """hits[..., j, ...] (j at dim + 1) = positions == j, for every slot j of self at ``dim``
    (Equal against the slot numbers: onnxruntime's OneHot refuses a depth of 0)."""
    rank = self.rank
    layout = [1] * (dim + 1) + [-1] + [1] * (rank - dim - 1)
    if sh.is_static(self, dim):
        slots = g.constant(torch.arange(sh.sizes(self)[dim]).reshape(layout))
    elif onnx_ops.has_op(g, "Range"):
        count = onnx_ops.size(g, self, dim)
        slots = g.op("Reshape", g.op("Range", g.constant(0, torch.int64), count, g.constant(1, torch.int64)),
                     g.constant(layout, torch.int64))
    else:
        hot = g.op("OneHot", positions, _depth(g, self, dim), g.constant([0, 1], torch.int64), axis_i=dim + 1)
        return onnx_ops.cast(g, hot, torch.bool)
    return g.op("Equal", onnx_ops.unsqueeze(g, positions, [dim + 1]), slots)


def _scatter_one_hot(g, base: Value, dim: int, positions: Value, updates: Value, mode: str) -> Value:
    """scatter_reduce below ScatterElements' reduction (16; max/min 18): every slot reduces the
    updates aimed at it (a one-hot mask over the slots, the others set to the reduction's
    identity), then combines with ``base``; exact, however often a position repeats."""
    OPSET.require(g, "scatter_reduce")
    op_type, identity = _ONE_HOT_REDUCE[mode]
    if not base.dtype.is_floating_point and identity in (float("inf"), float("-inf")):
        info = torch.iinfo(base.dtype)
        identity = info.max if identity > 0 else info.min
    hits = g.op("Where", _hits(g, base, dim, positions), onnx_ops.unsqueeze(g, updates, [dim + 1]),
                g.constant(identity, base.dtype))
    reduced = _pad_corner(g, base, dim, onnx_ops.reduce(g, op_type, hits, [dim], False), positions, identity, False)
    if mode == "sum":
        return g.op("Add", base, reduced)
    if mode == "prod":
        return g.op("Mul", base, reduced)
    # Max/Min take integers only from opset 12: compare and pick instead
    better = g.op("Greater" if mode == "amax" else "Less", reduced, base)
    return g.op("Where", better, reduced, base)


@symbolic("aten::take")
def take(g, self, index):
    """take(Tensor self, Tensor index) -> Tensor"""
    flat = g.op("Reshape", self, g.constant([-1], torch.int64))
    return g.op("Gather", flat, normalize_index(g, index, flat, 0), axis_i=0)


# ---------------------------------------------------------------------------------------------
# Masks


@symbolic("aten::masked_fill")
def masked_fill(g, self, mask, value):
    """masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor"""
    OPSET.require(g, "masked_fill")
    fill = as_operand(g, value, self.dtype)
    if fill.rank:
        fill = g.op("Reshape", fill, g.constant([], torch.int64))
    return where_all_dtypes(g, onnx_ops.cast(g, mask, torch.bool), fill, self)


def _broadcast_pair(g, a: Value, b: Value):
    if sh.static_sizes(a) is not None and sh.static_sizes(a) == sh.static_sizes(b):
        return a, b
    shape = g.op("Shape", g.op("Add", g.op("Cast", a, to_i=7), g.op("Cast", b, to_i=7)))
    return g.op("Expand", a, shape), g.op("Expand", b, shape)


@symbolic("aten::masked_select")
def masked_select(g, self, mask):
    """masked_select(Tensor self, Tensor mask) -> Tensor"""
    OPSET.require(g, "masked_select")
    values, mask = _broadcast_pair(g, self, onnx_ops.cast(g, mask, torch.bool))
    flat = g.op("Reshape", values, g.constant([-1], torch.int64))
    return g.op("Compress", flat, g.op("Reshape", mask, g.constant([-1], torch.int64)), axis_i=0)


@symbolic("aten::masked_scatter")
def masked_scatter(g, self, mask, source):
    """masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor"""
    OPSET.require(g, "ONNX ScatterND")
    mask = onnx_ops.cast(g, mask, torch.bool)
    if sh.static_sizes(mask) != sh.static_sizes(self) or sh.static_sizes(self) is None:
        mask = g.op("Expand", mask, onnx_ops.shape_of(g, self))
    positions = g.op("Transpose", g.op("NonZero", mask), perm_i=[1, 0])
    count = onnx_ops.slice(g, g.op("Shape", positions), [0], [0], [1])
    flat = g.op("Reshape", as_operand(g, source, self.dtype), g.constant([-1], torch.int64))
    updates = onnx_ops.slice(g, flat, [0], [0], [count])
    return onnx_ops.scatter_nd(g, self, positions, updates)


# ---------------------------------------------------------------------------------------------
# gather / scatter


@symbolic("aten::gather")
def gather(g, self, dim, index, sparse_grad=None):
    """gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor"""
    dim = axis_of(sh._get_const(dim, "i", "dim"), require_rank("gather", self))
    if onnx_ops.has_op(g, "GatherElements"):
        return g.op("GatherElements", self, _as_index(g, index), axis_i=dim)
    return _gather_one_hot(g, self, dim, index)


def _gather_one_hot(g, self, dim: int, index) -> Value:
    """GatherElements before opset 11: pick along ``dim`` with a one-hot mask and a sum."""
    OPSET.require(g, "gather")
    mine, theirs = sh.sizes(self), sh.sizes(index)
    if mine is None or theirs is None or any(a != b for k, (a, b) in enumerate(zip(mine, theirs)) if k != dim) \
            or self.dtype == torch.bool:
        OPSET.require(g, "an index shaped unlike the input outside dim, or a bool input (ONNX GatherElements)")
    depth = onnx_ops.unsqueeze(g, onnx_ops.size(g, self, dim), [0]) if not sh.is_static(self, dim) \
        else g.constant([mine[dim]], torch.int64)
    on_off = g.constant([0, 1], self.dtype)
    one_hot = g.op("OneHot", normalize_index(g, index, self, dim), depth, on_off, axis_i=dim + 1)
    picked = g.op("Mul", onnx_ops.unsqueeze(g, self, [dim]), one_hot)
    return onnx_ops.reduce(g, "ReduceSum", picked, [dim + 1], False)


@symbolic("aten::take_along_dim")
def take_along_dim(g, self, indices, dim=None):
    """take_along_dim(Tensor self, Tensor indices, int? dim=None) -> Tensor"""
    if dim is None or sh.is_none(dim):
        flat = g.op("Reshape", self, g.constant([-1], torch.int64))
        index = g.op("Reshape", indices, g.constant([-1], torch.int64))
        return g.op("Gather", flat, normalize_index(g, index, flat, 0), axis_i=0)
    OPSET.require(g, "ONNX GatherElements")
    rank = require_rank("take_along_dim", self)
    dim = axis_of(sh._get_const(dim, "i", "dim"), rank)
    index = _as_index(g, indices)
    # broadcast every dim but `dim`: Expand with 1 at `dim` keeps each operand's own size there
    cut = lambda v: concat_shape(g, [shape_parts(g, v, 0, dim), [1], shape_parts(g, v, dim + 1)])  # noqa: E731
    self_b = g.op("Expand", self, cut(index))
    index_b = g.op("Expand", index, cut(self))
    return g.op("GatherElements", self_b, normalize_index(g, index_b, self_b, dim), axis_i=dim)


def _scatter_updates(g, self, index: Value, src) -> Value:
    """``src`` as updates shaped like ``index``: a scalar is expanded, a larger src is cut."""
    src = as_operand(g, src, self.dtype)
    dims = sh.static_sizes(src)
    if dims is not None and all(d == 1 for d in dims):  # a scalar (scatter.value) or a 1-element src
        scalar = g.op("Reshape", src, g.constant([], torch.int64)) if dims else src
        return g.op("Expand", scalar, onnx_ops.shape_of(g, index))
    mine, theirs = sh.static_sizes(src), sh.static_sizes(index)
    if mine is not None and theirs is not None and mine != theirs:
        axes = [k for k, (a, b) in enumerate(zip(mine, theirs)) if a != b]
        src = onnx_ops.slice(g, src, axes, [0] * len(axes), [theirs[k] for k in axes])
    elif (mine is None or theirs is None) and sh.sizes(src) != sh.sizes(index) \
            and not onnx_ops.has_attribute(g, "Slice", "starts"):
        # torch takes the corner of src that index covers; its size is known only at runtime
        rank = require_rank("scatter", index)
        src = g.op("Slice", src, g.constant([0] * rank, torch.int64), onnx_ops.shape_of(g, index),
                   g.constant(list(range(rank)), torch.int64))
    return src


_SCATTER_REDUCE = {"add": "add", "multiply": "mul", "sum": "add", "prod": "mul", "amax": "max", "amin": "min"}


@symbolic("aten::scatter")
def scatter(g, self, dim, index, src, reduce=None):
    """scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor; scatter.value(..., Scalar value);
    scatter.reduce(..., Tensor src, *, str reduce); scatter.value_reduce(..., Scalar value, *, str reduce)"""
    dim = axis_of(sh._get_const(dim, "i", "dim"), require_rank("scatter", self))
    index = normalize_index(g, index, self, dim)
    updates = _scatter_updates(g, self, index, src)
    mode = sh.const(reduce, None) if reduce is not None else None
    if mode == "add":
        return _scatter_add(g, self, dim, index, updates)
    if mode == "multiply" and not onnx_ops.has_scatter_reduction(g, "mul"):
        return _scatter_one_hot(g, self, dim, index, updates, "prod")
    return onnx_ops.scatter_elements(g, self, dim, index, updates, _SCATTER_REDUCE.get(mode))


@symbolic("aten::scatter_add")
def scatter_add(g, self, dim, index, src):
    """scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor"""
    dim = axis_of(sh._get_const(dim, "i", "dim"), require_rank("scatter_add", self))
    index = normalize_index(g, index, self, dim)
    return _scatter_add(g, self, dim, index, _scatter_updates(g, self, index, src))


_REDUCE_IDENTITY = {"sum": 0, "mean": 0, "prod": 1, "amax": float("-inf"), "amin": float("inf")}


@symbolic("aten::scatter_reduce")
def scatter_reduce(g, self, dim, index, src, reduce, include_self=None):
    """scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True)
    -> Tensor"""
    dim = axis_of(sh._get_const(dim, "i", "dim"), require_rank("scatter_reduce", self))
    mode = sh._get_const(reduce, "s", "reduce")
    keep = True if include_self is None or sh.is_none(include_self) else sh._get_const(include_self, "b", "x")
    index = normalize_index(g, index, self, dim)
    updates = _scatter_updates(g, self, index, src)
    if mode == "mean":
        OPSET.require(g, "reduce='mean' (ScatterElements reduction)")
    base = self
    if not keep:
        identity = _REDUCE_IDENTITY[mode]
        if not self.dtype.is_floating_point and identity in (float("inf"), float("-inf")):
            info = torch.iinfo(self.dtype)
            identity = info.max if identity > 0 else info.min
        fill = g.op("Expand", g.constant(identity, self.dtype), onnx_ops.shape_of(g, index))
        base = onnx_ops.scatter_elements(g, self, dim, index, fill)
    if mode != "mean" and not onnx_ops.has_scatter_reduction(g, _SCATTER_REDUCE[mode]):
        return _scatter_one_hot(g, base, dim, index, updates, mode)
    if mode != "mean":
        return onnx_ops.scatter_elements(g, base, dim, index, updates, _SCATTER_REDUCE[mode])
    total = onnx_ops.scatter_elements(g, base, dim, index, updates, "add")
    start = g.op("ConstantOfShape", onnx_ops.shape_of(g, self), value_t=torch.ones(1, dtype=self.dtype)
                 if keep else torch.zeros(1, dtype=self.dtype))
    ones = g.op("ConstantOfShape", onnx_ops.shape_of(g, index), value_t=torch.ones(1, dtype=self.dtype))
    count = onnx_ops.scatter_elements(g, start, dim, index, ones, "add")
    count = g.op("Max", count, g.constant(1, self.dtype))  # untouched slots keep self (count 0 -> 1)
    return g.op("Div", total, count)


# ---------------------------------------------------------------------------------------------
# Writes that the in-place pass (torchscript_onnx/prepare/inplace.py) produces, and copy_


@symbolic("aten::copy")
def copy(g, self, src, non_blocking=None):
    """copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor"""
    if sh.static_sizes(self) is None:
        src = _unbroadcast(src)
    src = as_operand(g, src, self.dtype)
    if sh.static_sizes(src) is not None and sh.static_sizes(src) == sh.static_sizes(self):
        return src
    OPSET.require(g, "copying a broadcast value (ONNX Expand)")
    return g.op("Expand", src, onnx_ops.shape_of(g, self))


def _unbroadcast(src):
    """A constant that the trace broadcast (zero strides, as ``x[a:] = values`` records it) back to
    size 1 on those dims: Expand then sizes it like the runtime target, as torch's setitem does."""
    raw = sh.const(src)
    if not isinstance(raw, torch.Tensor) or src.in_graph or src.is_param:
        return src
    index = tuple(builtins.slice(0, 1) if stride == 0 and size > 1 else builtins.slice(None)
                  for size, stride in zip(raw.shape, raw.stride()))
    if all(i == builtins.slice(None) for i in index):
        return src
    small = raw[index].clone()
    return Value("", small.dtype, tuple(small.shape), small)


@symbolic("aten::fill")
def fill(g, self, value):
    """fill.Scalar(Tensor self, Scalar value) -> Tensor; fill.Tensor(Tensor self, Tensor value) -> Tensor"""
    return copy(g, self, value)


@symbolic("aten::zero")
def zero(g, self):
    """zero(Tensor self) -> Tensor"""
    return copy(g, self, Value("", const=0))


@symbolic("aten::slice_scatter")
def slice_scatter(g, self, src, dim=None, start=None, end=None, step=None):
    """slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1)
    -> Tensor"""
    rank = require_rank("slice_scatter", self)
    dim = axis_of(_int_const(dim, 0), rank)
    begin, stop, step = _int_const(start, 0), _int_const(end, INT64_MAX), _int_const(step, 1)
    src = as_operand(g, src, self.dtype)
    if not isinstance(step, int) or (step != 1 and not (isinstance(begin, int) and isinstance(stop, int))):
        sh.value_error("slice_scatter: a step, and the bounds of a stepped slice, must be known at export time")
    if not (isinstance(begin, int) and isinstance(stop, int)):  # runtime bounds: Slice takes them from 10
        begin = begin if isinstance(begin, int) else _as_index(g, start)
        stop = stop if isinstance(stop, int) else _as_index(g, end)
    elif sh.is_static(self, dim):
        size = sh.sizes(self)[dim]
        begin, stop, _ = builtins.slice(begin, stop, step).indices(size)
        stop = max(stop, begin)
    if step == 1:
        parts = [onnx_ops.slice(g, self, [dim], [0], [begin]), src, onnx_ops.slice(g, self, [dim], [stop], [INT64_MAX])]
        return g.op("Concat", *parts, axis_i=dim)
    size = static_dim("slice_scatter with a step", self, dim)
    positions = list(range(size))[begin:stop:step]
    index = g.constant(torch.tensor(positions).reshape([1] * dim + [-1] + [1] * (rank - dim - 1)), torch.int64)
    index = g.op("Expand", index, onnx_ops.shape_of(g, src))
    return onnx_ops.scatter_elements(g, self, dim, index, src)


@symbolic("aten::select_scatter")
def select_scatter(g, self, src, dim, index):
    """select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor"""
    rank = require_rank("select_scatter", self)
    dim = axis_of(sh._get_const(dim, "i", "dim"), rank)
    idx = _int_const(index)
    if not isinstance(idx, int):  # x[:, i] = v in a scripted loop; Slice takes runtime bounds from 10
        size = onnx_ops.size(g, self, dim)
        idx = g.op("Mod", g.op("Add", _as_index(g, index), size), size)  # -size <= i < size -> 0 <= i < size
        end = g.op("Add", idx, g.constant(1, torch.int64))
    else:
        if idx < 0 and sh.is_static(self, dim):
            idx += sh.sizes(self)[dim]
        end = idx + 1 if idx != -1 else INT64_MAX
    src = onnx_ops.unsqueeze(g, as_operand(g, src, self.dtype), [dim])
    parts = [onnx_ops.slice(g, self, [dim], [0], [idx]), src, onnx_ops.slice(g, self, [dim], [end], [INT64_MAX])]
    return g.op("Concat", *parts, axis_i=dim)


@symbolic("aten::diagonal_scatter")
@sh.parse_args("v", "v", "i", "i", "i")
def diagonal_scatter(g, self, src, offset=0, dim1=0, dim2=1):
    """diagonal_scatter(Tensor self, Tensor src, int offset=0, int dim1=0, int dim2=1) -> Tensor"""
    flat, n, m, perm, positions = diagonal_layout(g, self, offset, dim1, dim2)
    axis = len(perm) - 2
    src = as_operand(g, src, self.dtype)
    index = g.op("Expand", g.constant(positions, torch.int64), onnx_ops.shape_of(g, src))
    written = onnx_ops.scatter_elements(g, flat, axis, index, src)
    moved = g.op("Reshape", written, concat_shape(g, [[0] * axis, [n, m]]))
    if perm == list(range(len(perm))):
        return moved
    return g.op("Transpose", moved, perm_i=sorted(range(len(perm)), key=lambda k: perm[k]))


# ---------------------------------------------------------------------------------------------
# nonzero


@symbolic("aten::nonzero")
def nonzero(g, self):
    """nonzero(Tensor self) -> Tensor"""
    OPSET.require(g, "nonzero")
    return g.op("Transpose", g.op("NonZero", _nonzero_input(g, self)), perm_i=[1, 0])


def _nonzero_input(g, self: Value) -> Value:
    """onnxruntime's NonZero lacks some dtypes (int8, int16, ...); x != 0 keeps the answer."""
    if self.dtype in (torch.bool, torch.float32, torch.int32, torch.int64, torch.uint8):
        return self
    return onnx_ops.cast(g, self, torch.bool)


@symbolic("aten::argwhere")
def argwhere(g, self):
    """argwhere(Tensor self) -> Tensor"""
    return nonzero(g, self)


@symbolic("aten::nonzero_numpy")
def nonzero_numpy(g, self):
    """nonzero_numpy(Tensor self) -> Tensor[]"""
    OPSET.require(g, "nonzero")
    rows = g.op("NonZero", _nonzero_input(g, self))
    return [g.op("Gather", rows, g.constant(k, torch.int64), axis_i=0)
            for k in range(require_rank("nonzero_numpy", self))]
