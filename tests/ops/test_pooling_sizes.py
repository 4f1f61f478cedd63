"""Pooling follows torch's output-size rule at every size: a table over kernel, stride, padding,
dilation (max), ceil_mode and count_include_pad (avg), 1-3 spatial dims.

torch's rule per spatial dim of size L: out = floor_or_ceil((L + 2p - d(k - 1) - 1) / s) + 1, and in
ceil mode a last window that would start in the right padding is dropped ((out - 1) s >= L + p).
Each row runs three ways: exported with static sizes at its traced size (at a rotating opset) and
at its other size (opset 9 where the row allows it: the lowering without ceil_mode attributes), and
exported with dynamic dims at the traced size, then run at both sizes. Every run goes through
onnxruntime with its default session options against eager PyTorch. The geometries pick sizes on
both sides of the drop rule; test_table_reaches_the_drop_rule checks that they do.
"""

from __future__ import annotations

import dataclasses
import itertools

import pytest
import torch
from torch import nn

from tests.optable import Case, run_case

# Opsets the rows rotate through: 10 brings ceil_mode and MaxPool dilations, 19 AveragePool's
# dilations and reworked ceil mode, 22 the spec's "windows starting in the right padding are
# ignored"; onnxruntime is expected to follow torch at all of them.
OPSETS = (10, 11, 13, 17, 19, 22, 26)


@dataclasses.dataclass(frozen=True)
class Geometry:
    kernel: tuple
    stride: tuple
    padding: tuple
    sizes: tuple  # (traced spatial sizes, other spatial sizes)
    dilation: tuple = ()  # max pooling only; () means 1


def geometry(kernel, stride, padding, traced, other, dilation=None) -> Geometry:
    n = len(traced)

    def spread(v):
        return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n

    return Geometry(spread(kernel), spread(stride), spread(padding), (tuple(traced), tuple(other)),
                    spread(dilation) if dilation is not None else ())


AVG_GEOMETRIES = [
    geometry(2, 2, 1, [5], [8]),
    geometry(3, 3, 1, [5], [7]),
    geometry(3, 2, 0, [6], [9]),
    geometry(1, 3, 0, [5], [6]),  # stride over kernel: a window can start past the input without padding
    geometry(2, 2, 1, [4, 5], [4, 7]),  # the avg_pool2d (2x2x4x5, dim 3 dynamic)
    geometry((2, 3), (2, 1), 1, [5, 6], [8, 7]),
    geometry(3, (3, 2), (1, 0), [7, 5], [8, 6]),
    geometry(4, 3, 2, [9, 10], [11, 12]),
    geometry(2, 2, 1, [3, 5, 4], [4, 3, 5]),
    geometry((3, 2, 2), (2, 3, 1), (1, 1, 0), [4, 5, 3], [5, 7, 4]),
]

MAX_GEOMETRIES = [
    geometry(2, 2, 1, [5], [8]),
    geometry(3, 3, 1, [7], [10], dilation=2),
    geometry(2, 3, 1, [5], [7]),
    geometry(3, 2, 1, [9, 10], [6, 13]),
    geometry((2, 3), (3, 2), 1, [7, 8], [9, 6], dilation=(2, 1)),
    geometry(2, 2, 1, [5, 7], [4, 6]),
    geometry(2, 2, 1, [3, 5, 4], [4, 3, 5]),
    geometry((3, 2, 2), (2, 2, 3), (1, 1, 0), [5, 6, 5], [6, 7, 4], dilation=(1, 2, 1)),
]


@dataclasses.dataclass(frozen=True)
class Row:
    op: str  # "avg" or "max"
    geometry: Geometry
    ceil_mode: bool
    count_include_pad: bool = True  # avg only
    return_indices: bool = False  # max only

    @property
    def n(self) -> int:
        return len(self.geometry.kernel)

    @property
    def name(self) -> str:
        g = self.geometry
        parts = [f"{self.op}{self.n}d", "k" + "x".join(map(str, g.kernel)), "s" + "x".join(map(str, g.stride)),
                 "p" + "x".join(map(str, g.padding))]
        if g.dilation:
            parts.append("d" + "x".join(map(str, g.dilation)))
        parts.append("ceil" if self.ceil_mode else "floor")
        if self.op == "avg":
            parts.append("include_pad" if self.count_include_pad else "exclude_pad")
        if self.return_indices:
            parts.append("indices")
        return "_".join(parts)

    def module(self) -> nn.Module:
        g = self.geometry
        if self.op == "avg":
            pool = (nn.AvgPool1d, nn.AvgPool2d, nn.AvgPool3d)[self.n - 1]
            return pool(g.kernel, g.stride, g.padding, ceil_mode=self.ceil_mode,
                        count_include_pad=self.count_include_pad)
        pool = (nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d)[self.n - 1]
        return pool(g.kernel, g.stride, g.padding, dilation=g.dilation or 1, ceil_mode=self.ceil_mode,
                    return_indices=self.return_indices)


ROWS = [Row("avg", g, ceil, include) for g in AVG_GEOMETRIES
        for ceil, include in itertools.product((False, True), (False, True))]
ROWS += [Row("max", g, ceil, return_indices=ceil and k % 2 == 1) for k, g in enumerate(MAX_GEOMETRIES)
         for ceil in (False, True)]


def _input(row: Row, spatial, batch: int = 2) -> tuple:
    return (torch.randn(batch, 3, *spatial),)


def _opset(k: int) -> int:
    return OPSETS[k % len(OPSETS)]


def _static_case(row: Row, which: int) -> Case:
    spatial = row.geometry.sizes[which]
    return Case(f"{row.name}-static{which}", row.module(), lambda: _input(row, spatial))


def _dynamic_case(row: Row, k: int) -> Case:
    """Every third row makes only the last spatial dim dynamic (as in the issue), the others the
    batch and every spatial dim."""
    traced, other = row.geometry.sizes
    if k % 3 == 0:
        axes = {row.n + 1: "last"}
        other = traced[:-1] + other[-1:]
        batch = 2
    else:
        axes = {0: "batch", **{2 + i: f"d{i}" for i in range(row.n)}}
        batch = 3
    return Case(f"{row.name}-dynamic", row.module(), lambda: _input(row, traced),
                export_options={"input_names": ["x"], "dynamic_axes": {"x": axes}},
                other_inputs=lambda: [_input(row, other, batch)])


def _static_other_opset(row: Row, k: int) -> int:
    """Opset 9 lowers ceil mode with explicit end padding; dilation needs 10."""
    return 9 if not row.geometry.dilation else _opset(k + 3)


PARAMS = []
for k, row in enumerate(ROWS):
    PARAMS.append(pytest.param(_static_case(row, 0), _opset(k), id=f"{row.name}-static-traced"))
    PARAMS.append(pytest.param(_static_case(row, 1), _static_other_opset(row, k), id=f"{row.name}-static-other"))
    PARAMS.append(pytest.param(_dynamic_case(row, k), _opset(k + 1), id=f"{row.name}-dynamic"))


@pytest.mark.parametrize("case, opset", PARAMS)
def test_pooling_size(case, opset):
    run_case(case, opset)


def _drops_a_window(size: int, k: int, s: int, p: int, d: int) -> bool:
    """Whether torch's ceil mode drops a last window starting in the right padding at ``size``."""
    out = -(-(size + 2 * p - d * (k - 1) - 1) // s) + 1
    return (out - 1) * s >= size + p


def test_table_reaches_the_drop_rule():
    """The table is only worth its time if the rule matters in it: for each pooling kind (max,
    avg counting padding, avg not counting it) and 1-3 dims, some checked size drops a window,
    with padding and without, and some ceil-mode size drops none; and every parameter varies."""
    reached = set()
    for row in ROWS:
        if not row.ceil_mode:
            continue
        g = row.geometry
        kind = (row.op, row.count_include_pad if row.op == "avg" else None)
        for spatial in g.sizes:
            for i, size in enumerate(spatial):
                d = g.dilation[i] if g.dilation else 1
                drops = _drops_a_window(size, g.kernel[i], g.stride[i], g.padding[i], d)
                reached.add((kind, row.n, drops))
                if drops:
                    reached.add((kind, "padding" if g.padding[i] else "no padding"))
    kinds = [("max", None), ("avg", True), ("avg", False)]
    missing = [(kind, n, drops) for kind in kinds for n in (1, 2, 3) for drops in (True, False)
               if (kind, n, drops) not in reached]
    missing += [(kind, pad) for kind in kinds[1:] for pad in ("padding", "no padding") if (kind, pad) not in reached]
    missing += [(("max", None), "padding")] if (("max", None), "padding") not in reached else []
    assert not missing, f"no row checks these: {missing}"
    values = {field: {getattr(g, field) for g in AVG_GEOMETRIES + MAX_GEOMETRIES}
              for field in ("kernel", "stride", "padding")}
    assert all(len(v) >= 4 for v in values.values()), values
    assert {g.dilation for g in MAX_GEOMETRIES} > {()}
