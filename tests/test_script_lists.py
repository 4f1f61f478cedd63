"""Scripted lists the legacy exporter takes: lists returned beside an early return (prim::Uninitialized
on one path of an If), lists sliced and split by sizes known only at runtime, output sizes built in
a loop for interpolate, an nn.LSTM called with a tuple state argument, list arguments of the forward
(one ONNX sequence input each) and None among the outputs (an empty ONNX optional from opset 15).
Every case runs in onnxruntime against PyTorch, again on inputs of other sizes where it has dynamic axes.
"""

from __future__ import annotations

import io
from typing import List, Tuple

import numpy as np
import onnx
import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

import torchscript_onnx
from torchscript_onnx.verify import verify


# -- a list on one path of an If, uninitialized on the other (early returns) ----------------------


class RangeListEarlyReturn(nn.Module):
    def forward(self, x):
        counts = list(range(x.size(0)))
        if counts[0] < 5:
            if x.size(0) == 3:
                counts.append(10)
            else:
                return counts
        return counts


class RowsEarlyReturn(nn.Module):
    def forward(self, x):
        if x.size(1) < 5:
            if x.size(0) == 1:
                x = x * 3.0
            else:
                return list(x)
        return list(x)


class RowsPlusWholeEarlyReturn(nn.Module):
    def forward(self, x):
        if x.size(1) < 5:
            if x.size(0) == 1:
                x = x + 4
            else:
                parts = list(x)
                parts.append(x)
                return parts
        return [x, x]


# name -> (model class, example input, other inputs); the input's dims are dynamic
BRANCH_LISTS = {
    "range_list": (RangeListEarlyReturn, torch.ones(3, 4, dtype=torch.int32),
                   [torch.ones(2, 4, dtype=torch.int32), torch.ones(6, 2, dtype=torch.int32)]),
    "rows": (RowsEarlyReturn, torch.randn(3, 4, dtype=torch.float64),
             [torch.randn(1, 2, dtype=torch.float64), torch.randn(4, 7, dtype=torch.float64)]),
    "rows_plus_whole": (RowsPlusWholeEarlyReturn, torch.arange(12, dtype=torch.int32).reshape(3, 4),
                        [torch.ones(4, 6, dtype=torch.int32), torch.ones(1, 3, dtype=torch.int32),
                         torch.ones(2, 3, dtype=torch.int32)]),
}


@pytest.mark.parametrize("opset", (14, 17, 20))
@pytest.mark.parametrize("name", sorted(BRANCH_LISTS))
def test_list_beside_an_early_return(name, opset):
    model_class, x, others = BRANCH_LISTS[name]
    verify(torch.jit.script(model_class()), (x,), opset_version=opset, input_names=["x"],
           dynamic_axes={"x": [0, 1]}, other_inputs=[(o,) for o in others])


# -- sizes known only at runtime: list slices, split sizes, interpolate sizes ---------------------


class ShapeSliceByDim(nn.Module):
    def forward(self, x):
        return x.new_ones(x.shape[1:x.size(2)]) * 2.0


class ShapeSliceStep(nn.Module):
    def forward(self, x):
        return torch.zeros(x.shape[x.size(0) - 1::2]) + 1.0


class ShapeSliceLenItem(nn.Module):
    def forward(self, x):
        dims = x.shape[1:x.size(2)]
        return torch.zeros(dims) + len(dims), dims[-1] * 2


class SplitBySizesOf(nn.Module):
    def forward(self, a, b, t):
        first, second = torch.split(t, (a.size(1), b.size(1)), dim=1)
        return first * 2.0, second.sum(1)


# name -> (model class, example args, args at other sizes, min opset); every dim dynamic
RUNTIME_SIZES = {
    "shape_slice_by_dim": (ShapeSliceByDim, (torch.rand(1, 2, 3, 4),), [(torch.rand(2, 5, 4, 3),),
                                                                       (torch.rand(1, 2, 1, 3),)], 10),
    "shape_slice_step": (ShapeSliceStep, (torch.rand(2, 3, 4, 5),), [(torch.rand(1, 3, 4, 5),),
                                                                    (torch.rand(3, 2, 2, 2),)], 10),
    "shape_slice_len_item": (ShapeSliceLenItem, (torch.rand(1, 2, 3, 4),), [(torch.rand(1, 2, 4, 3),),
                                                                           (torch.rand(2, 3, 2, 1),)], 10),
    "split_by_sizes_of": (SplitBySizesOf, (torch.randn(2, 3), torch.randn(2, 4), torch.randn(2, 7)),
                          [(torch.randn(1, 1), torch.randn(1, 5), torch.randn(3, 6))], 13),
}


@pytest.mark.parametrize("opset", (10, 13, 17, 20))
@pytest.mark.parametrize("name", sorted(RUNTIME_SIZES))
def test_runtime_sizes(name, opset):
    model_class, args, others, min_opset = RUNTIME_SIZES[name]
    names = [f"in{k}" for k in range(len(args))]
    dynamic = {n: list(range(a.dim())) for n, a in zip(names, args)}
    if opset < min_opset:
        with pytest.raises(torchscript_onnx.errors.OnnxExporterError, match=f"opset {min_opset}"):
            torchscript_onnx.build(torch.jit.script(model_class()), args, opset_version=opset, input_names=names,
                                   dynamic_axes=dynamic)
        return
    verify(torch.jit.script(model_class()), args, opset_version=opset, input_names=names,
           dynamic_axes=dynamic, other_inputs=others)


class InterpolateToSize(nn.Module):
    __constants__ = ["mode", "size"]

    def __init__(self, mode, size):
        super().__init__()
        self.mode, self.size = mode, size

    def forward(self, x):
        # scripted, an int size becomes a list filled in a loop (one entry per spatial dim)
        return F.interpolate(x, size=self.size, mode=self.mode)


# name -> (mode, size, example input, first opset run). At opset 9 a size known only at runtime
# becomes Upsample scales computed at runtime, which onnxruntime takes only >= 1 (upsampling); at 10
# Resize rounds nearest differently from torch where it cannot tell that the factors are whole.
INTERPOLATE_SIZES = {
    "nearest_1d_up": ("nearest", 13, torch.randn(1, 2, 6), 9),
    "nearest_2d_down": ("nearest", 2, torch.randn(2, 3, 4, 6), 11),
    "nearest_3d_list": ("nearest", [3, 5, 7], torch.randn(1, 2, 2, 4, 3), 9),
    "bilinear_2d_up": ("bilinear", 9, torch.randn(1, 2, 4, 6), 11),
    "bicubic_2d_list": ("bicubic", [5, 11], torch.randn(1, 1, 4, 6), 11),
}


@pytest.mark.parametrize("name, opset", [(name, opset) for name, case in sorted(INTERPOLATE_SIZES.items())
                                         for opset in (9, 11, 13, 20) if opset >= case[3]])
def test_interpolate_to_a_size(name, opset):
    mode, size, x, _ = INTERPOLATE_SIZES[name]
    model = torch.jit.script(InterpolateToSize(mode, size))
    # batch and height dynamic: the output size is the same for inputs of other sizes too
    other = torch.randn(3, x.size(1), x.size(2) + 1, *x.shape[3:])
    verify(model, (x,), opset_version=opset, input_names=["x"], dynamic_axes={"x": [0, 2]},
           other_inputs=[(other,)], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ("bilinear", "nearest"))
def test_interpolate_to_a_runtime_size_at_opset_10_needs_opset_11(mode):
    model = torch.jit.script(InterpolateToSize(mode, 9))
    with pytest.raises(torchscript_onnx.errors.OnnxExporterError, match="opset 11"):
        torchscript_onnx.build(model, (torch.randn(1, 2, 4, 6),), opset_version=10)


# -- nn.LSTM with its state passed as a tuple argument of the scripted forward --------------------


class LstmWithState(nn.Module):
    def __init__(self, layers, bidirectional, bias):
        super().__init__()
        self.lstm = nn.LSTM(5, 4, layers, bidirectional=bidirectional, bias=bias)

    def forward(self, x, state: Tuple[Tensor, Tensor]):
        return self.lstm(x, state)


# name -> (layers, bidirectional, bias)
LSTMS = {
    "one_layer_bidirectional_no_bias": (1, True, False),
    "two_layers": (2, False, True),
    "three_layers_no_bias": (3, False, False),
    "two_layers_bidirectional": (2, True, True),
}


@pytest.mark.parametrize("opset", (9, 13, 20))
@pytest.mark.parametrize("name", sorted(LSTMS))
def test_lstm_with_tuple_state(name, opset):
    layers, bidirectional, bias = LSTMS[name]
    torch.manual_seed(0)
    model = torch.jit.script(LstmWithState(layers, bidirectional, bias).eval())
    n = layers * (2 if bidirectional else 1)

    def args(steps):
        return torch.randn(steps, 3, 5), (torch.randn(n, 3, 4), torch.randn(n, 3, 4))

    verify(model, args(6), opset_version=opset, other_inputs=[args(6)], rtol=1e-4, atol=1e-5)


# -- list arguments: one ONNX sequence input each ------------------------------------------------


class PadByList(nn.Module):
    def forward(self, x, pad: List[int]):
        return F.pad(x, pad)


class CatList(nn.Module):
    def forward(self, x, parts: List[Tensor]):
        return torch.cat(parts, 0) * x


class ScaleBySum(nn.Module):
    def forward(self, x, factors: List[float]):
        total = 0.0
        for f in factors:
            total += f
        return x * total


def _export(model, args, opset, **options) -> bytes:
    f = io.BytesIO()
    torchscript_onnx.export(model, args, f, opset_version=opset, **options)
    return f.getvalue()


def _feed(value):
    if isinstance(value, list):
        return [np.asarray(v.numpy() if isinstance(v, Tensor) else v) for v in value]
    return value.numpy()


# name -> (model class, example args, other args to run on, element dtype of the list input)
LIST_INPUTS = {
    "pad_ints": (PadByList, (torch.randn(2, 2, 4, 4), [2, 4]),
                 [(torch.randn(2, 2, 4, 4), [1, 0, 3, 2]), (torch.randn(2, 2, 4, 4), [1] * 8)], onnx.TensorProto.INT64),
    "pad_scalar_tensors": (PadByList, (torch.randn(1, 3, 5), [torch.tensor(1), torch.tensor(2)]),
                           [(torch.randn(1, 3, 5), [0, 1, 2, 0])], onnx.TensorProto.INT64),
    "cat_tensors": (CatList, (torch.randn(3), [torch.randn(1), torch.randn(2)]),
                    [(torch.randn(6), [torch.randn(3), torch.randn(1), torch.randn(2)])], onnx.TensorProto.FLOAT),
    "float_factors": (ScaleBySum, (torch.randn(2, 3), [0.5, 2.0]),
                      [(torch.randn(2, 3), [1.0, -3.0, 0.25])], onnx.TensorProto.DOUBLE),
}


@pytest.mark.parametrize("opset", (11, 13, 17, 20))
@pytest.mark.parametrize("name", sorted(LIST_INPUTS))
def test_list_argument_is_a_sequence_input(name, opset):
    import onnxruntime

    model_class, args, others, elem_type = LIST_INPUTS[name]
    model = torch.jit.script(model_class())
    model_bytes = _export(model, args, opset, dynamic_axes={"x.1": [0]} if name == "cat_tensors" else None)
    proto = onnx.load_from_string(model_bytes)
    onnx.checker.check_model(proto, full_check=True)
    list_input = proto.graph.input[1].type
    assert list_input.HasField("sequence_type")
    assert list_input.sequence_type.elem_type.tensor_type.elem_type == elem_type
    run = onnxruntime.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])
    for x, items in [args, *others]:
        got = run.run(None, {i.name: _feed(v) for i, v in zip(proto.graph.input, (x, items))})[0]
        np.testing.assert_allclose(got, model(x, items).numpy(), rtol=1e-6, atol=1e-6)


def test_list_argument_needs_sequences():
    with pytest.raises(torchscript_onnx.errors.OnnxExporterError, match="opset 11"):
        torchscript_onnx.build(torch.jit.script(PadByList()), (torch.randn(1, 2, 3), [1, 1]), opset_version=10)


# -- None in outputs and in args -------------------------------------------------------------------


class NoneAmongOutputs(nn.Module):
    def forward(self, x):
        return x.relu(), (x * 2.0, None, (x - 1.0, None))


@pytest.mark.parametrize("opset", (13, 14, 15, 17, 20))
def test_none_outputs(opset):
    """Below opset 15 a None output is dropped; from 15 it is an empty optional (as legacy does)."""
    import onnxruntime

    model = torch.jit.script(NoneAmongOutputs())
    x = torch.randn(3, 4)
    model_bytes = _export(model, (x,), opset, input_names=["x"], dynamic_axes={"x": [0]})
    onnx.checker.check_model(model_bytes, full_check=True)
    run = onnxruntime.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])
    other = torch.randn(5, 4)
    for inp in (x, other):
        got = run.run(None, {"x": inp.numpy()})
        relu, (double, none_a, (minus, none_b)) = model(inp)
        want = [relu, double, none_a, minus, none_b] if opset >= 15 else [relu, double, minus]
        assert len(got) == len(want)
        for g, w in zip(got, want):
            if w is None:
                assert g is None
            else:
                np.testing.assert_allclose(g, w.numpy(), rtol=1e-6, atol=1e-6)


class TupleOfTensors(nn.Module):
    def forward(self, x, pair: Tuple[Tensor, Tensor]):
        a, b = pair
        return x + a * b


def test_none_inside_args_is_refused():
    model = torch.jit.script(TupleOfTensors())
    with pytest.raises(ValueError, match="1 None's after flattening"):
        torchscript_onnx.build(model, (torch.randn(2), (None, torch.randn(2))), opset_version=17)
    x, a, b = torch.randn(2), torch.randn(2), torch.randn(2)
    verify(model, (x, (a, b)), opset_version=17, other_inputs=[(b, (x, a))])
