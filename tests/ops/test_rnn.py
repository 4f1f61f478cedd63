"""Recurrent layers: nn.RNN (tanh, relu), nn.LSTM, nn.GRU, the cells, packed sequences.

One table, run against eager PyTorch through onnxruntime. Most cases export with dynamic batch
and sequence and run again at another size. ONNX RNN/LSTM/GRU exist from opset 7; packed
sequences need integer comparisons (opset 9) and build their ranges with Range from opset 11;
the ``layout`` attribute of opset 14 is not used (onnxruntime runs only layout 0), but 14 is
checked anyway. LSTMs with proj_size become Scans (opset 9).
"""

import io

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from tests.optable import Case, below_min_params, params, run_below_min, run_case
from torchscript_onnx import TrainingMode, export
from torchscript_onnx.verify import check, run_onnxruntime

RNN_OPSETS = (9, 14)
PACKED_OPSETS = (11, 14)
KINDS = ("RNN_TANH", "RNN_RELU", "LSTM", "GRU")
IN, HID = 4, 5


def make_rnn(kind: str, **kwargs) -> nn.Module:
    torch.manual_seed(0)
    if kind.startswith("RNN"):
        return nn.RNN(IN, HID, nonlinearity=kind[4:].lower(), **kwargs)
    return getattr(nn, kind)(IN, HID, **kwargs)


class Run(nn.Module):
    """Runs ``rnn`` on ``x`` and the initial states given as separate inputs (h, or h and c)."""

    def __init__(self, rnn: nn.Module):
        super().__init__()
        self.rnn = rnn

    def forward(self, x, *states):
        if not states:
            return self.rnn(x)
        return self.rnn(x, states if isinstance(self.rnn, nn.LSTM) else states[0])


class Packed(nn.Module):
    """pack_padded_sequence -> rnn -> pad_packed_sequence."""

    def __init__(self, rnn: nn.Module, enforce_sorted=True, padding_value=0.0, total_length=None):
        super().__init__()
        self.rnn = rnn
        self.enforce_sorted, self.padding_value, self.total_length = enforce_sorted, padding_value, total_length

    def forward(self, x, lengths, *states):
        batch_first = self.rnn.batch_first
        packed = pack_padded_sequence(x, lengths, batch_first=batch_first, enforce_sorted=self.enforce_sorted)
        if states:
            out, hidden = self.rnn(packed, states if isinstance(self.rnn, nn.LSTM) else states[0])
        else:
            out, hidden = self.rnn(packed)
        out, out_lengths = pad_packed_sequence(out, batch_first=batch_first, padding_value=self.padding_value,
                                               total_length=self.total_length)
        return out, out_lengths, hidden


def _states(kind: str, layers: int, batch: int) -> tuple:
    count = 2 if kind == "LSTM" else 1
    return tuple(torch.randn(layers, batch, HID) for _ in range(count))


def _dynamic(kind: str, batch_first: bool, packed: bool = False, states: bool = True) -> dict:
    names = ["x"] + (["lengths"] if packed else []) + (["h", "c"] if kind == "LSTM" else ["h"])[:2 if states else 0]
    axes = {"x": {0: "batch", 1: "seq"} if batch_first else {0: "seq", 1: "batch"}}
    if packed:
        axes["lengths"] = {0: "batch"}
    for name in names[1 + packed:]:
        axes[name] = {1: "batch"}
    return {"input_names": names, "dynamic_axes": axes}


def _x(seq: int, batch: int, batch_first: bool) -> torch.Tensor:
    return torch.randn(batch, seq, IN) if batch_first else torch.randn(seq, batch, IN)


def layer_case(kind: str, name: str, layers=1, bidirectional=False, batch_first=False, bias=True,
               dropout=0.0, states=True) -> Case:
    dirs = 2 if bidirectional else 1

    def inputs():
        return (_x(3, 2, batch_first), *(_states(kind, layers * dirs, 2) if states else ()))

    def other():
        return [(_x(6, 4, batch_first), *(_states(kind, layers * dirs, 4) if states else ()))]

    rnn = make_rnn(kind, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first, bias=bias,
                   dropout=dropout)
    # Without states torch makes zeros of the runtime batch size: Expand needs opset 8.
    case = Case(f"{kind.lower()}_{name}", Run(rnn), inputs, min_opset=7 if states else 8, opsets=RNN_OPSETS,
                export_options=_dynamic(kind, batch_first, states=states), other_inputs=other)
    return case


def proj_case(name: str, layers=1, bidirectional=False, batch_first=False, bias=True, proj=3) -> Case:
    """LSTM with proj_size: a Scan per layer and direction (opset 9)."""
    dirs = 2 if bidirectional else 1

    def states(batch):
        return torch.randn(layers * dirs, batch, proj), torch.randn(layers * dirs, batch, HID)

    rnn = make_rnn("LSTM", num_layers=layers, bidirectional=bidirectional, batch_first=batch_first, bias=bias,
                   proj_size=proj)
    return Case(f"lstm_proj_{name}", Run(rnn), lambda: (_x(3, 2, batch_first), *states(2)), min_opset=9,
                opsets=RNN_OPSETS, export_options=_dynamic("LSTM", batch_first),
                other_inputs=lambda: [(_x(6, 4, batch_first), *states(4))])


def packed_case(kind: str, name: str, layers=1, bidirectional=False, batch_first=False, states=True,
                **packing) -> Case:
    dirs = 2 if bidirectional else 1
    sorted_lengths = packing.get("enforce_sorted", True)

    def inputs():
        lengths = torch.tensor([4, 3, 1] if sorted_lengths else [3, 4, 1])
        return (_x(5, 3, batch_first), lengths, *(_states(kind, layers * dirs, 3) if states else ()))

    def other():
        lengths = torch.tensor([7, 5] if sorted_lengths else [5, 7])
        return [(_x(7, 2, batch_first), lengths, *(_states(kind, layers * dirs, 2) if states else ()))]

    rnn = make_rnn(kind, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first)
    # Unsorted lengths are sorted with TopK, which takes integers from opset 11.
    case = Case(f"{kind.lower()}_packed_{name}", Packed(rnn, **packing), inputs, min_opset=9 if sorted_lengths else 11,
                opsets=PACKED_OPSETS,
                export_options=_dynamic(kind, batch_first, packed=True, states=states), other_inputs=other)
    return case


# -- cells ---------------------------------------------------------------------------------------


class Cell(nn.Module):
    def __init__(self, cell: nn.Module):
        super().__init__()
        self.cell = cell

    def forward(self, x, *states):
        if not states:
            return self.cell(x)
        return self.cell(x, states if isinstance(self.cell, nn.LSTMCell) else states[0])


def cell_case(name: str, cell: nn.Module, states: int) -> Case:
    def inputs():
        return (torch.randn(2, IN), *(torch.randn(2, HID) for _ in range(states)))

    def other():
        return [(torch.randn(5, IN), *(torch.randn(5, HID) for _ in range(states)))]

    names = ["x", "h", "c"][:1 + states]
    options = {"input_names": names, "dynamic_axes": {n: {0: "batch"} for n in names}}
    return Case(name, Cell(cell), inputs, min_opset=7 if states else 8, opsets=RNN_OPSETS, export_options=options,
                other_inputs=other)


@torch.jit.script
def _scripted_lstm_cell(x, h, c, w_ih, w_hh, b_ih, b_hh):
    return torch.lstm_cell(x, [h, c], w_ih, w_hh, b_ih, b_hh)


@torch.jit.script
def _scripted_gru_cell(x, h, w_ih, w_hh, b_ih, b_hh):
    return torch.gru_cell(x, h, w_ih, w_hh, b_ih, b_hh)


@torch.jit.script
def _scripted_rnn_tanh_cell(x, h, w_ih, w_hh, b_ih, b_hh):
    return torch.rnn_tanh_cell(x, h, w_ih, w_hh, b_ih, b_hh)


@torch.jit.script
def _scripted_rnn_relu_cell(x, h, w_ih, w_hh, b_ih, b_hh):
    return torch.rnn_relu_cell(x, h, w_ih, w_hh, b_ih, b_hh)


class FusedCell(nn.Module):
    """Calls the fused aten cell op through a scripted function, so the graph keeps it whole."""

    def __init__(self, cell: nn.Module, fn):
        super().__init__()
        self.cell, self.fn = cell, fn

    def forward(self, x, *states):
        c = self.cell
        return self.fn(x, *states, c.weight_ih, c.weight_hh, c.bias_ih, c.bias_hh)


def fused_cell_case(name: str, cell: nn.Module, fn, states: int) -> Case:
    torch.manual_seed(0)
    return Case(name, FusedCell(cell, fn), lambda: (torch.randn(2, IN), *(torch.randn(2, HID) for _ in range(states))),
                min_opset=7, opsets=RNN_OPSETS)


torch.manual_seed(0)
CASES = [
    case
    for kind in KINDS
    for case in (
        layer_case(kind, "states"),
        layer_case(kind, "no_states", states=False),
        layer_case(kind, "2layers_bidirectional_dropout", layers=2, bidirectional=True, dropout=0.3),
        layer_case(kind, "batch_first_bidirectional", bidirectional=True, batch_first=True),
        layer_case(kind, "3layers_batch_first", layers=3, batch_first=True),
        layer_case(kind, "no_bias", bias=False),
        packed_case(kind, "states"),
        packed_case(kind, "2layers_bidirectional", layers=2, bidirectional=True),
        packed_case(kind, "batch_first_no_states", batch_first=True, states=False),
    )
] + [
    packed_case("LSTM", "unsorted", enforce_sorted=False),
    packed_case("GRU", "padding_value_total_length", bidirectional=True, padding_value=-1.5, total_length=9),
    packed_case("LSTM", "batch_first_bidirectional_total_length", bidirectional=True, batch_first=True,
                total_length=8),
    proj_case("states"),
    proj_case("2layers_bidirectional", layers=2, bidirectional=True),
    proj_case("batch_first_bidirectional_no_bias", bidirectional=True, batch_first=True, bias=False),
    Case("lstm_proj_packed_2layers_bidirectional", Packed(make_rnn("LSTM", num_layers=2, bidirectional=True,
                                                                   proj_size=3)),
         lambda: (_x(5, 3, False), torch.tensor([4, 3, 1]), torch.randn(4, 3, 3), torch.randn(4, 3, HID)),
         min_opset=9, opsets=PACKED_OPSETS, export_options=_dynamic("LSTM", False, packed=True),
         other_inputs=lambda: [(_x(7, 2, False), torch.tensor([7, 5]), torch.randn(4, 2, 3), torch.randn(4, 2, HID))]),
    # weights not folded: reordered with Slice/Concat in the graph
    Case("lstm_no_constant_folding", Run(make_rnn("LSTM", num_layers=2, bidirectional=True)),
         lambda: (_x(3, 2, False), *_states("LSTM", 4, 2)), min_opset=7, opsets=RNN_OPSETS,
         export_options={"do_constant_folding": False}),
    Case("gru_no_constant_folding", Run(make_rnn("GRU", bidirectional=True)),
         lambda: (_x(3, 2, False), *_states("GRU", 2, 2)), min_opset=7, opsets=RNN_OPSETS,
         export_options={"do_constant_folding": False}),
    Case("lstm_double", Run(make_rnn("LSTM").double()),
         lambda: tuple(t.double() for t in (_x(3, 2, False), *_states("LSTM", 1, 2))), min_opset=7,
         opsets=RNN_OPSETS).xfail(range(7, 27), "onnxruntime has no float64 LSTM kernel"),
    # traced cells decompose into linear/chunk/activations; fused cells come from scripted code
    cell_case("rnn_cell_tanh", nn.RNNCell(IN, HID), 1),
    cell_case("rnn_cell_relu", nn.RNNCell(IN, HID, nonlinearity="relu"), 1),
    cell_case("rnn_cell_no_state", nn.RNNCell(IN, HID), 0),
    cell_case("lstm_cell", nn.LSTMCell(IN, HID), 2),
    cell_case("lstm_cell_no_state", nn.LSTMCell(IN, HID), 0),
    cell_case("gru_cell", nn.GRUCell(IN, HID), 1),
    cell_case("gru_cell_no_bias", nn.GRUCell(IN, HID, bias=False), 1),
    fused_cell_case("lstm_cell_fused", nn.LSTMCell(IN, HID), _scripted_lstm_cell, 2),
    fused_cell_case("gru_cell_fused", nn.GRUCell(IN, HID), _scripted_gru_cell, 1),
    fused_cell_case("rnn_tanh_cell_fused", nn.RNNCell(IN, HID), _scripted_rnn_tanh_cell, 1),
    fused_cell_case("rnn_relu_cell_fused", nn.RNNCell(IN, HID, nonlinearity="relu"), _scripted_rnn_relu_cell, 1),
]


@pytest.mark.parametrize("case,opset", params(CASES))
def test_rnn(case, opset):
    run_case(case, opset)


@pytest.mark.parametrize("case,opset", below_min_params(CASES))
def test_rnn_below_min_opset(case, opset):
    run_below_min(case, opset)


def _export_error(model, args, **options) -> str:
    with pytest.raises(Exception) as info:
        export(model, args, io.BytesIO(), **options)
    return str(info.value)


def test_dropout_between_layers_in_training_is_a_clear_error():
    model = Run(nn.GRU(IN, HID, num_layers=2, dropout=0.5))
    message = _export_error(model, (torch.randn(3, 2, IN), torch.randn(2, 2, HID)), opset_version=17,
                            training=TrainingMode.TRAINING)
    assert "dropout" in message and "training" in message


def test_rnn_weights_are_reordered_into_one_initializer_per_tensor_kind():
    """Constant weights become one W, R and B initializer per layer; the torch parameters are gone."""
    import onnx

    buffer = io.BytesIO()
    model = Run(nn.LSTM(IN, HID, num_layers=2, bidirectional=True)).eval()
    export(model, (torch.randn(3, 2, IN), *_states("LSTM", 4, 2)), buffer, opset_version=17)
    proto = onnx.load_from_string(buffer.getvalue())
    lstm_nodes = [n for n in proto.graph.node if n.op_type == "LSTM"]
    assert len(lstm_nodes) == 2
    assert len(proto.graph.initializer) == 6
    shapes = sorted(tuple(t.dims) for t in proto.graph.initializer)
    assert shapes == sorted([(2, 4 * HID, IN), (2, 4 * HID, HID), (2, 8 * HID)]
                            + [(2, 4 * HID, 2 * HID), (2, 4 * HID, HID), (2, 8 * HID)])


def test_rnn_weights_are_lazy_until_written():
    """Export holds no reordered copy of the recurrent weights: they are computed while written."""
    from torchscript_onnx import build
    from torchscript_onnx.builder.lazy import LazyTensor

    model = Run(nn.GRU(IN, HID, num_layers=2, bidirectional=True)).eval()
    exported = build(model, (torch.randn(3, 2, IN), torch.randn(4, 2, HID)), opset_version=17)
    tensors = exported.graph.initializers
    assert len(tensors) == 6 and all(isinstance(t, LazyTensor) for t in tensors.values())


@pytest.mark.parametrize("options", [{"keep_initializers_as_inputs": True}, {"do_constant_folding": False}])
def test_rnn_weight_options(options):
    from torchscript_onnx.verify import verify

    model = Run(make_rnn("LSTM", num_layers=2, bidirectional=True)).eval()
    verify(model, (_x(3, 2, False), *_states("LSTM", 4, 2)), opset_version=17, **options)


def test_rnn_weights_as_graph_inputs():
    """export_params=False: the weights are graph inputs, reordered with Slice/Concat at runtime."""
    model = Run(make_rnn("LSTM", num_layers=2, bidirectional=True)).eval()
    x, h, c = _x(3, 2, False), *_states("LSTM", 4, 2)
    buffer = io.BytesIO()
    export(model, (x, h, c), buffer, opset_version=17, export_params=False)
    check(buffer.getvalue())
    with torch.no_grad():
        expected = model(x, h, c)
    feeds = [x, h, c] + [p.detach() for p in model.parameters()]
    actual = run_onnxruntime(buffer.getvalue(), feeds)
    torch.testing.assert_close(torch.from_numpy(actual[0]), expected[0], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(torch.from_numpy(actual[1]), expected[1][0], rtol=1e-4, atol=1e-5)


def test_pack_then_pad_without_rnn():
    """Steps past each length read padding_value even when no RNN wrote them."""

    def roundtrip(x, lengths):
        packed = pack_padded_sequence(x, lengths, batch_first=True)
        return pad_packed_sequence(packed, batch_first=True, padding_value=0.0)

    for opset in (9, 17):
        run_case(Case("pack_pad", roundtrip, lambda: (torch.randn(3, 5, 2), torch.tensor([5, 2, 1])), min_opset=9,
                      export_options=_dynamic("GRU", True, packed=True, states=False),
                      other_inputs=lambda: [(torch.randn(2, 4, 2), torch.tensor([3, 1]))]), opset)
