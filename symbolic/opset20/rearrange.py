"""Rearranging at opset 20: GridSample for N-D inputs with the modes renamed (linear, cubic);
affine_grid as AffineGrid."""

from __future__ import annotations

import torch

from .. import symbolic_helper as sh
from ..opset16.rearrange import GRID_PADDING
from ..registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(20)

GRID_MODES = {0: "linear", 1: "nearest", 2: "cubic"}


@_onnx_symbolic("aten::grid_sampler")
@sh.parse_args("v", "v", "i", "i", "b")
def grid_sampler(g, input, grid, interpolation_mode, padding_mode, align_corners):
    """grid_sampler(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners) -> Tensor"""
    return g.op("GridSample", input, grid, mode_s=GRID_MODES[interpolation_mode],
                padding_mode_s=GRID_PADDING[padding_mode], align_corners_i=int(align_corners))


@_onnx_symbolic("aten::affine_grid_generator")
@sh.parse_args("v", "is", "b")
def affine_grid_generator(g, theta, size, align_corners):
    """affine_grid_generator(Tensor theta, SymInt[] size, bool align_corners) -> Tensor"""
    return g.op("AffineGrid", theta, g.constant(size, torch.int64), align_corners_i=int(align_corners))
