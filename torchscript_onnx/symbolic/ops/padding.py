"""Padding at opset 9: F.pad and the aten pad ops as ONNX Pad (constant, reflect, edge), circular
padding as Slice + Concat (ONNX Pad mode "wrap" from opset 19), negative pads as Slice (cropping).

torch lists pads from the last dim backwards, (begin, end) per dim; ONNX lists all begins, then all
ends, from the first dim. The pads move from an attribute to an input at opset 11 (onnx_ops.pad)."""

from __future__ import annotations

import torch

from torchscript_onnx.builder import onnx_ops
from torchscript_onnx.builder.ir import Value

from .. import symbolic_helper as sh
from ..registry import declare_opset_requirements, symbolic
from .operand_types import onnx_input_types


# When an op here needs a higher opset than it is registered at: the condition (the reason its
# conversion states with OPSET.require) -> the lowest opset that converts it (docs/supported_ops.md).
OPSET = declare_opset_requirements({
    ("aten::pad", "aten::constant_pad_nd", "aten::reflection_pad1d", "aten::reflection_pad2d",
     "aten::reflection_pad3d", "aten::replication_pad1d", "aten::replication_pad2d", "aten::replication_pad3d"): {
        "pads known only at runtime (Pad with a pads input)": 11},
    ("aten::pad", "aten::_pad_circular"): {"pads known only at runtime (Pad with a pads input and wrap mode)": 19},
})

_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def _pairs(input, pad, op: str) -> list[tuple[int, int]]:
    """(begin, end) per dim of ``input``, first dim first."""
    rank = sh.rank(input)
    if rank is None:
        sh.value_error(f"{op}: the input rank must be known", input)
    raw = sh.const(pad, None)
    if raw is None:
        raw = [sh.const(p, p) for p in sh.unpack_list(pad)]
    raw = [int(p) if not isinstance(p, Value) else p for p in raw]
    if len(raw) % 2 or len(raw) // 2 > rank:
        sh.value_error(f"{op}: {len(raw)} pads do not fit an input of rank {rank}", input)
    pairs = [(0, 0)] * rank
    for k in range(len(raw) // 2):
        pairs[rank - 1 - k] = (raw[2 * k], raw[2 * k + 1])
    return pairs


def _crop(g, input, pairs):
    """Apply the negative pads as a Slice; return the input and the pads left (all >= 0)."""
    axes = [a for a, (b, e) in enumerate(pairs) if b < 0 or e < 0]
    if not axes:
        return input, pairs
    starts = [max(-pairs[a][0], 0) for a in axes]
    ends = [pairs[a][1] if pairs[a][1] < 0 else onnx_ops.INT64_MAX for a in axes]
    cropped = onnx_ops.slice(g, input, axes, starts, ends)
    return cropped, [(max(b, 0), max(e, 0)) for b, e in pairs]


def _runtime_pad(g, input, pairs, mode, value, op, pads=None):
    """Pads computed at runtime (e.g. from a dynamic size): a pads input, opset 11 (wrap: 19).
    ``pads``: the ONNX pads tensor when already built (then ``pairs`` is not read)."""
    reason = "pads known only at runtime (Pad with a pads input and wrap mode)" if mode == "circular" \
        else "pads known only at runtime (Pad with a pads input)"
    need = OPSET.opset(reason)
    # legacy's wording first: callers match on it
    OPSET.require(g, reason, None, f"Unsupported: ONNX export of Pad in opset {g.opset}. The sizes of the padding "
                  f"must be constant. Please try opset version {need} ({op}: {reason}; pass opset_version={need})")
    if pads is None:
        items = [b for b, _ in pairs] + [e for _, e in pairs]
        parts = []
        for item in items:
            if isinstance(item, Value):
                item = onnx_ops.cast(g, item, torch.int64)
                parts.append(onnx_ops.unsqueeze(g, item, [0]) if item.rank == 0 else item)
            else:
                parts.append(g.constant([item], torch.int64))
        pads = g.op("Concat", *parts, axis_i=0)
    wide = onnx_ops.cast(g, input, torch.uint8) if input.dtype == torch.bool else input
    fill = None
    if mode == "constant":
        fill_value = 0.0 if value is None else value
        if wide.dtype is not None and not wide.dtype.is_floating_point:
            fill_value = int(fill_value)
        fill = g.constant(fill_value, wide.dtype)
    out = g.op("Pad", wide, pads, fill, mode_s=_MODES[mode])
    return onnx_ops.cast(g, out, torch.bool) if input.dtype == torch.bool else out


def _pads_tensor(g, input, pad, mode, value, op):
    """Pads as a 1-D tensor of runtime length (a list built in a loop, a list input): torch's
    (begin, end) pairs from the last dim, padded with zeros to one pair per dim, reversed to the
    first dim first and transposed to ONNX's begins-then-ends."""
    rank = sh.rank(input)
    if rank is None:
        sh.value_error(f"{op}: the input rank must be known", input)
    pad = onnx_ops.cast(g, pad, torch.int64)
    missing = g.op("Sub", g.constant([2 * rank], torch.int64), g.op("Shape", pad))
    zeros = g.op("ConstantOfShape", missing, value_t=torch.zeros(1, dtype=torch.int64))
    pairs = g.op("Reshape", g.op("Concat", pad, zeros, axis_i=0), g.constant([rank, 2], torch.int64))
    if not onnx_ops.has_attribute(g, "Slice", "starts"):  # Slice-10: bounds and steps as inputs
        pairs = onnx_ops.slice(g, pairs, [0], [-1], [-onnx_ops.INT64_MAX], [-1])
    else:
        pairs = g.op("Gather", pairs, g.constant(list(range(rank - 1, -1, -1)), torch.int64), axis_i=0)
    pads = g.op("Reshape", g.op("Transpose", pairs, perm_i=[1, 0]), g.constant([-1], torch.int64))
    return _runtime_pad(g, input, [(pads, 0)], mode, value, op, pads)


def _circular(g, input, pairs):
    """Wrap around: prepend the last ``begin`` elements and append the first ``end`` ones."""
    out = input
    for axis, (begin, end) in enumerate(pairs):
        if begin == 0 and end == 0:
            continue
        parts = []
        if begin:
            parts.append(onnx_ops.slice(g, out, [axis], [-begin], [onnx_ops.INT64_MAX]))
        parts.append(out)
        if end:
            parts.append(onnx_ops.slice(g, out, [axis], [0], [end]))
        out = g.op("Concat", *parts, axis_i=axis)
    return out


def pad_nd(g, input, pad, mode: str, value=None, op: str = "pad"):
    """The one lowering behind every aten pad op."""
    if mode not in _MODES:
        sh.value_error(f"{op}: padding mode {mode!r} is not supported")
    if isinstance(pad, Value) and not pad.is_const and pad.elements is None and pad.rank == 1:
        return _pads_tensor(g, input, pad, mode, value, op)
    pairs = _pairs(input, pad, op)
    if any(isinstance(p, Value) for pair in pairs for p in pair):
        return _runtime_pad(g, input, pairs, mode, value, op)
    input, pairs = _crop(g, input, pairs)
    if not any(b or e for b, e in pairs):
        return input if input.producer is not None else g.op("Identity", input)
    if mode == "circular" and g.opset < 19:
        return _circular(g, input, pairs)
    if input.dtype == torch.bool:
        # Pad takes bool from opset 13 only, and onnxruntime has no bool kernel: pad as uint8 / float.
        wide = onnx_ops.cast(g, input, torch.uint8 if torch.uint8 in onnx_input_types("Pad", g.opset) else torch.float32)
        return onnx_ops.cast(g, _pad(g, wide, pairs, mode, value), torch.bool)
    if input.dtype is not None and not input.dtype.is_floating_point and input.dtype not in onnx_input_types("Pad", g.opset):
        # Pad takes floating types only before opset 11: pad in a float type that holds every value
        # exactly (double for 32/64-bit integers, as far as 2**53), then cast back.
        wide = torch.float64 if input.dtype in (torch.int32, torch.int64) else torch.float32
        padded = _pad(g, onnx_ops.cast(g, input, wide), pairs, mode, value)
        return onnx_ops.cast(g, padded, input.dtype)
    return _pad(g, input, pairs, mode, value)


def _pad(g, input, pairs, mode, value):
    pads = [b for b, _ in pairs] + [e for _, e in pairs]
    if mode == "constant":
        fill = 0.0 if value is None else value
        if input.dtype is not None and not input.dtype.is_floating_point:
            fill = int(fill)
        return onnx_ops.pad(g, input, pads, "constant", fill)
    return onnx_ops.pad(g, input, pads, _MODES[mode])


@symbolic("aten::pad")
def pad(g, self, pad, mode, value):
    """pad(Tensor self, SymInt[] pad, str mode="constant", float? value=None) -> Tensor"""
    return pad_nd(g, self, pad, sh.const(mode, "constant"), sh.const(value, None), op="pad")


@symbolic("aten::constant_pad_nd")
def constant_pad_nd(g, self, pad, value):
    """constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor"""
    fill = sh.const(value, None)
    if isinstance(fill, torch.Tensor):
        fill = fill.item()
    if fill is None and not sh.is_none(value):
        sh.value_error("constant_pad_nd: the fill value must be known at export time", value)
    return pad_nd(g, self, pad, "constant", fill, op="constant_pad_nd")


@symbolic("aten::_pad_circular")
def _pad_circular(g, self, pad):
    """_pad_circular(Tensor self, SymInt[] pad) -> Tensor"""
    return pad_nd(g, self, pad, "circular", op="_pad_circular")


@symbolic("aten::reflection_pad1d")
def reflection_pad1d(g, self, padding):
    """reflection_pad1d(Tensor self, SymInt[2] padding) -> Tensor"""
    return pad_nd(g, self, padding, "reflect", op="reflection_pad1d")


@symbolic("aten::reflection_pad2d")
def reflection_pad2d(g, self, padding):
    """reflection_pad2d(Tensor self, SymInt[4] padding) -> Tensor"""
    return pad_nd(g, self, padding, "reflect", op="reflection_pad2d")


@symbolic("aten::reflection_pad3d")
def reflection_pad3d(g, self, padding):
    """reflection_pad3d(Tensor self, SymInt[6] padding) -> Tensor"""
    return pad_nd(g, self, padding, "reflect", op="reflection_pad3d")


@symbolic("aten::replication_pad1d")
def replication_pad1d(g, self, padding):
    """replication_pad1d(Tensor self, SymInt[2] padding) -> Tensor"""
    return pad_nd(g, self, padding, "replicate", op="replication_pad1d")


@symbolic("aten::replication_pad2d")
def replication_pad2d(g, self, padding):
    """replication_pad2d(Tensor self, SymInt[4] padding) -> Tensor"""
    return pad_nd(g, self, padding, "replicate", op="replication_pad2d")


@symbolic("aten::replication_pad3d")
def replication_pad3d(g, self, padding):
    """replication_pad3d(Tensor self, SymInt[6] padding) -> Tensor"""
    return pad_nd(g, self, padding, "replicate", op="replication_pad3d")
