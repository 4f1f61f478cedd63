"""Evaluate ONNX ops whose inputs are all known at export time: one table keyed by op type.

``GraphContext.op`` consults it before emitting a node, so shape arithmetic on static shapes and
casts of constants never reach the graph. Each folder takes the input tensors and the node's
attributes ({name: value}) and returns the output tensors; it may return None to decline.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from . import dtypes
from .shapes import slice_range

# Folding beyond this many output elements would copy weights; leave such nodes to the runtime.
MAX_FOLDED_ELEMENTS = 1 << 16


def _binary(fn):
    return lambda xs, attrs: [fn(xs[0], xs[1])]


def _div(a, b):
    if a.dtype.is_floating_point or a.dtype.is_complex:
        return a / b
    return torch.div(a, b, rounding_mode="trunc").to(a.dtype)


def _cast(xs, attrs):
    dtype = dtypes.ONNX_TO_TORCH.get(attrs["to"])
    return None if dtype is None else [xs[0].to(dtype)]


def _shape(xs, attrs):
    dims = list(xs[0].shape)
    start, end = attrs.get("start", 0), attrs.get("end", len(dims))
    return [torch.tensor(dims[start:end], dtype=torch.int64)]


def _axes(xs, attrs):
    axes = attrs.get("axes")
    if axes is None and len(xs) > 1 and xs[1] is not None:
        axes = xs[1].tolist()
    return axes


def _unsqueeze(xs, attrs):
    x, axes = xs[0], _axes(xs, attrs)
    rank = x.dim() + len(axes)
    for axis in sorted(a + rank if a < 0 else a for a in axes):
        x = x.unsqueeze(axis)
    return [x]


def _squeeze(xs, attrs):
    x, axes = xs[0], _axes(xs, attrs)
    if axes is None:
        return [x.squeeze()]
    for axis in sorted((a + x.dim() if a < 0 else a for a in axes), reverse=True):
        x = x.squeeze(axis)
    return [x]


def _concat(xs, attrs):
    return [torch.cat([x for x in xs if x is not None], dim=attrs["axis"])]


def _gather(xs, attrs):
    x, indices = xs
    axis = attrs.get("axis", 0)
    size = x.shape[axis]
    indices = torch.where(indices < 0, indices + size, indices)
    return [x.index_select(axis, indices.reshape(-1)).reshape(x.shape[:axis] + indices.shape + x.shape[axis + 1:])]


def _reshape(xs, attrs):
    x, shape = xs[0], xs[1].tolist()
    if not attrs.get("allowzero", 0):
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return [x.reshape(shape)]


def _slice(xs, attrs):
    x = xs[0]
    if "starts" in attrs:
        starts, ends, axes, steps = attrs["starts"], attrs["ends"], attrs.get("axes"), None
    else:
        starts, ends = xs[1].tolist(), xs[2].tolist()
        axes = xs[3].tolist() if len(xs) > 3 and xs[3] is not None else None
        steps = xs[4].tolist() if len(xs) > 4 and xs[4] is not None else None
    axes = axes if axes is not None else list(range(len(starts)))
    steps = steps if steps is not None else [1] * len(starts)
    index = [slice(None)] * x.dim()
    flips = []
    for start, end, axis, step in zip(starts, ends, axes, steps):
        size = x.shape[axis]
        rng = slice_range(start, end, step, size)
        if step < 0:
            flips.append((axis, rng))
            continue
        index[axis] = slice(rng.start, rng.stop, rng.step)
    x = x[tuple(index)]
    for axis, rng in flips:
        x = x.index_select(axis, torch.tensor(list(rng), dtype=torch.int64))
    return [x]


def _transpose(xs, attrs):
    perm = attrs.get("perm") or list(reversed(range(xs[0].dim())))
    return [xs[0].permute(perm).contiguous()]


def _range(xs, attrs):
    start, limit, delta = (x.item() for x in xs)
    return [torch.arange(start, limit, delta, dtype=xs[0].dtype)]


def _constant_of_shape(xs, attrs):
    value = attrs.get("value")
    fill = value if value is not None else torch.zeros(1)
    return [torch.full(xs[0].tolist(), fill.reshape(()).item(), dtype=fill.dtype)]


def _where(xs, attrs):
    return [torch.where(xs[0], xs[1], xs[2])]


def _expand(xs, attrs):
    shape = torch.broadcast_shapes(xs[0].shape, tuple(xs[1].tolist()))
    return [xs[0].expand(shape).contiguous()]


def _size(xs, attrs):
    return [torch.tensor(xs[0].numel(), dtype=torch.int64)]


def _unary(fn):
    return lambda xs, attrs: [fn(xs[0])]


FOLDERS: dict[str, Callable] = {
    "Add": _binary(torch.add),
    "Sub": _binary(torch.sub),
    "Mul": _binary(torch.mul),
    "Div": _binary(_div),
    "Equal": _binary(torch.eq),
    "Less": _binary(torch.lt),
    "Greater": _binary(torch.gt),
    "LessOrEqual": _binary(torch.le),
    "GreaterOrEqual": _binary(torch.ge),
    "Max": lambda xs, attrs: [torch.stack(torch.broadcast_tensors(*xs)).amax(0)],
    "Min": lambda xs, attrs: [torch.stack(torch.broadcast_tensors(*xs)).amin(0)],
    "And": _binary(torch.logical_and),
    "Or": _binary(torch.logical_or),
    "Xor": _binary(torch.logical_xor),
    "Not": _unary(torch.logical_not),
    "Neg": _unary(torch.neg),
    "Abs": _unary(torch.abs),
    "Floor": _unary(torch.floor),
    "Ceil": _unary(torch.ceil),
    "Sqrt": _unary(torch.sqrt),
    # Elementwise math on known values: rotary embeddings' cos/sin tables of static positions.
    "Cos": _unary(torch.cos),
    "Sin": _unary(torch.sin),
    "Identity": _unary(lambda x: x),
    "Cast": _cast,
    "Shape": _shape,
    "Size": _size,
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Concat": _concat,
    "Gather": _gather,
    "Reshape": _reshape,
    "Slice": _slice,
    "Transpose": _transpose,
    "Range": _range,
    "ConstantOfShape": _constant_of_shape,
    "Where": _where,
    "Expand": _expand,
}


# Ops whose output has as many elements as their first input.
_SAME_SIZE = frozenset({
    "Not", "Neg", "Abs", "Floor", "Ceil", "Sqrt", "Cos", "Sin", "Identity", "Cast", "Transpose", "Unsqueeze", "Squeeze",
    "Reshape",
})
# Ops whose output has the broadcast shape of their inputs.
_BROADCAST = frozenset({
    "Add", "Sub", "Mul", "Div", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor",
    "Max", "Min", "Where",
})


def output_elements(op_type: str, inputs: list, attrs: dict) -> int | None:
    """The elements the folder of ``op_type`` would return, computed from the input shapes without
    computing the output; None when that takes more than shapes (or the inputs are invalid: the
    folder then raises as it would have)."""
    xs = [x for x in inputs if x is not None]
    try:
        if op_type in _SAME_SIZE:
            return inputs[0].numel()
        if op_type in _BROADCAST:
            return math.prod(torch.broadcast_shapes(*(x.shape for x in xs)))
        if op_type == "Expand":
            return math.prod(torch.broadcast_shapes(xs[0].shape, tuple(xs[1].tolist())))
        if op_type == "Concat":
            return sum(x.numel() for x in xs)
        if op_type == "ConstantOfShape":
            return math.prod(xs[0].tolist())
        if op_type == "Gather":
            x, indices = xs
            axis = attrs.get("axis", 0)
            return math.prod(x.shape[:axis]) * indices.numel() * math.prod(x.shape[axis + 1:])
    except Exception:  # noqa: BLE001 - the folder reports it
        return None
    return None


def fold(op_type: str, inputs: list, attrs: dict) -> list[torch.Tensor] | None:
    folder = FOLDERS.get(op_type)
    if folder is None:
        return None
    # Decline before computing a result that would be too large to keep (a transposed or cast
    # weight): computing it only to drop it costs a weight's bytes at the peak, and the allocator
    # may not give them back.
    expected = output_elements(op_type, inputs, attrs)
    if expected is not None and expected > MAX_FOLDED_ELEMENTS:
        return None
    outputs = folder(inputs, attrs)
    if outputs is None or any(t.numel() > MAX_FOLDED_ELEMENTS for t in outputs):
        return None
    return outputs
