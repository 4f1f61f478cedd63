"""ONNX ops whose schema moved between opsets, behind one call each.

Part of the graph builder (with ``ir``, ``context``, ``shapes`` and ``folding``): symbolics call
``onnx_ops.unsqueeze(g, x, [0])`` and never branch on the opset for these moves:
axes became an input of Squeeze/Unsqueeze/ReduceSum at 13 and of the other reductions at 18;
Slice took its bounds as inputs at 10; Split took sizes as an input at 13 and ``num_outputs`` at
18; Clip took min/max as inputs at 11; Pad took pads as an input at 11; TopK took k as an input at
10 and ``largest``/``sorted`` at 11; Upsample took its scales as an input at 9 and became Resize
at 10, whose roi input is optional from 13; DFT took its axis as an input at 20; ScatterElements
(Scatter before 11) and ScatterND took their reductions at 16 and 18. ``has_op`` and
``has_attribute`` answer from ``onnx.defs`` when an op or an attribute came, for lowerings with a
fallback before it.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import onnx
import torch

from .dtypes import to_onnx
from .errors import needs_opset
from .ir import Value

INT64_MAX = 9223372036854775807


def has_op(g, op_type: str) -> bool:
    """Whether ONNX has ``op_type`` at the target opset (Sign and IsNaN came at 9, Round at 11, ...):
    a lowering with a fallback for older opsets asks this, not the opset number."""
    return _has_schema(op_type, g.opset)


@functools.lru_cache(maxsize=None)
def _has_schema(op_type: str, opset: int) -> bool:
    # One schema asked for, not get_all_schemas_with_history(): that copies every schema of every
    # opset into Python objects, 2.8 MB of heap the process keeps for the first lowering that asks.
    try:
        onnx.defs.get_schema(op_type, opset, "")
    except onnx.defs.SchemaError:
        return False
    return True


@functools.lru_cache(maxsize=None)
def _attributes(op_type: str, opset: int) -> frozenset[str]:
    return frozenset(onnx.defs.get_schema(op_type, opset).attributes)


def has_attribute(g, op_type: str, attribute: str) -> bool:
    """Whether ONNX ``op_type`` takes ``attribute`` at the target opset (Resize's
    ``coordinate_transformation_mode`` from 11, ...)."""
    return has_op(g, op_type) and attribute in _attributes(op_type, g.opset)


def _ints(g, values: Sequence[int]) -> Value:
    return g.constant(list(values), torch.int64)


def unsqueeze(g, x: Value, axes: Sequence[int] | Value) -> Value:
    """Unsqueeze at ``axes``: ints, or a 1-D int64 value of axes known only at runtime (opset 13)."""
    if isinstance(axes, Value) and g.opset < 13:
        needs_opset(13, "Unsqueeze with axes known only at runtime", x)
    if g.opset >= 13:
        return g.op("Unsqueeze", x, axes if isinstance(axes, Value) else _ints(g, axes))
    return g.op("Unsqueeze", x, axes_i=list(axes))


def squeeze(g, x: Value, axes: Sequence[int] | Value | None = None) -> Value:
    """Squeeze at ``axes`` (None: every dim of size 1): ints, or a 0-d or 1-D int64 value of axes
    known only at runtime (opset 13)."""
    if axes is None:
        return g.op("Squeeze", x)
    if isinstance(axes, Value) and g.opset < 13:
        needs_opset(13, "Squeeze with axes known only at runtime", x)
    if isinstance(axes, Value):
        return g.op("Squeeze", x, unsqueeze(g, axes, [0]) if axes.rank == 0 else axes)
    if g.opset >= 13:
        return g.op("Squeeze", x, _ints(g, axes))
    return g.op("Squeeze", x, axes_i=list(axes))


_AXES_INPUT_SINCE = {"ReduceSum": 13}


def reduce(g, op_type: str, x: Value, axes: Sequence[int] | Value | None, keepdims: bool) -> Value:
    """``op_type`` over ``axes`` (None: all axes; a 1-D int64 value: axes known only at runtime)."""
    since = _AXES_INPUT_SINCE.get(op_type, 18)
    if axes is None:
        return g.op(op_type, x, keepdims_i=int(keepdims))
    if isinstance(axes, Value) and g.opset < since:
        needs_opset(since, f"{op_type} over axes known only at runtime (axes as an input)", axes)
    if g.opset >= since:
        return g.op(op_type, x, axes if isinstance(axes, Value) else _ints(g, axes), keepdims_i=int(keepdims))
    return g.op(op_type, x, axes_i=list(axes), keepdims_i=int(keepdims))


def slice(g, x: Value, axes: Sequence[int], starts, ends, steps: Sequence[int] | None = None) -> Value:
    """Slice with bounds that are ints or runtime 1-element values (opset >= 10 for those)."""
    static = all(isinstance(v, int) for v in list(starts) + list(ends))
    steps = list(steps) if steps is not None else [1] * len(axes)
    if g.opset < 10:
        if not static or any(s != 1 for s in steps):
            needs_opset(10, "Slice with runtime bounds or steps")
        return g.op("Slice", x, axes_i=list(axes), starts_i=list(starts), ends_i=list(ends))
    inputs = [_bound(g, starts), _bound(g, ends), _ints(g, axes)]
    if any(s != 1 for s in steps):
        inputs.append(_ints(g, steps))
    return g.op("Slice", x, *inputs)


def _bound(g, bounds) -> Value:
    if all(isinstance(b, int) for b in bounds):
        return _ints(g, [max(min(b, INT64_MAX), -INT64_MAX) for b in bounds])
    parts = []
    for b in bounds:
        if isinstance(b, int):
            parts.append(_ints(g, [b]))
        else:
            parts.append(unsqueeze(g, b, [0]) if b.rank == 0 else b)
    return g.op("Concat", *parts, axis_i=0)


def split(g, x: Value, sizes: Sequence[int], axis: int) -> tuple[Value, ...]:
    if len(sizes) == 1:
        return (g.op("Identity", x),)
    if g.opset >= 13:
        return g.op("Split", x, _ints(g, sizes), axis_i=axis, outputs=len(sizes))
    return g.op("Split", x, split_i=list(sizes), axis_i=axis, outputs=len(sizes))


def topk(g, x: Value, k: int | Value, axis: int, largest: bool = True, sorted_: bool = True) -> tuple[Value, Value]:
    """(values, indices) of TopK, k an int or a runtime 0-d/1-element value: k is an attribute
    before opset 10 and an input from 10; ``largest`` and ``sorted`` are attributes from 11, before
    which TopK finds the largest only (the smallest: the largest of -x, negated back), sorted.
    The element types TopK takes before 11 (floats only) are the caller's to meet."""
    if g.opset < 10:
        if not isinstance(k, int):
            needs_opset(10, "k known only at runtime", k)
        k_inputs, k_attrs = [], {"k_i": k}
    else:
        count = _ints(g, [k]) if isinstance(k, int) else g.op("Reshape", cast(g, k, torch.int64), _ints(g, [1]))
        k_inputs, k_attrs = [count], {}
    if g.opset >= 11:
        return g.op("TopK", x, *k_inputs, axis_i=axis, largest_i=int(largest), sorted_i=int(sorted_), outputs=2)
    source = x if largest else g.op("Neg", x)
    values, indices = g.op("TopK", source, *k_inputs, **k_attrs, axis_i=axis, outputs=2)
    return (values if largest else g.op("Neg", values)), indices


def upsample(g, x: Value, scales: Sequence[float] | Value, mode: str) -> Value:
    """Scale each dim of ``x`` by ``scales`` (floats, or a 1-D float value) the way ONNX did before
    Resize-11's coordinate modes: Upsample with a scales attribute before opset 9 and a scales
    input at 9, then Resize-10 (asymmetric nearest and linear)."""
    if g.opset < 9:
        if isinstance(scales, Value):
            needs_opset(9, "scale factors known only at runtime (Upsample with a scales input)", scales)
        return g.op("Upsample", x, mode_s=mode, scales_f=list(scales))
    if not isinstance(scales, Value):
        g.legacy_only(2, folds=1)  # legacy's Concat of two Constants, folded by its constant folding
        scales = g.constant(list(scales), torch.float32)
    return g.op("Upsample" if g.opset < 10 else "Resize", x, scales, mode_s=mode)


def resize_no_roi(g) -> Value | None:
    """Resize's roi when it has none: an empty tensor while the input is required (opset 11, 12),
    no input from 13 on (Resize-10 has no roi)."""
    return g.constant(torch.zeros(0, dtype=torch.float32)) if g.opset < 13 else None


def clip(g, x: Value, low: float | None, high: float | None) -> Value:
    if g.opset < 11:
        return g.op("Clip", x, min_f=low, max_f=high)
    bound = lambda v: None if v is None else g.constant(v, x.dtype)  # noqa: E731
    return g.op("Clip", x, bound(low), bound(high))


def pad(g, x: Value, pads: Sequence[int], mode: str = "constant", value: float | None = None) -> Value:
    """Pad with ONNX pads layout [begin_0, begin_1, ..., end_0, end_1, ...]."""
    if g.opset < 11:
        return g.op("Pad", x, pads_i=list(pads), mode_s=mode, value_f=value if mode == "constant" else None)
    fill = None if value is None or mode != "constant" else g.constant(value, x.dtype)
    return g.op("Pad", x, _ints(g, pads), fill, mode_s=mode)


def gathers_negative_indices(g) -> bool:
    """Whether Gather reads a negative index from the end, as torch does (Gather-11)."""
    return g.opset >= 11


def dft(g, x: Value, length: Value, axis: int, inverse: bool = False, onesided: bool = False) -> Value:
    """DFT over ``axis`` (an attribute at 17, an input from 20)."""
    if g.opset >= 20:
        return g.op("DFT", x, length, g.constant(axis, torch.int64), inverse_i=int(inverse), onesided_i=int(onesided))
    return g.op("DFT", x, length, axis_i=axis, inverse_i=int(inverse), onesided_i=int(onesided))


def cast(g, x: Value, dtype: torch.dtype) -> Value:
    if x.dtype == dtype:
        return x
    return g.op("Cast", x, to_i=to_onnx(dtype))


def shape_of(g, x: Value) -> Value:
    """The shape as a 1-D int64 value: constant when static, a Shape node otherwise."""
    if x.shape is not None and all(isinstance(d, int) for d in x.shape):
        return _ints(g, x.shape)
    return g.op("Shape", x)


def size(g, x: Value, axis: int) -> Value:
    """One dim as a 0-d int64 value: a constant when static, else Shape + Gather."""
    dims = None if x.shape is None else list(x.shape)
    if dims is not None and isinstance(dims[axis], int):
        return g.constant(dims[axis], torch.int64)
    if dims is not None and axis < 0:
        axis += len(dims)
    out = g.op("Gather", g.op("Shape", x), g.constant(axis, torch.int64), axis_i=0)
    if dims is not None and isinstance(dims[axis], str):
        out.sym = dims[axis]
    return out


# ScatterElements was Scatter before opset 11; its reduction attribute came at 16 (add, mul) and
# 18 (max, min). ScatterND (opset 11) follows the same reduction schedule.
SCATTER_REDUCTION_SINCE = {"add": 16, "mul": 16, "max": 18, "min": 18}


def has_scatter_reduction(g, reduction: str) -> bool:
    """Whether ScatterElements and ScatterND take ``reduction`` ("add", "mul", "max", "min") at the target opset."""
    return g.opset >= SCATTER_REDUCTION_SINCE[reduction]


def scatter_elements(g, x: Value, axis: int, indices: Value, updates: Value, reduction: str | None = None) -> Value:
    if reduction is None or reduction == "none":
        if g.opset < 9:
            needs_opset(9, "ONNX Scatter")
        return g.op("ScatterElements" if g.opset >= 11 else "Scatter", x, indices, updates, axis_i=axis)
    since = SCATTER_REDUCTION_SINCE[reduction]
    if g.opset < since:
        needs_opset(since, f"ScatterElements with reduction={reduction!r}")
    return g.op("ScatterElements", x, indices, updates, axis_i=axis, reduction_s=reduction)


def scatter_nd(g, x: Value, indices: Value, updates: Value, reduction: str | None = None) -> Value:
    if g.opset < 11:
        needs_opset(11, "ONNX ScatterND")
    if reduction is None or reduction == "none":
        return g.op("ScatterND", x, indices, updates)
    since = SCATTER_REDUCTION_SINCE[reduction]
    if g.opset < since:
        needs_opset(since, f"ScatterND with reduction={reduction!r}")
    return g.op("ScatterND", x, indices, updates, reduction_s=reduction)
