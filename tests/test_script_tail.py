"""Scripted code whose constants only show once the graph is prepared: ``torch.tensordot(x, y, n)``
builds its dim lists in loops of a constant trip count (unrolled in preparation), and
``F.interpolate(x, mode=self.mode, size=self.size)`` reads module attributes that decide which of
its branches runs (folded in capture, as freezing the module does). Every case runs in onnxruntime
against the scripted module; the dynamic ones again on inputs of other sizes than exported.
"""

from __future__ import annotations

import io
from typing import List, Optional

import onnx
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import torchscript_onnx
from torchscript_onnx import MAX_OPSET
from torchscript_onnx.pipeline.prepare.script import fold_attribute_reads
from torchscript_onnx.pipeline.prepare import unroll_int_list_loops
from torchscript_onnx.verification import verify


# -- tensordot: dims as a count (lists built in loops) or as lists ---------------------------------


class DotCount(nn.Module):
    def __init__(self, dims: int):
        super().__init__()
        self.dims = dims

    def forward(self, x, y):
        return torch.tensordot(x, y, self.dims)


class DotTwo(nn.Module):
    def forward(self, x, y):
        return torch.tensordot(x, y, 2)


class DotLists(nn.Module):
    def forward(self, x, y):
        return torch.tensordot(x, y, ([2, 0], [1, 3]))


def _ints(*shape):
    return torch.randint(-4, 5, shape)


# name -> (model, x shape, y shape, [(other x shape, other y shape)]); other shapes keep the
# contracted dims equal and change every other one
TENSORDOT = {
    "count_2_literal": (DotTwo, (6, 5, 3, 4), (3, 4, 7, 2), [((2, 3, 5, 6), (5, 6, 4, 3))]),
    "count_1": (lambda: DotCount(1), (2, 3, 4), (4, 5), [((3, 2, 6), (6, 1))]),
    "count_3": (lambda: DotCount(3), (5, 2, 3, 4), (2, 3, 4, 6), [((1, 4, 2, 3), (4, 2, 3, 2))]),
    "count_0_outer": (lambda: DotCount(0), (2, 3), (4,), [((5, 1), (2,))]),
    "lists": (DotLists, (3, 4, 5), (2, 5, 6, 3), [((2, 6, 4), (7, 4, 1, 2))]),
}


@pytest.mark.parametrize("opset", (9, 13, 17, 20, MAX_OPSET))
@pytest.mark.parametrize("name", sorted(TENSORDOT))
def test_scripted_tensordot_static(name, opset):
    make, x_shape, y_shape, _ = TENSORDOT[name]
    verify(torch.jit.script(make()), (_ints(*x_shape), _ints(*y_shape)), opset_version=opset)


@pytest.mark.parametrize("opset", (13, 17, 20))
@pytest.mark.parametrize("name", sorted(TENSORDOT))
def test_scripted_tensordot_every_dim_dynamic(name, opset):
    make, x_shape, y_shape, others = TENSORDOT[name]
    axes = {"x": list(range(len(x_shape))), "y": list(range(len(y_shape)))}
    verify(torch.jit.script(make()), (_ints(*x_shape), _ints(*y_shape)), opset_version=opset,
           input_names=["x", "y"], dynamic_axes=axes,
           other_inputs=[(_ints(*xs), _ints(*ys)) for xs, ys in others])


# -- the unrolling itself: which loops it takes --------------------------------------------------


def _loops_after_unrolling(fn) -> tuple[int, int]:
    """(loops before, loops after) in ``fn``'s scripted graph, constants propagated first as capture does."""
    graph = torch.jit.script(fn).graph.copy()
    torch._C._jit_pass_inline(graph)
    torch._C._jit_pass_constant_propagation(graph)
    before = len(graph.findAllNodes("prim::Loop"))
    unroll_int_list_loops(graph)
    return before, len(graph.findAllNodes("prim::Loop"))


def offsets_of_a_constant_range(x):
    dims: List[int] = []
    for i in range(3):
        dims.append(2 - i)
    return x.permute(dims)


def offsets_of_a_runtime_range(x):
    dims: List[int] = []
    for i in range(x.dim()):
        dims.append(x.dim() - 1 - i)
    return x * 2.0, torch.tensor(dims)


def tensors_in_a_constant_range(x):
    rows: List[torch.Tensor] = []
    for i in range(3):
        rows.append(x * i)
    return torch.stack(rows)


def an_early_exit(x):
    dims: List[int] = []
    for i in range(3):
        if i == 2:
            break
        dims.append(i)
    return x - 1.0, torch.tensor(dims)


# fn -> (loops before, loops after): only the constant count that builds ints is unrolled
UNROLLED = {
    "constant_range_of_ints": (offsets_of_a_constant_range, (1, 0)),
    "runtime_range_of_ints": (offsets_of_a_runtime_range, (1, 1)),
    "constant_range_of_tensors": (tensors_in_a_constant_range, (1, 1)),
    "early_exit": (an_early_exit, (1, 1)),
}


@pytest.mark.parametrize("name", sorted(UNROLLED))
def test_which_loops_unroll(name):
    fn, expected = UNROLLED[name]
    assert _loops_after_unrolling(fn) == expected


@pytest.mark.parametrize("name", sorted(UNROLLED))
def test_loops_export_either_way(name):
    fn, _ = UNROLLED[name]
    x = torch.randn(2, 3, 4)
    verify(torch.jit.script(fn), (x,), opset_version=17, input_names=["x"], dynamic_axes={"x": [0, 1, 2]},
           other_inputs=[(torch.randn(3, 5, 2),)])


# -- interpolate with attribute-held mode and size -----------------------------------------------


class Resample(nn.Module):
    def __init__(self, mode: str, size: List[int], align_corners: Optional[bool] = None):
        super().__init__()
        self.mode = mode
        self.size = size
        self.align_corners = align_corners

    def forward(self, x):
        return F.interpolate(x, size=self.size, mode=self.mode, align_corners=self.align_corners)


class ConvResample(nn.Module):
    """Weights beside the attributes: their initializer names must stay the state_dict keys."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, padding=1)
        self.register_buffer("offset", torch.linspace(-1.0, 1.0, 3).reshape(1, 3, 1, 1))
        self.mode = "bicubic"
        self.size = [7, 3]

    def forward(self, x):
        return F.interpolate(self.conv(x), size=self.size, mode=self.mode) + self.offset


# name -> (model, input shape): one size shrinks to 1 in some case, as legacy's half-pixel check does
RESAMPLE = {
    "linear_3d": (lambda: Resample("linear", [1]), (1, 2, 6)),
    "linear_3d_up": (lambda: Resample("linear", [9]), (2, 3, 5)),
    "bilinear_4d": (lambda: Resample("bilinear", [1, 6]), (1, 2, 4, 6)),
    "bilinear_4d_corners": (lambda: Resample("bilinear", [5, 3], True), (2, 2, 4, 6)),
    "trilinear_5d": (lambda: Resample("trilinear", [4, 1, 6]), (1, 2, 4, 4, 6)),
    "bicubic_4d": (lambda: Resample("bicubic", [4, 1]), (1, 2, 4, 6)),
    "bicubic_4d_up": (lambda: Resample("bicubic", [6, 9]), (1, 2, 4, 6)),
    "nearest_3d": (lambda: Resample("nearest", [5]), (1, 2, 3)),
    "nearest_4d": (lambda: Resample("nearest", [8, 3]), (2, 1, 4, 6)),
    "nearest_5d": (lambda: Resample("nearest", [2, 4, 6]), (1, 2, 4, 2, 3)),
    "conv_bicubic_4d": (ConvResample, (1, 2, 5, 4)),
}


@pytest.mark.parametrize("opset", (11, 13, 17, 20, MAX_OPSET))
@pytest.mark.parametrize("name", sorted(RESAMPLE))
def test_interpolate_with_attribute_mode_and_size(name, opset):
    make, shape = RESAMPLE[name]
    x = torch.randn(*shape)
    other = torch.randn(3, *shape[1:])
    verify(torch.jit.script(make().eval()), (x,), opset_version=opset, input_names=["x"],
           dynamic_axes={"x": [0]}, other_inputs=[(other,)])


def test_initializer_names_stay_the_state_dict_keys():
    model = torch.jit.script(ConvResample().eval())
    buffer = io.BytesIO()
    torchscript_onnx.export(model, (torch.randn(1, 2, 5, 4),), buffer, opset_version=17)
    names = {init.name for init in onnx.load_from_string(buffer.getvalue()).graph.initializer}
    assert {"conv.weight", "conv.bias", "offset"} <= names


# -- what attribute folding takes ----------------------------------------------------------------


class ModeBranch(nn.Module):
    def forward(self, x):
        if self.training:
            return x * 2.0
        return x + 1.0


class Appends(nn.Module):
    """A list attribute the forward changes: it must stay a read of the module."""

    def __init__(self):
        super().__init__()
        self.seen: List[int] = [1]

    def forward(self, x):
        self.seen.append(2)
        return x + len(self.seen)


class Scalars(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale: Optional[float] = None
        self.shift = 2
        self.kind = "plain"
        self.weights = nn.Parameter(torch.ones(3))

    def forward(self, x):
        if self.scale is not None:
            x = x * self.scale
        return x * self.weights + self.shift if self.kind == "plain" else x


def _attribute_reads(model) -> set[str]:
    graph = model._c._get_method("forward").graph.copy()
    fold_attribute_reads(graph, model)
    return {n.s("name") for n in graph.findAllNodes("prim::GetAttr")}


# model -> the attribute reads left after folding
FOLDED = {
    "scalars_and_none": (Scalars, {"weights"}),
    "training": (ModeBranch, set()),
    "mutated_list": (Appends, {"seen"}),
}


@pytest.mark.parametrize("name", sorted(FOLDED))
def test_which_attribute_reads_fold(name):
    make, left = FOLDED[name]
    assert _attribute_reads(torch.jit.script(make())) == left


# (export's training option, expected output for x = 3)
MODES = {"eval": (torchscript_onnx.TrainingMode.EVAL, 4.0), "training": (torchscript_onnx.TrainingMode.TRAINING, 6.0),
         "preserve": (torchscript_onnx.TrainingMode.PRESERVE, 6.0)}


@pytest.mark.parametrize("name", sorted(MODES))
def test_self_training_reads_the_export_mode(name):
    """``self.training`` takes the mode export sets, not the one the module is in (legacy freezes
    the module in that mode); the module's own mode is put back."""
    training, expected = MODES[name]
    model = torch.jit.script(ModeBranch()).train()
    buffer = io.BytesIO()
    torchscript_onnx.export(model, (torch.full((2,), 3.0),), buffer, opset_version=17, training=training,
                            input_names=["x"])
    import onnxruntime as ort

    out = ort.InferenceSession(buffer.getvalue()).run(None, {"x": torch.full((2,), 3.0).numpy()})[0]
    assert out.tolist() == [expected, expected]
    assert model.training
