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


def test_optional_inputs_are_onnx_optionals_tested_at_runtime_as_in_legacy():
    """Given only ``b`` by keyword (``a`` takes its default tensor), the scripted graph declares both
    parameters as ONNX optionals, as legacy does, and tests at runtime which holds a tensor: a
    caller may leave either out and gets what the scripted model gives for that call (leaving
    both out returns a 0-d tensor beside 2-d ones, which onnxruntime refuses in legacy's If too)."""
    model = torch.jit.script(FirstGiven())
    a, b = torch.randn(2, 3), torch.randn(2, 3)
    ours = export(model, ({"b": b},), None, opset_version=17)
    legacy = _legacy(model, ({"b": b},), 17)
    assert [(i.name, i.type.WhichOneof("value")) for i in ours.graph.input] == \
        [(i.name, i.type.WhichOneof("value")) for i in legacy.graph.input] == \
        [("a.1", "optional_type"), ("b.1", "optional_type")]
    for given in ({"a.1": a}, {"b.1": b}, {"a.1": a, "b.1": b}):
        (got,) = _run(ours, {name: t.numpy() for name, t in given.items()})
        (want,) = _run(legacy, {name: t.numpy() for name, t in given.items()})
        np.testing.assert_allclose(got, want)
        np.testing.assert_allclose(got, model(given.get("a.1"), given.get("b.1")).numpy())


class Mixed(torch.nn.Module):
    def forward(self, x, y: Optional[Tensor] = torch.ones(2, 3), z: Optional[Tensor] = torch.zeros(2, 3)):
        if y is not None:
            return x - y
        if z is not None:
            return x * z
        return x


NONE_ARGS = [
    pytest.param((torch.randn(2, 3), None, torch.randn(2, 3)), ["x.1", "z.1"], id="y-None"),
    pytest.param((torch.randn(2, 3), torch.randn(2, 3), None), ["x.1", "y.1"], id="z-None"),
    pytest.param((torch.randn(2, 3), None, None), ["x.1"], id="both-None"),
    pytest.param((torch.randn(2, 3), {"y": None, "z": torch.randn(2, 3)}), ["x.1", "z.1"], id="keyword-None"),
]


def _call_args(args) -> tuple[tuple, dict]:
    keywords = args[-1] if isinstance(args[-1], dict) else {}
    return (args[:-1] if keywords else args), keywords


@pytest.mark.parametrize("args, names", NONE_ARGS)
def test_none_for_an_optional_argument_binds_it_to_none_before_opset_15(args, names):
    """Legacy refuses any None in a scripted model's args; below opset 15 (no ONNX optionals) None
    binds its parameter to None, as a call does, and the tensors given keep their own parameters."""
    model = torch.jit.script(Mixed())
    ours = export(model, args, None, opset_version=13)
    assert [i.name for i in ours.graph.input] == names
    positional, keywords = _call_args(args)
    tensors = [a for a in (positional[1:] + tuple(keywords.values())) if a is not None]
    feeds = dict(zip(names, [args[0].numpy()] + [t.numpy() for t in tensors]))
    (got,) = _run(ours, feeds)
    np.testing.assert_allclose(got, model(*positional, **keywords).numpy(), rtol=1e-6)


@pytest.mark.parametrize("args, names", NONE_ARGS)
def test_none_for_an_optional_argument_is_an_empty_optional_from_opset_15(args, names):
    """From opset 15 a None given for an ``Optional[Tensor]`` parameter leaves it an ONNX optional
    input, as a tensor given for it does (legacy's layout): the export is not bound to the None, and
    a caller may feed a tensor or nothing for it, with the scripted model's answer either way."""
    model = torch.jit.script(Mixed())
    ours = export(model, args, None, opset_version=17)
    assert [(i.name, i.type.WhichOneof("value")) for i in ours.graph.input] == \
        [("x.1", "tensor_type"), ("y.1", "optional_type"), ("z.1", "optional_type")]
    x, y, z = torch.randn(2, 3), torch.randn(2, 3), torch.randn(2, 3)
    for given_y, given_z in ((None, None), (y, None), (None, z), (y, z)):
        feeds = {"x.1": x.numpy(), "y.1": None if given_y is None else given_y.numpy()}
        if given_z is not None:  # left out: an optional input need not be fed
            feeds["z.1"] = given_z.numpy()
        (got,) = _run(ours, feeds)
        np.testing.assert_allclose(got, model(x, given_y, given_z).numpy(), rtol=1e-6)


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
