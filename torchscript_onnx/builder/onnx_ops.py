"""ONNX ops whose schema moved between opsets, behind one call each.

Part of the graph builder (with ``ir``, ``context``, ``shapes`` and ``folding``): symbolics call
``onnx_ops.unsqueeze(g, x, [0])`` and never branch on the opset for these moves:
axes became an input of Squeeze/Unsqueeze/ReduceSum at 13 and of the other reductions at 18;
Slice took its bounds as inputs at 10; Split took sizes as an input at 13 and ``num_outputs`` at
18; Clip took min/max as inputs at 11; Pad took pads as an input at 11.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .dtypes import to_onnx
from .errors import needs_opset
from .ir import Value

INT64_MAX = 9223372036854775807


def _ints(g, values: Sequence[int]) -> Value:
    return g.constant(list(values), torch.int64)


def unsqueeze(g, x: Value, axes: Sequence[int]) -> Value:
    if g.opset >= 13:
        return g.op("Unsqueeze", x, _ints(g, axes))
    return g.op("Unsqueeze", x, axes_i=list(axes))


def squeeze(g, x: Value, axes: Sequence[int] | None = None) -> Value:
    if axes is None:
        return g.op("Squeeze", x)
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
