"""Rearranging at opset 16: grid_sampler as GridSample (4-D inputs only until opset 20)."""

from __future__ import annotations

from .. import symbolic_helper as sh
from ..registry import declare_opset_requirements, onnx_symbolic

_onnx_symbolic = onnx_symbolic(16)

# When an op here needs a higher opset than it is registered at: the condition (the reason its
# conversion gives sh.needs_opset) -> the lowest opset that converts it (docs/supported_ops.md).
declare_opset_requirements({
    "aten::grid_sampler": {"a 5-D (volumetric) input": 20},
})

GRID_MODES = {0: "bilinear", 1: "nearest", 2: "bicubic"}
GRID_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


@_onnx_symbolic("aten::grid_sampler")
@sh.parse_args("v", "v", "i", "i", "b")
def grid_sampler(g, input, grid, interpolation_mode, padding_mode, align_corners):
    """grid_sampler(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners) -> Tensor"""
    if input.rank != 4:
        sh.needs_opset(20, "a 5-D (volumetric) input", input)
    return g.op("GridSample", input, grid, mode_s=GRID_MODES[interpolation_mode],
                padding_mode_s=GRID_PADDING[padding_mode], align_corners_i=int(align_corners))
