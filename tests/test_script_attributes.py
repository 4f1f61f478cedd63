"""Scripted modules that write their own attributes (``self.x = ...`` in forward or a method it calls).

Each model is scripted, exported, and run in onnxruntime on inputs that take other branches and
trip counts; the reference is a fresh copy of the scripted module (a run changes its attributes).
The export itself must leave the module's attributes as they were.
"""

import copy

import numpy as np
import onnxruntime as ort
import pytest
import torch

import torchscript_onnx as tso


class WindowLength(torch.nn.Module):
    """An int attribute written from an argument, then read (the hann-window idiom)."""

    def __init__(self):
        super().__init__()
        self.length = 0

    def forward(self, x, length: int):
        self.length = length
        return x + torch.hann_window(self.length, periodic=False, dtype=torch.float)


class BranchWrites(torch.nn.Module):
    """Each branch writes a different attribute of a submodule."""

    def __init__(self):
        super().__init__()
        self.inner = torch.nn.Module()
        self.inner.shift = torch.zeros(3)
        self.inner.scale = torch.ones(3)

    def update(self, x):
        if x.sum() > 0:
            self.inner.shift = self.inner.shift + x
        else:
            self.inner.scale = self.inner.scale * 3

    def forward(self, x):
        self.update(x)
        return x * self.inner.scale + self.inner.shift


class LoopWrites(torch.nn.Module):
    """An accumulator attribute written on every iteration of a runtime-length loop."""

    def __init__(self):
        super().__init__()
        self.total = torch.zeros(3)

    def forward(self, rows):
        self.total = torch.zeros(3)
        for i in range(rows.size(0)):
            self.total = self.total + rows[i] * i
        return self.total


class NestedLoopAndBranch(torch.nn.Module):
    """A write inside a branch inside a loop; the attribute is read after both."""

    def __init__(self):
        super().__init__()
        self.best = torch.zeros(1)

    def forward(self, rows):
        self.best = rows[0].max().unsqueeze(0)
        for i in range(rows.size(0)):
            if rows[i].max() > self.best:
                self.best = rows[i].max().unsqueeze(0)
        return self.best * 2


class TupleAttributes(torch.nn.Module):
    """Tuple-valued attributes read in forward (unpacked, indexed and passed as an int list)."""

    def __init__(self):
        super().__init__()
        self.dims, self.padding = (1, 2), (1,)

    def forward(self, x):
        first, second = self.dims
        padded = torch.nn.functional.pad(x, [self.padding[0], self.padding[0]])
        return torch.linalg.vector_norm(padded, dim=self.dims) + first * second


# (id, module, args, other args to run, export options)
CASES = [
    ("window-length", WindowLength, (torch.randn(10), 10), [], {}),
    ("branch-writes", BranchWrites, (torch.rand(3),), [(-torch.rand(3),)], {}),
    ("loop-writes", LoopWrites, (torch.randn(4, 3),), [(torch.randn(7, 3),), (torch.randn(1, 3),)],
     dict(input_names=["rows"], dynamic_axes={"rows": {0: "n"}})),
    ("tuple-attributes", TupleAttributes, (torch.randn(2, 3, 4),), [], {}),
    ("loop-and-branch", NestedLoopAndBranch, (torch.randn(5, 2),), [(torch.randn(9, 2),)],
     dict(input_names=["rows"], dynamic_axes={"rows": {0: "n"}})),
]


@pytest.mark.parametrize("opset", [11, 17])
@pytest.mark.parametrize("make, args, others, options", [pytest.param(*row[1:], id=row[0]) for row in CASES])
def test_attribute_writes_match_the_scripted_module(make, args, others, options, opset):
    scripted = torch.jit.script(make())
    before = {name: copy.deepcopy(value) for name, value in _attributes(scripted)}
    proto = tso.export(scripted, args, None, opset_version=opset, **options)
    after = dict(_attributes(scripted))
    for name, value in before.items():  # the export ran the module once; nothing it wrote stays
        assert type(after[name]) is type(value)
        assert torch.equal(after[name], value) if isinstance(value, torch.Tensor) else after[name] == value
    assert "SetAttr" not in str(proto)
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in proto.graph.input]
    for inputs in [args, *others]:
        feeds = {name: np.asarray(v.numpy() if isinstance(v, torch.Tensor) else v) for name, v in zip(names, inputs)}
        (got,) = session.run(None, feeds)
        want = copy.deepcopy(scripted)(*inputs)
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-6)


def _attributes(scripted):
    """(path, value) of the plain attributes the cases write."""
    for path in ("length", "inner.shift", "inner.scale", "total", "best"):
        owner, *rest = path.split(".")
        if hasattr(scripted, owner):
            value = getattr(scripted, owner)
            for name in rest:
                value = getattr(value, name)
            yield path, value
