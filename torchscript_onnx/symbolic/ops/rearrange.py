"""Rearranging at opset 9: channel shuffle, im2col (F.unfold) and col2im (F.fold) as Conv /
ConvTranspose with one-hot kernels, affine_grid as a MatMul with a constant base grid.
grid_sampler starts at opset 16 (GridSample).

The versions for higher opsets follow, each registered with ``since=N``: opsets 16, 18, 20."""

from __future__ import annotations

import torch

from torchscript_onnx.builder import onnx_ops

from .. import symbolic_helper as sh
from ..registry import declare_opset_requirements, symbolic
from .nn import conv_transpose


# When an op here needs a higher opset than it is registered at: the condition (the reason its
# conversion states with OPSET.require) -> the lowest opset that converts it (docs/supported_ops.md).
OPSET = declare_opset_requirements({
    "aten::col2im": {"a channel dim sized at runtime (ONNX Col2Im)": 18},
    "aten::grid_sampler": {"a 5-D (volumetric) input": 20},
})


def _shuffle(g, self, groups: int, op: str):
    dims = sh.sizes(self)
    if dims is None or len(dims) < 2 or not isinstance(dims[1], int):
        sh.value_error(f"{op}: the channel dim must be static", self)
    channels = dims[1]
    if groups <= 0 or channels % groups:
        sh.value_error(f"{op}: {channels} channels do not split into {groups} groups", self)
    split = g.op("Reshape", self, g.constant([0, groups, channels // groups, -1], torch.int64))
    moved = g.op("Transpose", split, perm_i=[0, 2, 1, 3])
    return g.op("Reshape", moved, onnx_ops.shape_of(g, self))


@symbolic("aten::channel_shuffle")
@sh.parse_args("v", "i")
def channel_shuffle(g, self, groups):
    """channel_shuffle(Tensor self, SymInt groups) -> Tensor"""
    return _shuffle(g, self, groups, "channel_shuffle")


@symbolic("aten::native_channel_shuffle")
@sh.parse_args("v", "i")
def native_channel_shuffle(g, self, groups):
    """native_channel_shuffle(Tensor self, SymInt groups) -> Tensor"""
    return _shuffle(g, self, groups, "native_channel_shuffle")


def _one_hot_kernels(channels: int, kernel: list[int], dtype: torch.dtype) -> torch.Tensor:
    """(channels * kh * kw, 1, kh, kw): filter c * K + k picks kernel offset k of channel c, the
    order of im2col's rows."""
    blocks = kernel[0] * kernel[1]
    eye = torch.eye(blocks, dtype=dtype).reshape(blocks, 1, kernel[0], kernel[1])
    return eye.repeat(channels, 1, 1, 1)


def _float_input(self, op: str):
    if self.dtype is not None and not self.dtype.is_floating_point:
        sh.value_error(f"{op}: only floating-point inputs are supported", self)


@symbolic("aten::im2col")
@sh.parse_args("v", "is", "is", "is", "is")
def im2col(g, self, kernel_size, dilation, padding, stride):
    """im2col(Tensor self, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride) -> Tensor"""
    # A grouped Conv whose one-hot filters copy each kernel offset of each channel.
    _float_input(self, "im2col")
    unbatched = self.rank == 3
    x = onnx_ops.unsqueeze(g, self, [0]) if unbatched else self
    if not sh.is_static(x, 1):
        sh.value_error("im2col: the channel dim must be static", self)
    channels = sh.sizes(x)[1]
    weight = g.constant(_one_hot_kernels(channels, kernel_size, x.dtype or torch.float32))
    conv = g.op("Conv", x, weight, kernel_shape_i=kernel_size, dilations_i=dilation, strides_i=stride,
                pads_i=padding + padding, group_i=channels)
    blocks = channels * kernel_size[0] * kernel_size[1]
    out = g.op("Reshape", conv, g.constant([0, blocks, -1], torch.int64))
    return onnx_ops.squeeze(g, out, [0]) if unbatched else out


@symbolic("aten::col2im")
@sh.parse_args("v", "is", "is", "is", "is", "is")
def col2im(g, self, output_size, kernel_size, dilation, padding, stride):
    """col2im(Tensor self, SymInt[2] output_size, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride) -> Tensor"""
    # The transpose of im2col: a grouped ConvTranspose with the same one-hot filters (Col2Im at 18).
    unbatched = self.rank == 2
    x = onnx_ops.unsqueeze(g, self, [0]) if unbatched else self
    _float_input(self, "col2im")
    blocks = kernel_size[0] * kernel_size[1]
    if not sh.is_static(x, 1):
        OPSET.require(g, "a channel dim sized at runtime (ONNX Col2Im)", self)
    channels = sh.sizes(x)[1] // blocks
    grid = [(size + 2 * p - d * (k - 1) - 1) // s + 1
            for size, k, d, p, s in zip(output_size, kernel_size, dilation, padding, stride)]
    extra = [size - ((n - 1) * s - 2 * p + d * (k - 1) + 1)
             for size, n, k, d, p, s in zip(output_size, grid, kernel_size, dilation, padding, stride)]
    columns = g.op("Reshape", x, g.constant([0, channels * blocks] + grid, torch.int64))
    weight = g.constant(_one_hot_kernels(channels, kernel_size, x.dtype or torch.float32))
    out = conv_transpose(g, columns, weight, None, dict(kernel_shape_i=kernel_size, dilations_i=dilation,
                                                        strides_i=stride, pads_i=padding + padding, group_i=channels),
                         extra)
    return onnx_ops.squeeze(g, out, [0]) if unbatched else out


@symbolic("aten::affine_grid_generator")
@sh.parse_args("v", "is", "b")
def affine_grid_generator(g, theta, size, align_corners):
    """affine_grid_generator(Tensor theta, SymInt[] size, bool align_corners) -> Tensor"""
    # The base grid ([x, y, 1] per output pixel) is a constant; each batch maps it by theta.
    dtype = theta.dtype or torch.float32
    spatial = len(size) - 2
    identity = torch.eye(spatial, spatial + 1, dtype=dtype).unsqueeze(0)
    coords = torch.nn.functional.affine_grid(identity, [1] + list(size[1:]), align_corners=align_corners)
    base = torch.cat([coords.reshape(-1, spatial), torch.ones(coords[..., 0].numel(), 1, dtype=dtype)], dim=1)
    mapped = g.op("MatMul", g.constant(base), g.op("Transpose", theta, perm_i=[0, 2, 1]))
    return g.op("Reshape", mapped, g.constant([size[0]] + list(size[2:]) + [spatial], torch.int64))


# ---------------------------------------------------------------------------------------------
# Opset 16. Rearranging at opset 16: grid_sampler as GridSample (4-D inputs only until opset 20).


GRID_MODES = {0: "bilinear", 1: "nearest", 2: "bicubic"}
GRID_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


@symbolic("aten::grid_sampler", since=16)
@sh.parse_args("v", "v", "i", "i", "b")
def grid_sampler(g, input, grid, interpolation_mode, padding_mode, align_corners):
    """grid_sampler(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners) -> Tensor"""
    if input.rank != 4:
        OPSET.require(g, "a 5-D (volumetric) input", input)
    return g.op("GridSample", input, grid, mode_s=GRID_MODES[interpolation_mode],
                padding_mode_s=GRID_PADDING[padding_mode], align_corners_i=int(align_corners))


# ---------------------------------------------------------------------------------------------
# Opset 18. Rearranging at opset 18: col2im as Col2Im.


@symbolic("aten::col2im", since=18)
@sh.parse_args("v", "is", "is", "is", "is", "is")
def col2im_18(g, self, output_size, kernel_size, dilation, padding, stride):
    """col2im(Tensor self, SymInt[2] output_size, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride) -> Tensor"""
    unbatched = self.rank == 2
    x = onnx_ops.unsqueeze(g, self, [0]) if unbatched else self
    out = g.op("Col2Im", x, g.constant(output_size, torch.int64), g.constant(kernel_size, torch.int64),
               dilations_i=dilation, pads_i=padding + padding, strides_i=stride)
    return onnx_ops.squeeze(g, out, [0]) if unbatched else out


# ---------------------------------------------------------------------------------------------
# Opset 20. Rearranging at opset 20: GridSample for N-D inputs with the modes renamed (linear, cubic);
# affine_grid as AffineGrid.


GRID_MODES_20 = {0: "linear", 1: "nearest", 2: "cubic"}


@symbolic("aten::grid_sampler", since=20)
@sh.parse_args("v", "v", "i", "i", "b")
def grid_sampler_20(g, input, grid, interpolation_mode, padding_mode, align_corners):
    """grid_sampler(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners) -> Tensor"""
    return g.op("GridSample", input, grid, mode_s=GRID_MODES_20[interpolation_mode],
                padding_mode_s=GRID_PADDING[padding_mode], align_corners_i=int(align_corners))


@symbolic("aten::affine_grid_generator", since=20)
@sh.parse_args("v", "is", "b")
def affine_grid_generator_20(g, theta, size, align_corners):
    """affine_grid_generator(Tensor theta, SymInt[] size, bool align_corners) -> Tensor"""
    return g.op("AffineGrid", theta, g.constant(size, torch.int64), align_corners_i=int(align_corners))
