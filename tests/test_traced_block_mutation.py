"""Traced models that call scripted functions whose If/Loop blocks write into tensors and lists
defined outside them (``t[:] = v``, ``t[i, j] = v``, ``t[1] += v``, ``l.append(v)``).

The tracer inlines a scripted callee as it is: its blocks return nothing for those writes, so the
converter must carry each written value out of the If (as a branch output) and through the Loop
(as a carried value), as it does for scripted models. Each case is traced, exported, and run in
onnxruntime against eager PyTorch on the example and, with dynamic axes, on inputs of other sizes
that also take the other branch or another trip count.
"""

from __future__ import annotations

import dataclasses
import io
from typing import List, Tuple

import numpy as np
import onnxruntime as ort
import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from torchscript_onnx import export


# -- scripted callees -----------------------------------------------------------------------------

@torch.jit.script
def _fill_when_empty(x: Tensor, state: Tensor) -> Tuple[Tensor, Tensor]:
    """Two outer tensors written through full slices, only one of them in the else branch."""
    first = torch.zeros(2, x.size(0), x.size(1))
    second = torch.zeros(2, x.size(0), x.size(1))
    if state.size(0) == 0:
        first[:] = x + first[:]
        second[:] = x * 2
        second[:] = second[:] - 1
    else:
        first[:] = x * 4
    return first, second


@torch.jit.script
def _loop_in_branch(x: Tensor, state: Tensor) -> Tuple[Tensor, Tensor]:
    """Writes inside a loop inside a branch, and a write that reads a view made before it."""
    acc = torch.zeros(2, x.size(0), x.size(1))
    other = torch.ones(2, x.size(0), x.size(1))
    if state.size(0) == 0:
        for i in range(3):
            acc[:] = x * float(i) + acc[:]
            other[:] = other[:] * 2
    elif state.size(0) == 1:
        before = acc[:]
        acc[:] = state + before + 1
    else:
        acc[:] = x - 5
    return acc, other


@torch.jit.script
def _rebind_then_write(x: Tensor, state: Tensor) -> Tensor:
    """One branch rebinds the tensor, the nested one writes into it: both give the same dtype."""
    out = torch.zeros(2, x.size(0), x.size(1))
    if state.size(0) < 2:
        out = out * 3 + 1
        if state.size(0) == 0:
            out[:] = x * 3
        else:
            out = out + 2
    return out


@torch.jit.script
def _alias_then_rebind(x: Tensor, state: Tensor) -> Tuple[Tensor, Tensor]:
    """``ref`` aliases ``out``: the write before the rebinding shows in ``ref``, the later one not."""
    out = torch.zeros(2, x.size(0), x.size(1))
    ref = out
    if state.size(0) == 0:
        out[:] = x + 3
        out = out * 5
        out[:] = x - 4
    else:
        out = out + 2
    return out, ref


@torch.jit.script
def _inplace_on_row(x: Tensor, n: Tensor) -> Tensor:
    """In-place arithmetic on a selected row, in a branch and in a loop of runtime trip count."""
    out = torch.ones(2, x.size(0), x.size(1))
    if x.size(0) == 2:
        out[1] += x * 2
        out[1] /= x.abs() + 3
    for i in range(n.size(0)):
        out[1] += x
        out[1] /= float(i) + 2
        out[0] -= 1
    return out


@torch.jit.script
def _mask_in_nested_loops(x: Tensor) -> Tensor:
    """Element writes in nested loops, mixed with rebinding of the written tensor. (The sizes are read
    here: a traced caller would pass ``x.size(0)`` as the constant it had when traced.)"""
    rows, cols = x.size(0), x.size(1)
    mask = torch.zeros(rows, cols, dtype=x.dtype) - 1
    for r in range(rows):
        for c in range(cols):
            mask = mask * 0.5
            mask[r, c] = float(r + c)
            mask[0, 0] = 7.0
    for r in range(rows):
        mask[r, r % cols] = -2.0
    return mask


@torch.jit.script
def _rows_filled(boxes: List[Tensor]) -> Tensor:
    """A list appended to in a loop over an enumerate, then read after it."""
    found = []
    for i, b in enumerate(boxes):
        found.append(torch.full_like(b[:, 0], float(i)) + b[:, 1])
    return found[1] - found[0]


@torch.jit.script
def _top_level_writes(x: Tensor) -> Tuple[Tensor, Tensor]:
    """Mutations outside any block in the callee: list appends and in-place ops on a fresh tensor."""
    parts = []
    parts.append(x[0] * 2)
    parts.append(x[1])
    y = x * 0
    y.add_(3)
    y[0] = x[1]
    return torch.stack(parts), y


@torch.jit.script
def _upsample(x: Tensor) -> Tensor:
    return F.interpolate(x, mode="nearest", scale_factor=2.0)


# -- traced models ---------------------------------------------------------------------------------

class Calls(nn.Module):
    """Traced wrapper that calls a scripted callee and does some work around it."""

    def __init__(self, callee, prefix=()):
        super().__init__()
        self.callee, self.prefix = callee, prefix

    def forward(self, *args):
        result = self.callee(*self.prefix, *args)
        if isinstance(result, tuple):
            return tuple(r + 0.5 for r in result)
        return result + 0.5


class RowsFilled(nn.Module):
    def forward(self, x):
        return _rows_filled([x, x * 2, x + 1])


class MaskFromSizes(nn.Module):
    def forward(self, x):
        return _mask_in_nested_loops(x) + x


@dataclasses.dataclass
class Case:
    name: str
    model: nn.Module
    args: tuple
    others: list  # inputs of other sizes (with dynamic_axes) or other values
    dynamic_axes: dict | None
    opsets: tuple = (11, 13, 17)


def _state(*sizes):
    return torch.rand(*sizes)


X = torch.rand(3, 4)

CASES = [
    Case("if_full_slice_writes", Calls(_fill_when_empty), (X, _state(0, 3, 4)),
         [(torch.rand(5, 2), _state(0, 5, 2)), (torch.rand(5, 2), _state(1, 5, 2))],
         {"x": [0, 1], "state": [0, 1, 2]}),
    Case("loop_in_if_writes", Calls(_loop_in_branch), (X, _state(0, 3, 4)),
         [(torch.rand(2, 5), _state(0, 2, 5)), (torch.rand(2, 5), _state(1, 2, 5)),
          (torch.rand(2, 5), _state(2, 2, 5))],
         {"x": [0, 1], "state": [0, 1, 2]}),
    Case("rebind_then_write_in_nested_if", Calls(_rebind_then_write), (X, _state(0, 3, 4)),
         [(torch.rand(2, 2), _state(1, 2, 2)), (torch.rand(2, 2), _state(3, 2, 2)),
          (torch.rand(6, 1), _state(0, 6, 1))],
         {"x": [0, 1], "state": [0, 1, 2]}),
    Case("alias_sees_write_before_rebinding", Calls(_alias_then_rebind), (X, _state(0, 3, 4)),
         [(torch.rand(2, 5), _state(1, 2, 5)), (torch.rand(4, 4), _state(0, 4, 4))],
         {"x": [0, 1], "state": [0, 1, 2]}),
    Case("inplace_ops_on_a_row", Calls(_inplace_on_row), (torch.rand(2, 3) + 0.5, torch.rand(3)),
         [(torch.rand(4, 3) + 0.5, torch.rand(1)), (torch.rand(2, 5) + 0.5, torch.rand(5))],
         {"x": [0, 1], "n": [0]}),
    Case("inplace_ops_on_a_row_static", Calls(_inplace_on_row), (torch.rand(2, 3) + 0.5, torch.rand(3)),
         [(torch.rand(2, 3) + 0.5, torch.rand(3))], None),
    Case("element_writes_in_nested_loops", MaskFromSizes(), (torch.rand(3, 4),),
         [(torch.rand(5, 2),), (torch.rand(1, 1),)], {"x": [0, 1]}),
    Case("list_filled_in_loop", RowsFilled(), (torch.rand(4, 3),), [(torch.rand(7, 2),)], {"x": [0, 1]},
         opsets=(13, 17)),
    Case("mutations_outside_blocks", Calls(_top_level_writes), (torch.rand(3, 4),), [(torch.rand(3, 6),)],
         {"x": [1]}, opsets=(9, 13, 17)),
    Case("interpolate_scale_factor", Calls(_upsample), (torch.rand(1, 2, 3, 4, 5),), [], None,
         opsets=(9, 13, 17)),
    Case("interpolate_scale_factor_dynamic", Calls(_upsample), (torch.rand(1, 2, 3, 4, 5),),
         [(torch.rand(2, 1, 2, 3, 4),)], {"x": [0, 1, 2, 3, 4]}, opsets=(11, 13, 17)),
]


def _input_names(case: Case) -> list[str]:
    if case.dynamic_axes:
        return list(case.dynamic_axes)[:len(case.args)] + [f"in{k}" for k in range(len(case.dynamic_axes),
                                                                                   len(case.args))]
    return [f"in{k}" for k in range(len(case.args))]


def _flat(result) -> list:
    return list(result) if isinstance(result, tuple) else [result]


@pytest.mark.parametrize(("case", "opset"), [pytest.param(c, o, id=f"{c.name}-{o}") for c in CASES for o in c.opsets])
def test_traced_callee_mutates_in_blocks(case: Case, opset: int):
    names = _input_names(case)
    buffer = io.BytesIO()
    export(case.model, case.args, buffer, opset_version=opset, input_names=names,
           dynamic_axes=case.dynamic_axes)
    session = ort.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
    kept = {i.name for i in session.get_inputs()}
    for args in [case.args, *case.others]:
        feed = {name: arg.numpy() for name, arg in zip(names, args) if name in kept}
        got = session.run(None, feed)
        expected = [t.detach().numpy() for t in _flat(case.model(*args))]
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert g.shape == e.shape
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)
