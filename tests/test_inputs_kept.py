"""Which inputs an exported graph declares, traced and scripted, against the legacy exporter.

Callers feed an exported model by the names and positions legacy gives its inputs, so an input
legacy reads at runtime stays declared with us even where our graph folds what read it (a Shape,
a list length, a check that can only raise); an unread input legacy declares optional is optional
here too, so a caller may leave it out as legacy lets it.
"""

from __future__ import annotations

import io
import warnings
from typing import List, Optional, Tuple

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from torch import Tensor

from torchscript_onnx import export


class DimArange(torch.nn.Module):
    def forward(self, input):
        return torch._dim_arange(input, 1) * 2


class CopyInto(torch.nn.Module):
    def forward(self, x, source):
        x.copy_(source)  # source broadcasts to x's shape: legacy reads x's Shape
        return x


class ListLength(torch.nn.Module):
    def forward(self, x):
        pieces = x.unbind()
        kept = [pieces[0]]
        kept.append(pieces[2])
        return torch.ones(len(kept)) * 3


class RaisesOnNegative(torch.nn.Module):
    def forward(self, t: Tensor) -> Tuple[Tensor, Tensor]:
        if float(t) < 0:
            raise ValueError("negative")
        else:  # the If has results: legacy keeps it, and reads t
            return torch.ones(3), torch.zeros(2)


class RaisesOnNegativeThenReturns(torch.nn.Module):
    def forward(self, t: Tensor) -> Tuple[Tensor, Tensor]:
        if float(t) < 0:
            raise ValueError("negative")
        return torch.ones(3), torch.zeros(2)  # the If has no results: legacy drops it, and t


class FirstGiven(torch.nn.Module):
    def forward(self, a: Optional[Tensor] = torch.ones(2, 3), b: Optional[Tensor] = torch.zeros(2, 3)):
        if a is not None:
            return a * 2
        if b is not None:
            return b * 3
        return torch.tensor(-1.0)


@torch.jit.script
def _first_filled(pieces: List[Tensor]) -> Tensor:
    filled = []
    for k, piece in enumerate(pieces):
        filled.append(torch.full_like(piece[:, 0], k))
    return filled[0]


class CallsAScriptedLoop(torch.nn.Module):
    def forward(self, x):
        return _first_filled([x, x]) + 1  # the loop reads x's rows only for their shape


class CountsRows(torch.nn.Module):
    def forward(self, x):
        total = torch.zeros(2)
        for _ in range(x.size(0)):  # x's size alone: legacy folds it too
            total = total + 1
        return total


def scripted(module):
    return lambda: torch.jit.script(module)


def traced(module):
    return lambda: module


# (id, model factory, args, opset): the graph's inputs must be legacy's, by name
CASES = [
    ("dim_arange-opset9", traced(DimArange()), (torch.ones(4, 5),), 9),  # no Range before 11
    ("dim_arange-opset13", traced(DimArange()), (torch.ones(4, 5),), 13),  # folded: no input
    ("copy_-traced", traced(CopyInto()), (torch.randn(3, 4), torch.randn(3, 1)), 13),
    ("unbind-list-scripted", scripted(ListLength()), (torch.randn(5, 2),), 13),
    ("raise-guard-scripted", scripted(RaisesOnNegative()), (torch.ones(1),), 13),
    ("raise-then-return-scripted", scripted(RaisesOnNegativeThenReturns()), (torch.ones(1),), 13),
    ("scripted-loop-in-a-trace", traced(CallsAScriptedLoop()), (torch.rand(4, 3),), 13),
    ("loop-over-a-size", scripted(CountsRows()), (torch.rand(4, 3),), 13),
    ("optional-both-given", scripted(FirstGiven()), (torch.randn(2, 3), torch.randn(2, 3)), 17),
    ("optional-both-given-opset13", scripted(FirstGiven()), (torch.randn(2, 3), torch.randn(2, 3)), 13),
]


def _legacy(model, args, opset):
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, f, dynamo=False, opset_version=opset)
    return onnx.load_from_string(f.getvalue())


def _run(proto, feeds):
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


@pytest.mark.parametrize("make, args, opset", [pytest.param(*row[1:], id=row[0]) for row in CASES])
def test_graph_inputs_are_legacys(make, args, opset):
    ours = export(make(), args, None, opset_version=opset)
    legacy = _legacy(make(), args, opset)
    assert [i.name for i in ours.graph.input] == [i.name for i in legacy.graph.input]
    _check_fed_by_position(ours, make(), args)


def test_scripted_copy_source_stays_an_input():
    """Legacy keeps both inputs (it reads x's Shape to broadcast the source); it names the
    source ``source.2`` after its in-place rewriting renumbers it, which we do not mimic."""
    args = (torch.randn(3, 4), torch.randn(3, 1))
    ours = export(torch.jit.script(CopyInto()), args, None, opset_version=13)
    assert len(ours.graph.input) == len(_legacy(torch.jit.script(CopyInto()), args, 13).graph.input) == 2
    _check_fed_by_position(ours, CopyInto(), args)


def _check_fed_by_position(ours, model, args):
    """A caller feeding every input legacy declares, by position, gets eager's answer."""
    feeds = {i.name: a.numpy() for i, a in zip(ours.graph.input, args)}
    expected = model(*[a.clone() for a in args])
    expected = expected if isinstance(expected, tuple) else (expected,)
    for got, want in zip(_run(ours, feeds), expected):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-6, atol=1e-6)


def test_an_unread_optional_input_may_be_left_out_as_legacy_allows():
    """Given only ``b`` by keyword, the scripted graph has inputs for both parameters (legacy lays
    them out so); the one our graph does not read is an ONNX optional a caller can omit."""
    model = torch.jit.script(FirstGiven())
    b = torch.randn(2, 3)
    ours = export(model, ({"b": b},), None, opset_version=17)
    legacy = _legacy(model, ({"b": b},), 17)
    assert [i.name for i in ours.graph.input] == [i.name for i in legacy.graph.input]
    optional = [i.name for i in ours.graph.input if i.type.HasField("optional_type")]
    assert optional == [i.name for i in ours.graph.input][1:]
    (got,) = _run(ours, {ours.graph.input[0].name: b.numpy()})
    (want,) = _run(legacy, {legacy.graph.input[0].name: b.numpy()})
    np.testing.assert_allclose(got, want)


class Mixed(torch.nn.Module):
    def forward(self, x, y: Optional[Tensor] = torch.ones(2, 3), z: Optional[Tensor] = torch.zeros(2, 3)):
        if y is not None:
            return x - y
        if z is not None:
            return x * z
        return x


@pytest.mark.parametrize("args, names", [
    pytest.param((torch.randn(2, 3), None, torch.randn(2, 3)), ["x.1", "z.1"], id="y-None"),
    pytest.param((torch.randn(2, 3), torch.randn(2, 3), None), ["x.1", "y.1"], id="z-None"),
    pytest.param((torch.randn(2, 3), None, None), ["x.1"], id="both-None"),
    pytest.param((torch.randn(2, 3), {"y": None, "z": torch.randn(2, 3)}), ["x.1", "z.1"], id="keyword-None"),
])
def test_none_for_an_optional_argument_binds_it_to_none(args, names):
    """Legacy refuses any None in a scripted model's args; here None binds its parameter to None,
    as a call does, and the tensors given keep their own parameters (z stays z)."""
    model = torch.jit.script(Mixed())
    ours = export(model, args, None, opset_version=17)
    assert [i.name for i in ours.graph.input] == names
    tensors = [a for a in (args[1:] if not isinstance(args[-1], dict) else args[-1].values()) if a is not None]
    feeds = dict(zip(names, [args[0].numpy()] + [t.numpy() for t in tensors]))
    keywords = args[-1] if isinstance(args[-1], dict) else {}
    positional = args[:-1] if keywords else args
    (got,) = _run(ours, feeds)
    np.testing.assert_allclose(got, model(*positional, **keywords).numpy(), rtol=1e-6)


class ScatterIntoEmpty(torch.nn.Module):
    def forward(self, src, index, into):
        return into.scatter_reduce(0, index, src, reduce="sum") * 2


def test_empty_inputs_stay_declared():
    """What is computed from empty tensors is empty and known at export time, so our graph may
    not read them; legacy computes it at runtime, so callers feed them: they stay declared."""
    args = (torch.tensor([]), torch.tensor([], dtype=torch.int64), torch.tensor([]))
    ours = export(ScatterIntoEmpty(), args, None, opset_version=17)
    assert len(ours.graph.input) == len(_legacy(ScatterIntoEmpty(), args, 17).graph.input) == 3
    _check_fed_by_position(ours, ScatterIntoEmpty(), args)


class EmptyStateOrNot(torch.nn.Module):
    def forward(self, x, state):
        if state.size(0) == 0:  # decided by the traced size: legacy folds the If, and drops state
            return x * 2
        return x + state


def test_an_empty_input_read_only_in_a_folded_branch_is_dropped_as_legacy_does():
    args = (torch.randn(2, 3), torch.empty(0, 3))
    model = torch.jit.script(EmptyStateOrNot())
    ours = export(model, args, None, opset_version=13)
    assert [i.name for i in ours.graph.input] == [i.name for i in _legacy(model, args, 13).graph.input]
