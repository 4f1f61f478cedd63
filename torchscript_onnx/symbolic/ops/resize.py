"""Resizing at opset 9: the aten upsample ops as ONNX Upsample (opsets 7-9) or Resize (10+).

One lowering, ``resize``, over the ONNX ops that moved from Upsample (scales attribute at 7, input
at 9) to Resize (10: nearest/linear, asymmetric only; 11: coordinate transformation modes, cubic
and a sizes input; 18: antialias); the builder's ``onnx_ops.upsample`` and ``resize_no_roi`` hold
those schema moves. Modes ONNX cannot express at the target opset raise an error naming the
lowest opset that can."""

from __future__ import annotations

import numpy as np
import torch

from torchscript_onnx.builder import onnx_ops
from torchscript_onnx.builder.ir import Value

from .. import symbolic_helper as sh
from ..registry import declare_opset_requirements, symbolic


# When an op here needs a higher opset than it is registered at: the condition (the reason its
# conversion states with OPSET.require) -> the lowest opset that converts it (docs/supported_ops.md).
OPSET = declare_opset_requirements({
    ("aten::__interpolate", "aten::upsample_nearest1d", "aten::upsample_nearest2d", "aten::upsample_nearest3d",
     "aten::_upsample_nearest_exact1d", "aten::_upsample_nearest_exact2d", "aten::_upsample_nearest_exact3d",
     "aten::upsample_linear1d", "aten::upsample_bilinear2d", "aten::upsample_trilinear3d", "aten::upsample_bicubic2d",
     "aten::_upsample_bilinear2d_aa", "aten::_upsample_bicubic2d_aa"): {
        "downsampling (scale < 1, ONNX Resize)": 10,
        "a list of scale factors built at runtime (ONNX sequences)": 11},
    ("aten::__interpolate", "aten::upsample_nearest1d", "aten::upsample_nearest2d", "aten::upsample_nearest3d"): {
        "nearest downsampling by a non-integer factor (Resize with nearest_mode)": 11},
    ("aten::_upsample_nearest_exact1d", "aten::_upsample_nearest_exact2d", "aten::_upsample_nearest_exact3d"): {
        "nearest-exact mode (Resize coordinate transformation modes)": 11},
    ("aten::upsample_linear1d", "aten::upsample_bilinear2d", "aten::upsample_trilinear3d",
     "aten::_upsample_bilinear2d_aa"): {"linear mode (Resize coordinate transformation modes)": 11},
    ("aten::upsample_bicubic2d", "aten::_upsample_bicubic2d_aa"): {
        "cubic mode (Resize coordinate transformation modes)": 11},
    ("aten::_upsample_bilinear2d_aa", "aten::_upsample_bicubic2d_aa"): {"antialias=True (Resize with antialias)": 18},
    "aten::__interpolate": {"linear mode (Resize coordinate transformation modes)": 11,
                            "cubic mode (Resize coordinate transformation modes)": 11},
}, unlisted={
    "an output size known only at runtime (Upsample with a scales input)": 9,
    "scale factors known only at runtime (Upsample with a scales input)": 9,
})


def _scale_list(rest, spatial: int):
    """The scale factors from the trailing arguments: ``float[]? scale_factors`` (.vec overloads)
    or one ``float?`` per spatial dim (the others); None when absent."""
    if len(rest) == 1:
        if sh.is_none(rest[0]):
            return None
        raw = sh.const(rest[0], None)
        if raw is None:
            return rest[0]  # computed at runtime (scripted code builds the list)
        return [float(s) for s in (raw if isinstance(raw, (list, tuple)) else [raw] * spatial)]
    raws = [sh.const(r, None) for r in rest]
    if any(r is None for r in raws):
        return None
    return [float(r) for r in raws]


def _size_list(output_size):
    """The output size as ints (static), runtime scalar Values mixed in, or None."""
    if sh.is_none(output_size):
        return None
    if isinstance(output_size, list):
        return output_size
    if output_size.elements is None and not output_size.is_const and output_size.rank == 1:
        return output_size  # a 1-D tensor of sizes computed at runtime (a list built in a loop)
    raw = sh.const(output_size, None)
    if raw is not None:
        return [int(s) for s in raw]
    return [sh.const(e, e) for e in sh.unpack_list(output_size)]


def _int_vector(g, items) -> Value:
    """A 1-D int64 value from ints and runtime scalars (or from a 1-D tensor of them)."""
    if isinstance(items, Value):
        return onnx_ops.cast(g, items, torch.int64)
    if all(isinstance(i, int) for i in items):
        return g.constant(list(items), torch.int64)
    parts = []
    for item in items:
        if isinstance(item, int):
            parts.append(g.constant([item], torch.int64))
        else:
            item = onnx_ops.cast(g, item, torch.int64)
            parts.append(onnx_ops.unsqueeze(g, item, [0]) if item.rank == 0 else item)
    return g.op("Concat", *parts, axis_i=0)


def _full_sizes(g, input, sizes):
    """[N, C, *sizes] as a 1-D int64 value."""
    dims = sh.sizes(input)
    if dims is not None and all(isinstance(d, int) for d in dims[:2]) and not isinstance(sizes, Value):
        return _int_vector(g, list(dims[:2]) + list(sizes))
    if dims is not None and all(isinstance(d, int) for d in dims[:2]):
        batch = g.constant(list(dims[:2]), torch.int64)
    else:
        batch = onnx_ops.slice(g, g.op("Shape", input), [0], [0], [2])
    if isinstance(sizes, Value) and (sizes.shape is None or not isinstance(sizes.shape[0], int)):
        # a runtime list of sizes: its length stated, since ONNX's Resize shape inference rejects a
        # sizes input of unknown length
        sizes = g.op("Reshape", onnx_ops.cast(g, sizes, torch.int64), g.constant([len(dims) - 2], torch.int64))
    return g.op("Concat", batch, _int_vector(g, sizes), axis_i=0)


def _static_scales(input, sizes) -> list[float] | None:
    """out / in per spatial dim, nudged up so that float32 ``in * scale`` floors to ``out``."""
    dims = sh.sizes(input)
    if isinstance(sizes, Value) or dims is None or not all(isinstance(d, int) for d in dims[2:]) \
            or not all(isinstance(s, int) for s in sizes):
        return None
    scales = []
    for n, out in zip(dims[2:], sizes):
        s = np.float32(out / n)
        while int(np.float32(s * np.float32(n))) < out:
            s = np.nextafter(s, np.float32(np.inf))
        scales.append(float(s))
    return scales


def _whole_downsampling(input, sizes, scales) -> bool:
    """Whether every downsampled dim shrinks by a whole factor (or nothing shrinks)."""
    dims = sh.sizes(input)
    if sizes is not None:
        if dims is None or isinstance(sizes, Value):
            return False
        return all(isinstance(n, int) and isinstance(m, int) and (m >= n or n % m == 0)
                   for n, m in zip(dims[2:], sizes))
    if scales is None:
        return False
    return all(s >= 1 or float(1 / s).is_integer() for s in scales)


def resize(g, input, output_size, scales, mode: str, align_corners=None, antialias=False, exact=False,
           op="upsample"):
    """``mode``: nearest, linear or cubic; ``exact``: nearest-exact."""
    rank = sh.rank(input)
    if rank is None or rank < 3:
        sh.value_error(f"{op}: the input rank must be known and at least 3", input)
    sizes = _size_list(output_size)
    if sizes is None and scales is None:
        sh.value_error(f"{op}: neither output_size nor scale_factors is given")
    if antialias:
        OPSET.require(g, "antialias=True (Resize with antialias)")
    if mode != "nearest" or exact:
        OPSET.require(g, "nearest-exact mode (Resize coordinate transformation modes)" if exact else
                      "linear mode (Resize coordinate transformation modes)" if mode == "linear" else
                      "cubic mode (Resize coordinate transformation modes)")
    if onnx_ops.has_attribute(g, "Resize", "coordinate_transformation_mode"):  # Resize-11
        return _resize_11(g, input, sizes, scales, mode, align_corners, antialias, exact)
    if sizes is not None:
        scales = _static_scales(input, sizes)
        if scales is None:
            OPSET.require(g, "an output size known only at runtime (Upsample with a scales input)")
    if isinstance(scales, Value):
        OPSET.require(g, "scale factors known only at runtime (Upsample with a scales input)")
        return onnx_ops.upsample(g, input, _runtime_scales(g, scales), mode)
    if scales is not None and any(s < 1 for s in scales):
        OPSET.require(g, "downsampling (scale < 1, ONNX Resize)")
    if onnx_ops.has_op(g, "Resize") and not _whole_downsampling(input, sizes, scales):
        # Resize-10 rounds nearest up when downsampling (onnxruntime's "simple" mode): matches
        # torch's floor only where the source coordinates are whole numbers.
        OPSET.require(g, "nearest downsampling by a non-integer factor (Resize with nearest_mode)")
    if scales is not None:
        return onnx_ops.upsample(g, input, [1.0, 1.0] + list(scales), mode)
    out = onnx_ops.cast(g, _full_sizes(g, input, sizes), torch.float32)
    return onnx_ops.upsample(g, input, g.op("Div", out, onnx_ops.cast(g, g.op("Shape", input), torch.float32)), mode)


def _resize_11(g, input, sizes, scales, mode, align_corners, antialias, exact):
    attrs = {"mode_s": mode}
    if mode == "nearest":
        attrs["coordinate_transformation_mode_s"] = "half_pixel" if exact else "asymmetric"
        attrs["nearest_mode_s"] = "round_prefer_ceil" if exact else "floor"
    else:
        attrs["coordinate_transformation_mode_s"] = "align_corners" if align_corners else "half_pixel"
    if mode == "cubic":
        # torch's bicubic uses a = -0.75; its antialiased bicubic uses a = -0.5 (as PIL).
        attrs["cubic_coeff_a_f"] = -0.5 if antialias else -0.75
    if antialias:
        # torch renormalizes the antialiasing filter over the pixels inside the image.
        attrs["antialias_i"] = 1
        attrs["exclude_outside_i"] = 1
    empty = onnx_ops.resize_no_roi(g)
    if sizes is not None:
        return g.op("Resize", input, empty, empty, _full_sizes(g, input, sizes), **attrs)
    if isinstance(scales, Value):
        scale_value = _runtime_scales(g, scales)
    else:
        # legacy: a Concat of two Constants (folded by its constant folding), its roi a None
        # value from opset 13 on where ours has no input
        g.legacy_only(2 + (empty is None), folds=1)
        scale_value = g.constant([1.0, 1.0] + list(scales), torch.float32)
    return g.op("Resize", input, empty, scale_value, **attrs)


def _runtime_scales(g, scales):
    """[1, 1, *scales] from a runtime list of scale factors."""
    if scales.elements is not None:
        parts = [onnx_ops.cast(g, e if isinstance(e, Value) else g.constant(e), torch.float32)
                 for e in scales.elements]
        scales = g.op("Concat", *[onnx_ops.unsqueeze(g, p, [0]) if p.rank == 0 else p for p in parts], axis_i=0)
    elif scales.sequence:
        OPSET.require(g, "a list of scale factors built at runtime (ONNX sequences)")
        scales = g.op("ConcatFromSequence", scales, axis_i=0, new_axis_i=1)
    return g.op("Concat", g.constant([1.0, 1.0], torch.float32), onnx_ops.cast(g, scales, torch.float32),
                axis_i=0)


def _nearest(g, input, output_size, *rest, exact=False, op="upsample_nearest"):
    scales = _scale_list(rest, (sh.rank(input) or 3) - 2)
    return resize(g, input, output_size, scales, "nearest", exact=exact, op=op)


def _interp(g, mode, input, output_size, align_corners, *rest, antialias=False, op="upsample"):
    scales = _scale_list(rest, (sh.rank(input) or 3) - 2)
    align = sh.const(align_corners, None)
    return resize(g, input, output_size, scales, mode, bool(align), antialias=antialias, op=op)


@symbolic("aten::upsample_nearest1d")
def upsample_nearest1d(g, input, output_size, *scales):
    """upsample_nearest1d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor"""
    return _nearest(g, input, output_size, *scales, op="upsample_nearest1d")


@symbolic("aten::upsample_nearest2d")
def upsample_nearest2d(g, input, output_size, *scales):
    """upsample_nearest2d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor"""
    return _nearest(g, input, output_size, *scales, op="upsample_nearest2d")


@symbolic("aten::upsample_nearest3d")
def upsample_nearest3d(g, input, output_size, *scales):
    """upsample_nearest3d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor"""
    return _nearest(g, input, output_size, *scales, op="upsample_nearest3d")


@symbolic("aten::_upsample_nearest_exact1d")
def _upsample_nearest_exact1d(g, input, output_size, *scales):
    """_upsample_nearest_exact1d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor"""
    return _nearest(g, input, output_size, *scales, exact=True, op="_upsample_nearest_exact1d")


@symbolic("aten::_upsample_nearest_exact2d")
def _upsample_nearest_exact2d(g, input, output_size, *scales):
    """_upsample_nearest_exact2d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor"""
    return _nearest(g, input, output_size, *scales, exact=True, op="_upsample_nearest_exact2d")


@symbolic("aten::_upsample_nearest_exact3d")
def _upsample_nearest_exact3d(g, input, output_size, *scales):
    """_upsample_nearest_exact3d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor"""
    return _nearest(g, input, output_size, *scales, exact=True, op="_upsample_nearest_exact3d")


@symbolic("aten::upsample_linear1d")
def upsample_linear1d(g, input, output_size, align_corners, *scales):
    """upsample_linear1d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor"""
    return _interp(g, "linear", input, output_size, align_corners, *scales, op="upsample_linear1d")


@symbolic("aten::upsample_bilinear2d")
def upsample_bilinear2d(g, input, output_size, align_corners, *scales):
    """upsample_bilinear2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor"""
    return _interp(g, "linear", input, output_size, align_corners, *scales, op="upsample_bilinear2d")


@symbolic("aten::upsample_trilinear3d")
def upsample_trilinear3d(g, input, output_size, align_corners, *scales):
    """upsample_trilinear3d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor"""
    return _interp(g, "linear", input, output_size, align_corners, *scales, op="upsample_trilinear3d")


@symbolic("aten::upsample_bicubic2d")
def upsample_bicubic2d(g, input, output_size, align_corners, *scales):
    """upsample_bicubic2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor"""
    return _interp(g, "cubic", input, output_size, align_corners, *scales, op="upsample_bicubic2d")


@symbolic("aten::_upsample_bilinear2d_aa")
def _upsample_bilinear2d_aa(g, input, output_size, align_corners, *scales):
    """_upsample_bilinear2d_aa.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor"""
    return _interp(g, "linear", input, output_size, align_corners, *scales, antialias=True,
                   op="_upsample_bilinear2d_aa")


@symbolic("aten::_upsample_bicubic2d_aa")
def _upsample_bicubic2d_aa(g, input, output_size, align_corners, *scales):
    """_upsample_bicubic2d_aa.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor"""
    return _interp(g, "cubic", input, output_size, align_corners, *scales, antialias=True,
                   op="_upsample_bicubic2d_aa")


_INTERPOLATE_MODES = {"nearest": ("nearest", False), "nearest-exact": ("nearest", True), "linear": ("linear", False),
                      "bilinear": ("linear", False), "trilinear": ("linear", False), "bicubic": ("cubic", False)}


@symbolic("aten::__interpolate")
def __interpolate(g, input, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias=None):
    """__interpolate.size_list_scale_list(Tensor input, int[]? size=None, float[]? scale_factor=None, str mode="nearest", bool? align_corners=None, bool? recompute_scale_factor=None, bool antialias=False) -> Tensor"""
    name = sh.const(mode, "nearest")
    if name not in _INTERPOLATE_MODES:
        sh.unimplemented("__interpolate", f"mode {name!r}")
    kind, exact = _INTERPOLATE_MODES[name]
    spatial = (sh.rank(input) or 3) - 2
    if not sh.is_none(size) and isinstance(sh.const(size, None), int):
        size = [sh.const(size)] * spatial
    scales = _scale_list([scale_factor], spatial)
    dims = sh.sizes(input)
    if sh.const(recompute_scale_factor, None) and isinstance(scales, list) and dims is not None \
            and all(isinstance(d, int) for d in dims[2:]):
        size, scales = [int(np.floor(d * s)) for d, s in zip(dims[2:], scales)], None
    return resize(g, input, size, scales, kind, bool(sh.const(align_corners, None)),
                  antialias=bool(sh.const(antialias, False)), exact=exact, op="__interpolate")
