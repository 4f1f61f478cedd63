"""Scripted models the legacy exporter cannot export, one section per cause:

- ``isinstance`` on a Union parameter of an inlined function, decided by the call site;
- ``Optional[Tensor]`` parameters given None (ONNX optionals from opset 15, tested at runtime);
- ``Optional[Tuple[...]]`` parameters given a tuple (one input per element);
- ``x.split(sizes)`` with a ``List[int]`` input (pieces counted at runtime);
- ops on quantized inputs that quantize their result again (with fixed parameters, or with the
  input's where the float result leaves its grid);
- ``x.stride()`` of a graph input (from its runtime sizes), ``aten::lift``, ``aten::is_pinned``;
- Gamma and Dirichlet sampling (rejection sampling in a Loop);
- dict and list outputs;
- PackedSequence arguments (torch's packed rows unpacked in the graph).

Every case runs the scripted module and onnxruntime side by side at two input sizes: the sizes
it was exported at and others along dynamic axes, so a value that is known only at runtime cannot
hide as a constant of the export.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple, Union

import numpy as np
import onnxruntime as ort
import pytest
import torch
from torch import Tensor, nn
from torch.nn.utils import rnn as rnn_utils

from torchscript_onnx import export
from torchscript_onnx.pipeline.prepare.script import fold_isinstance
from torchscript_onnx.verification import verify


# -- isinstance on a Union parameter, decided by the inlined call site ----------------------------


def _scale(x: Tensor, factor: Union[Tensor, List[float]]) -> Tensor:
    if isinstance(factor, Tensor):
        return x * factor
    return x * torch.tensor(factor)


class ScaleByTensor(nn.Module):
    def forward(self, x, factor):
        return _scale(x, factor)


class ScaleByList(nn.Module):
    def forward(self, x):
        return _scale(x, [2.0, -1.0, 0.5])


class PackedGRU(nn.Module):
    """pack_padded_sequence takes lengths as ``Union[Tensor, List[int]]`` and tests which it got."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(4, 5)

    def forward(self, x, lengths):
        packed = rnn_utils.pack_padded_sequence(x, lengths)
        out, hidden = self.gru(packed)
        return rnn_utils.pad_packed_sequence(out)[0], hidden


def _lengths(batch: int, steps: int) -> Tensor:
    return torch.sort(torch.randint(1, steps + 1, (batch,)), descending=True).values


ISINSTANCE = {
    # name: (model, args, dynamic axes, args at other sizes)
    "tensor": (ScaleByTensor, (torch.randn(2, 3), torch.randn(3)), {"x": {0: "rows"}, "factor": {}},
               (torch.randn(5, 3), torch.randn(3))),
    "list": (ScaleByList, (torch.randn(2, 3),), {"x": {0: "rows"}}, (torch.randn(4, 3),)),
    "pack_padded_sequence": (PackedGRU, (torch.randn(6, 3, 4), torch.tensor([6, 4, 1])),
                             {"x": {0: "steps", 1: "batch"}, "lengths": {0: "batch"}}, (torch.randn(7, 5, 4), _lengths(5, 7))),
}


@pytest.mark.parametrize("opset", (11, 17))
@pytest.mark.parametrize("name", sorted(ISINSTANCE))
def test_isinstance_decided_by_the_call_site(name, opset):
    make, args, axes, other = ISINSTANCE[name]
    names = list(axes)
    verify(torch.jit.script(make()), args, opset_version=opset, input_names=names, dynamic_axes=axes,
           other_inputs=[other])


def test_isinstance_fold_keeps_what_the_static_type_leaves_open():
    graph = torch._C.parse_ir("""
graph(%t : Tensor, %o : Tensor?, %l : int[]):
  %a : bool = prim::isinstance[types=[Tensor]](%t)
  %b : bool = prim::isinstance[types=[int[]]](%t)
  %c : bool = prim::isinstance[types=[Tensor]](%o)
  %d : bool = prim::isinstance[types=[Tensor]](%l)
  return (%a, %b, %c, %d)
""")
    assert fold_isinstance(graph) == 3
    outputs = [v.node() for v in graph.outputs()]
    constants = [n.i("value") if n.kind() == "prim::Constant" else n.kind() for n in outputs]
    assert constants == [1, 0, "prim::isinstance", 0]


# -- Optional[Tensor] parameters given None: ONNX optionals, tested at runtime --------------------


class ShiftIfGiven(nn.Module):
    def forward(self, x, shift: Optional[Tensor] = None, scale: Optional[Tensor] = None):
        if shift is not None:
            x = x - shift
        if scale is not None:
            x = x * scale
        return x.relu()


def _session(proto) -> ort.InferenceSession:
    return ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("exported_with", ["none", "shift", "both"])
def test_optional_parameters_given_none_stay_optional_inputs(exported_with):
    """Whichever of the optional parameters the export is given, the file takes any of them at
    runtime (fed or left out) and at other sizes, with the scripted model's answer."""
    model = torch.jit.script(ShiftIfGiven())
    x = torch.randn(2, 3)
    given = {"none": (None, None), "shift": (torch.randn(3), None), "both": (torch.randn(3), torch.randn(2, 3))}
    axes = {"x": {0: "rows"}, "scale": {0: "rows"}}
    proto = export(model, (x, *given[exported_with]), None, opset_version=17,
                   input_names=["x", "shift", "scale"], dynamic_axes=axes)
    assert [i.type.WhichOneof("value") for i in proto.graph.input] == ["tensor_type", "optional_type",
                                                                       "optional_type"]
    session = _session(proto)
    for rows in (2, 5):
        x = torch.randn(rows, 3)
        for shift, scale in ((None, None), (torch.randn(3), None), (None, torch.randn(rows, 3)),
                             (torch.randn(3), torch.randn(rows, 3))):
            feeds = {"x": x.numpy(), "shift": None if shift is None else shift.numpy()}
            if scale is not None:
                feeds["scale"] = scale.numpy()
            (got,) = session.run(None, feeds)
            np.testing.assert_allclose(got, model(x, shift, scale).numpy(), rtol=1e-6, atol=1e-6)


# -- Optional[Tuple[...]] given a tuple: one input per element ------------------------------------


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(3, 4, num_layers=2)
        self.head = nn.Linear(4, 2)

    def forward(self, x, state: Optional[Tuple[Tensor, Tensor]] = None):
        out, (h, c) = self.lstm(x, state)
        return self.head(out), h, c


def _state(batch: int) -> tuple:
    return torch.randn(2, batch, 4), torch.randn(2, batch, 4)


@pytest.mark.parametrize("opset", (9, 17))
def test_optional_tuple_given_a_tuple_flattens(opset):
    axes = {"x": {0: "steps", 1: "batch"}, "h0": {1: "batch"}, "c0": {1: "batch"}}
    verify(torch.jit.script(Decoder()), (torch.randn(5, 2, 3), _state(2)), opset_version=opset,
           input_names=["x", "h0", "c0"], dynamic_axes=axes, other_inputs=[(torch.randn(7, 3, 3), _state(3))])


# -- split by a List[int] input: as many pieces as the runtime list has ---------------------------


class SplitBySizes(nn.Module):
    def forward(self, x, sizes: List[int]):
        pieces = x.split(sizes, dim=1)
        out = []
        for k, piece in enumerate(pieces):
            out.append(piece.sum(dim=1, keepdim=True) * (k + 1))
        return torch.cat(out, dim=1)


@pytest.mark.parametrize("opset", (11, 17))
def test_split_by_a_runtime_list_of_sizes(opset):
    model = torch.jit.script(SplitBySizes())
    proto = export(model, (torch.randn(3, 6), [2, 4]), None, opset_version=opset, input_names=["x", "sizes"],
                   dynamic_axes={"x": {0: "rows", 1: "cols"}})
    session = _session(proto)
    for x, sizes in ((torch.randn(3, 6), [2, 4]), (torch.randn(5, 9), [1, 3, 5]), (torch.randn(2, 4), [4])):
        (got,) = session.run(None, {"x": x.numpy(), "sizes": [np.array(s, dtype=np.int64) for s in sizes]})
        np.testing.assert_allclose(got, model(x, sizes).numpy(), rtol=1e-5, atol=1e-6)


# -- quantized results of a scripted graph: known by their inputs ---------------------------------


class OnQuantized(nn.Module):
    def __init__(self, op: nn.Module):
        super().__init__()
        self.op = op

    def forward(self, x):
        y = self.op(x)
        return y, y.dequantize()  # the float: a result left unquantized would lie off y's grid


QUANTIZED_OPS = {
    "sigmoid": nn.Sigmoid(), "tanh": nn.Tanh(), "hardsigmoid": nn.Hardsigmoid(),
    "avg_pool2d": nn.AvgPool2d(3, stride=2, padding=1), "adaptive_avg_pool2d": nn.AdaptiveAvgPool2d(1),
    "leaky_relu": nn.LeakyReLU(0.3), "gelu": nn.GELU(), "bilinear": nn.Upsample(scale_factor=2, mode="bilinear"),
}


def _quantized(*shape, seed: int) -> Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.quantize_per_tensor(torch.randn(*shape, generator=generator) * 3, 0.1, 120, torch.quint8)


@pytest.mark.parametrize("name", sorted(QUANTIZED_OPS))
def test_quantized_results_of_a_scripted_graph(name):
    """The result is quantized as torch quantizes it: its scale and zero point exact, its float on
    that grid. Integer values may differ by one step where float rounding meets a tie (as in
    test_quantized_io)."""
    model = torch.jit.script(OnQuantized(QUANTIZED_OPS[name]))
    names = ["x.1_value", "x.1_scale", "x.1_zero_point"]  # legacy's: after the scripted input x.1
    proto = export(model, (_quantized(1, 3, 4, 6, seed=0),), None, opset_version=13,
                   dynamic_axes={"x.1_value": {0: "batch", 2: "height", 3: "width"}})
    session = _session(proto)
    for x in (_quantized(1, 3, 4, 6, seed=1), _quantized(2, 3, 7, 5, seed=2)):
        values, scale, zero_point, dequantized = session.run(None, dict(zip(names, (
            x.int_repr().numpy(), np.array(x.q_scale(), np.float64), np.array(x.q_zero_point(), np.int64)))))
        want, _ = model(x)
        assert (scale, zero_point) == (np.float32(want.q_scale()), np.uint8(want.q_zero_point()))
        assert np.abs(values.astype(int) - want.int_repr().numpy().astype(int)).max() <= 1
        steps = dequantized / scale
        np.testing.assert_allclose(steps, np.round(steps), atol=1e-3)


# -- x.stride() of a graph input: products of its runtime sizes -----------------------------------


class ByStrides(nn.Module):
    def forward(self, x):
        strides = x.stride()
        return x * strides[0] + x.stride(1) - strides[2], torch.tensor(strides)


class StrideOfAView(nn.Module):
    def forward(self, x):
        return x * x.t().stride(0)


def test_stride_of_an_input_from_its_runtime_sizes():
    verify(torch.jit.script(ByStrides()), (torch.randn(2, 3, 4),), opset_version=17, input_names=["x"],
           dynamic_axes={"x": {0: "a", 1: "b", 2: "c"}}, other_inputs=[(torch.randn(3, 5, 2),)])


def test_stride_of_a_computed_tensor_is_refused():
    with pytest.raises(Exception, match="stride\\(\\) of a tensor computed in the graph"):
        export(torch.jit.script(StrideOfAView()), (torch.randn(2, 3),), None, opset_version=17)


# -- Gamma and Dirichlet samples: torch's distribution, drawn by ONNX's uniform and normal -------


class Samplers(nn.Module):
    def forward(self, concentration):
        return torch._standard_gamma(concentration), torch._sample_dirichlet(concentration)


CONCENTRATIONS = torch.tensor([0.3, 1.0, 2.5, 7.0])


# Every sample statistic is compared with its expected value in units of its own standard error.
# Six of them leave a failure to no bad luck (a fair sampler fails one comparison with probability
# 2e-9) and a pass to no accident: at 200,000 rows a mean 2.5% off fails.
STANDARD_ERRORS_ALLOWED = 6.0


def _assert_within_standard_errors(estimate, expected, standard_error, what):
    z = np.abs(np.asarray(estimate, np.float64) - expected) / standard_error
    assert (z <= STANDARD_ERRORS_ALLOWED).all(), f"{what}: {np.round(z, 2)} standard errors off"


@pytest.mark.parametrize("rows", (200_000, 50_000))
def test_gamma_and_dirichlet_samples_follow_torchs_distribution(rows):
    """Means and variances over many samples against Gamma(a, 1) and Dirichlet(a), and against
    torch's own samples, for concentrations below and above 1."""
    model = torch.jit.script(Samplers())
    proto = export(model, (CONCENTRATIONS.repeat(4, 1),), None, opset_version=17, input_names=["alpha"],
                   dynamic_axes={"alpha": {0: "rows"}})
    alpha = CONCENTRATIONS.repeat(rows, 1)
    gamma, dirichlet = _session(proto).run(None, {"alpha": alpha.numpy()})
    eager_gamma, eager_dirichlet = (t.numpy() for t in model(alpha))
    assert gamma.shape == dirichlet.shape == tuple(alpha.shape) and (gamma > 0).all()
    np.testing.assert_allclose(dirichlet.sum(1), 1.0, rtol=1e-5)

    a = CONCENTRATIONS.double().numpy()
    a0 = a.sum()
    # Gamma(a, 1): mean a, variance a, fourth central moment 3a^2 + 6a.
    gamma_mean_se = np.sqrt(a / rows)
    gamma_var_se = np.sqrt((3 * a**2 + 6 * a - a**2) / rows)
    # Dirichlet(a): component i has mean a_i/a0 and variance a_i (a0 - a_i) / (a0^2 (a0 + 1)).
    dirichlet_mean = a / a0
    dirichlet_mean_se = np.sqrt(a * (a0 - a) / (a0**2 * (a0 + 1)) / rows)
    for name, samples in (("onnx", gamma), ("torch", eager_gamma)):
        _assert_within_standard_errors(samples.mean(0), a, gamma_mean_se, f"{name} gamma mean")
        _assert_within_standard_errors(samples.var(0), a, gamma_var_se, f"{name} gamma variance")
    for name, samples in (("onnx", dirichlet), ("torch", eager_dirichlet)):
        _assert_within_standard_errors(samples.mean(0), dirichlet_mean, dirichlet_mean_se, f"{name} dirichlet mean")
    # Two independent estimates: their difference has sqrt(2) times the standard error of one.
    _assert_within_standard_errors(gamma.mean(0) - eager_gamma.mean(0), 0.0, np.sqrt(2) * gamma_mean_se,
                                   "onnx against torch, gamma mean")
    _assert_within_standard_errors(dirichlet.mean(0) - eager_dirichlet.mean(0), 0.0,
                                   np.sqrt(2) * dirichlet_mean_se, "onnx against torch, dirichlet mean")


# -- aten::lift (nothing to compute) and aten::is_pinned (ONNX tensors never are) ----------------


class LiftAndPinned(nn.Module):
    def forward(self, x):
        y = torch.ops.aten.lift(x) * 2
        if y.is_pinned():
            return y + 1
        return y - 1


def test_lift_and_is_pinned():
    verify(torch.jit.script(LiftAndPinned()), (torch.randn(2, 3),), opset_version=17, input_names=["x"],
           dynamic_axes={"x": {0: "rows"}}, other_inputs=[(torch.randn(5, 3),)])


# -- dict and list outputs: one graph output per value, as tracing flattens them ------------------


class ReturnsDict(nn.Module):
    def forward(self, x) -> Dict[str, Tensor]:
        return {"scaled": x * 2, "total": x.sum(0), "rows": x.relu()}


class ReturnsRowList(nn.Module):
    def forward(self, x) -> List[Tensor]:
        rows: List[Tensor] = []
        for k in range(x.size(0)):
            rows.append(x[k] * k)
        return rows


class ReturnsPair(nn.Module):
    def forward(self, x) -> List[Tensor]:
        return [x + 1, x.sigmoid()]


@pytest.mark.parametrize("make", [ReturnsDict, ReturnsRowList, ReturnsPair])
def test_dict_and_list_outputs(make):
    verify(torch.jit.script(make()), (torch.randn(2, 3),), opset_version=17, input_names=["x"],
           dynamic_axes={"x": {0: "rows"}}, other_inputs=[(torch.randn(5, 3),)])


# -- a PackedSequence argument: its fields are inputs, its packed rows unpacked in the graph ------


class PackedLSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 5, num_layers=2, bidirectional=True)

    def forward(self, packed: rnn_utils.PackedSequence):
        out, (h, c) = self.lstm(packed)
        padded, lengths = rnn_utils.pad_packed_sequence(out)
        return padded, h, c


def _packed(lengths: list, sort: bool) -> rnn_utils.PackedSequence:
    x = torch.randn(max(lengths), len(lengths), 4)
    return rnn_utils.pack_padded_sequence(x, torch.tensor(lengths), enforce_sorted=sort)


@pytest.mark.parametrize("sort", [True, False], ids=["sorted", "unsorted"])
def test_packed_sequence_argument(sort):
    """Sorted sequences leave sorted_indices None (bound to None); unsorted ones bring both index
    tensors as inputs. Rerun with other lengths and batch sizes."""
    lengths = [5, 3, 2] if sort else [3, 5, 2]
    others = [[6, 4, 4, 1], [2]] if sort else [[4, 6, 1, 4], [2]]
    names = ["data", "batch_sizes"] + ([] if sort else ["sorted_indices", "unsorted_indices"])
    axes = {"data": {0: "rows"}, "batch_sizes": {0: "steps"}, "sorted_indices": {0: "batch"},
            "unsorted_indices": {0: "batch"}}
    verify(torch.jit.script(PackedLSTM()), (_packed(lengths, sort),), opset_version=17, input_names=names,
           dynamic_axes={name: axes[name] for name in names},
           other_inputs=[(_packed(other, sort),) for other in others])


def test_packed_sequence_argument_needs_opset_11():
    with pytest.raises(Exception, match="opset_version=11"):
        export(torch.jit.script(PackedLSTM()), (_packed([3, 2], True),), None, opset_version=10)
