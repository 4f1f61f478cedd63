"""Recurrent layers at opset 9: RNN (tanh, relu), LSTM, GRU, their fused cells, packed sequences.

torch passes one flat weight list (w_ih, w_hh[, b_ih, b_hh] per layer and direction); ONNX takes
W, R and B stacked over directions, with its own gate order. Weights known at export time are
reordered into lazy initializers, computed direction by direction only while the model is written
(export holds no copy of them; the original parameters are then unused and dropped). Weights
known only at runtime (``export_params=False``) or with ``do_constant_folding=False`` are
reordered in the graph with Slice and Concat. LSTMs with ``proj_size`` (no ONNX equivalent)
become one Scan per layer and direction whose body is an LSTM step plus the projection.

A PackedSequence stays padded here: ``data`` is the time-major padded batch cut to the longest
sequence, and ``batch_sizes`` is torch's (how many sequences are alive at each step), from which
the RNN ops get ONNX's ``sequence_lens``. A PackedSequence given to a scripted model brings torch's
packed rows, which the RNN ops unpack into that padded batch (``padded_from_packed``). Code that
reshapes ``PackedSequence.data`` itself is not supported."""

from __future__ import annotations

import torch

from torchscript_onnx.builder import onnx_ops
from torchscript_onnx.builder.ir import Value
from torchscript_onnx.builder.lazy import LazyTensor

from .. import symbolic_helper as sh
from ..registry import declare_opset_requirements, symbolic


__all__ = ["lstm", "gru", "rnn_tanh", "rnn_relu", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell",
           "_pack_padded_sequence", "_pad_packed_sequence", "padded_from_packed"]

OPSET = declare_opset_requirements({("aten::lstm", "aten::gru", "aten::rnn_tanh", "aten::rnn_relu"): {
    "a PackedSequence's packed rows (a model argument; ONNX CumSum)": 11}}, unlisted={
    "a range of runtime length": 9,
    "proj_size > 0 (ONNX Scan)": 9,
})

# Gate blocks of torch's weights in ONNX order: torch LSTM is i f g o, ONNX i o f c;
# torch GRU is r z n, ONNX z r h (with linear_before_reset=1, torch's formula for n).
GATE_ORDER = {"LSTM": (0, 3, 1, 2), "GRU": (1, 0, 2), "RNN": (0,)}
_ACTIVATION = {"RNN_TANH": "Tanh", "RNN_RELU": "Relu"}


# ---------------------------------------------------------------------------------------------
# Shared lowering


def int_range(g, n) -> Value:
    """0, 1, ..., n-1 as int64: a constant when ``n`` is known, else Range (opset 11) or, before
    that, NonZero over n ones."""
    count = sh.const(n)
    if count is sh.UNKNOWN:
        OPSET.require(g, "a range of runtime length")
    if count is not sh.UNKNOWN:
        count = count.reshape(-1)[0].item() if isinstance(count, torch.Tensor) else int(count)
        return g.constant(torch.arange(count, dtype=torch.int64))
    n = onnx_ops.cast(g, n, torch.int64)
    if onnx_ops.has_op(g, "Range"):
        scalar = onnx_ops.squeeze(g, n, [0]) if n.rank == 1 else n
        return g.op("Range", g.constant(0, torch.int64), scalar, g.constant(1, torch.int64))
    shape = onnx_ops.unsqueeze(g, n, [0]) if n.rank == 0 else n
    ones = g.op("ConstantOfShape", shape, value_t=torch.ones(1, dtype=torch.int64))
    return onnx_ops.squeeze(g, g.op("NonZero", ones), [0])


def lengths_from_batch_sizes(g, batch_sizes: Value, batch: Value, dtype: torch.dtype) -> Value:
    """Sequence lengths (batch,) from torch's batch sizes (steps,): length[b] = #{t: bs[t] > b}."""
    steps = onnx_ops.unsqueeze(g, onnx_ops.cast(g, batch_sizes, torch.int64), [1])
    alive = g.op("Greater", steps, onnx_ops.unsqueeze(g, int_range(g, batch), [0]))
    counts = onnx_ops.cast(g, alive, torch.int32 if dtype == torch.int32 else torch.int64)
    return onnx_ops.cast(g, onnx_ops.reduce(g, "ReduceSum", counts, [0], False), dtype)


def _onnx_weight(g, per_direction: list[list[Value]], order: tuple, hidden: int, kind: str) -> Value:
    """ONNX W, R or B: for each direction, the gate blocks of its tensors in ONNX order,
    concatenated along axis 0; stacked over directions."""
    tensors = [[sh.const(v) for v in parts] for parts in per_direction]
    if g.options.do_constant_folding and all(isinstance(t, torch.Tensor) for ts in tensors for t in ts):
        first = tensors[0][0]
        rows = sum(t.shape[0] for t in tensors[0])
        shape = (len(tensors), rows) + tuple(first.shape[1:])
        sources = [t for ts in tensors for t in ts]
        # Computed direction by direction while the model is written: export holds no copy.
        lazy = LazyTensor(shape, first.dtype, gate_rows, sources, (len(tensors[0]), tuple(order), hidden))
        return g.root.graph.add_initializer(f"onnx::{kind}", lazy, const=False)
    stacked = []
    for parts in per_direction:
        blocks = [part if order == (0,) else onnx_ops.slice(g, part, [0], [k * hidden], [(k + 1) * hidden])
                  for part in parts for k in order]
        joined = blocks[0] if len(blocks) == 1 else g.op("Concat", *blocks, axis_i=0)
        stacked.append(onnx_ops.unsqueeze(g, joined, [0]))
    return stacked[0] if len(stacked) == 1 else g.op("Concat", *stacked, axis_i=0)


def gate_rows(sources, start: int, stop: int, parts: int, order: tuple, hidden: int) -> torch.Tensor:
    """Directions [start, stop) of an ONNX W/R/B: each direction's ``parts`` tensors, their gate
    blocks in ``order``, concatenated along axis 0 (a ``LazyTensor`` recipe)."""
    return torch.stack([
        torch.cat([t[k * hidden:(k + 1) * hidden] for t in sources[d * parts:(d + 1) * parts] for k in order])
        for d in range(start, stop)])


def _layer_state(g, state: Value, layer: int, dirs: int, num_layers: int) -> Value:
    if num_layers == 1:
        return state
    return onnx_ops.slice(g, state, [0], [layer * dirs], [(layer + 1) * dirs])


def generic_rnn(g, mode: str, input: Value, states: list[Value], weights: list[Value], has_biases: bool,
                num_layers: int, dropout: float, train: bool, bidirectional: bool, batch_first: bool = False,
                batch_sizes: Value | None = None):
    """Lower a torch RNN/LSTM/GRU call to one ONNX RNN/LSTM/GRU node per layer.

    Returns (output, h_n) or, for LSTM, (output, h_n, c_n), shaped as torch shapes them."""
    kind = "RNN" if mode in _ACTIVATION else mode
    op = mode.lower()
    gates = len(GATE_ORDER[kind])
    dirs = 2 if bidirectional else 1
    per_layer = 4 if has_biases else 2
    if train and dropout > 0 and num_layers > 1:
        sh.unimplemented(op, "dropout between layers in training mode (ONNX recurrent ops have no dropout)")
    if kind == "LSTM" and len(weights) == num_layers * dirs * (per_layer + 1):
        return projected_lstm(g, input, states, weights, has_biases, num_layers, bidirectional, batch_first,
                              batch_sizes)
    if len(weights) != num_layers * dirs * per_layer:
        sh.value_error(f"{op}: expected {num_layers * dirs * per_layer} weights, got {len(weights)}")
    w_hh = weights[1]
    if sh.rank(w_hh) != 2 or not sh.is_static(w_hh, 0):
        sh.value_error(f"{op}: the hidden size must be known at export time", w_hh)
    hidden = w_hh.shape[0] // gates
    order = GATE_ORDER[kind]
    attrs = {"hidden_size_i": hidden}
    if bidirectional:
        attrs["direction_s"] = "bidirectional"
    if kind == "RNN":
        attrs["activations_s"] = [_ACTIVATION[mode]] * dirs
    if kind == "GRU":
        attrs["linear_before_reset_i"] = 1

    x = g.op("Transpose", input, perm_i=[1, 0, 2]) if batch_first else input
    seq_lens = None
    if batch_sizes is not None:
        seq_lens = lengths_from_batch_sizes(g, batch_sizes, onnx_ops.size(g, x, 1), torch.int32)
    h_outs, c_outs = [], []
    for layer in range(num_layers):
        mine = [weights[(layer * dirs + d) * per_layer:(layer * dirs + d + 1) * per_layer] for d in range(dirs)]
        w = _onnx_weight(g, [[ws[0]] for ws in mine], order, hidden, kind)
        r = _onnx_weight(g, [[ws[1]] for ws in mine], order, hidden, kind)
        b = _onnx_weight(g, [[ws[2], ws[3]] for ws in mine], order, hidden, kind) if has_biases else None
        inputs = [x, w, r, b, seq_lens] + [_layer_state(g, s, layer, dirs, num_layers) for s in states]
        outs = g.op(kind, *inputs, outputs=3 if kind == "LSTM" else 2, **attrs)
        y = outs[0]
        h_outs.append(outs[1])
        if kind == "LSTM":
            c_outs.append(outs[2])
        if bidirectional:
            # ONNX Y is (seq, dirs, batch, hidden); torch wants (seq, batch, dirs * hidden).
            y = g.op("Transpose", y, perm_i=[0, 2, 1, 3])
            x = g.op("Reshape", y, g.constant([0, 0, -1], torch.int64))
        else:
            x = onnx_ops.squeeze(g, y, [1])
    output = g.op("Transpose", x, perm_i=[1, 0, 2]) if batch_first else x
    results = [output]
    for outs in ([h_outs, c_outs] if kind == "LSTM" else [h_outs]):
        results.append(outs[0] if len(outs) == 1 else g.op("Concat", *outs, axis_i=0))
    return tuple(results)


def projected_lstm(g, input: Value, states: list[Value], weights: list[Value], has_biases: bool, num_layers: int,
                   bidirectional: bool, batch_first: bool, batch_sizes: Value | None):
    """LSTM with proj_size > 0: ONNX LSTM has no output projection, so each layer and direction is
    a Scan over time whose body is one LSTM step (torch's gate order) followed by the projection."""
    OPSET.require(g, "proj_size > 0 (ONNX Scan)")
    dirs = 2 if bidirectional else 1
    per_layer = 5 if has_biases else 3
    h0, c0 = states
    x = g.op("Transpose", input, perm_i=[1, 0, 2]) if batch_first else input
    alive = None
    if batch_sizes is not None:  # (seq, batch, 1): whether step t of sequence b exists
        lengths = lengths_from_batch_sizes(g, batch_sizes, onnx_ops.size(g, x, 1), torch.int64)
        steps = onnx_ops.unsqueeze(g, int_range(g, onnx_ops.size(g, x, 0)), [1])
        alive = onnx_ops.unsqueeze(g, g.op("Less", steps, onnx_ops.unsqueeze(g, lengths, [0])), [2])
    h_outs, c_outs = [], []
    for layer in range(num_layers):
        ys = []
        for d in range(dirs):
            k = layer * dirs + d
            ws = [g.materialize(w) for w in weights[k * per_layer:(k + 1) * per_layer]]
            bias = g.op("Add", ws[2], ws[3]) if has_biases else None
            start = [g.op("Gather", s, g.constant(k, torch.int64), axis_i=0) for s in (h0, c0)]
            y, h, c = _projected_scan(g, x, alive, start, ws[0], ws[1], bias, ws[-1], reverse=d == 1)
            ys.append(y)
            h_outs.append(onnx_ops.unsqueeze(g, h, [0]))
            c_outs.append(onnx_ops.unsqueeze(g, c, [0]))
        x = ys[0] if dirs == 1 else g.op("Concat", *ys, axis_i=2)
    output = g.op("Transpose", x, perm_i=[1, 0, 2]) if batch_first else x
    h_n = h_outs[0] if len(h_outs) == 1 else g.op("Concat", *h_outs, axis_i=0)
    c_n = c_outs[0] if len(c_outs) == 1 else g.op("Concat", *c_outs, axis_i=0)
    return output, h_n, c_n


def _projected_scan(g, x: Value, alive: Value | None, start: list[Value], w_ih: Value, w_hh: Value,
                    bias: Value | None, w_hr: Value, reverse: bool):
    """One direction of a projected LSTM layer: (outputs (seq, batch, proj), h_T, c_T). With
    ``alive`` (packed sequences), steps past a sequence's end keep its state and output zeros."""
    from torchscript_onnx.builder.ir import Graph

    hidden, proj = w_hr.shape[1], w_hr.shape[0]
    body = Graph(parent=g.graph)
    b = g.subgraph_context(body)
    h = body.add_input(f"{g.scope}/h", x.dtype, (None, proj))
    c = body.add_input(f"{g.scope}/c", x.dtype, (None, hidden))
    xt = body.add_input(f"{g.scope}/x_t", x.dtype, (None, x.shape[2] if x.shape else None))
    alive_t = None if alive is None else body.add_input(f"{g.scope}/alive_t", torch.bool, (None, 1))
    w_ih, w_hh, w_hr = (g.op("Transpose", w, perm_i=[1, 0]) for w in (w_ih, w_hh, w_hr))
    gates = b.op("Add", b.op("MatMul", xt, w_ih), b.op("MatMul", h, w_hh))
    if bias is not None:
        gates = b.op("Add", gates, bias)
    i, f, cell, o = onnx_ops.split(b, gates, [hidden] * 4, 1)  # torch's order: i f g o
    c_next = b.op("Add", b.op("Mul", b.op("Sigmoid", f), c), b.op("Mul", b.op("Sigmoid", i), b.op("Tanh", cell)))
    h_next = b.op("MatMul", b.op("Mul", b.op("Sigmoid", o), b.op("Tanh", c_next)), w_hr)
    y_t = b.op("Identity", h_next)
    if alive_t is not None:
        c_next = b.op("Where", alive_t, c_next, c)
        y_t = b.op("Where", alive_t, h_next, b.constant(0.0, x.dtype))
        h_next = b.op("Where", alive_t, h_next, h)
    body.outputs = [h_next, c_next, y_t]
    scanned = [x] if alive is None else [x, alive]
    h_t, c_t, y = g.op("Scan", *start, *scanned, body_g=body, num_scan_inputs_i=len(scanned),
                       scan_input_directions_is=[int(reverse)] * len(scanned), scan_output_directions_is=[int(reverse)],
                       outputs=3)
    seq, batch = (x.shape[0], x.shape[1]) if x.shape else (None, None)
    h_t.dtype = c_t.dtype = y.dtype = x.dtype
    h_t.shape, c_t.shape, y.shape = (batch, proj), (batch, hidden), (seq, batch, proj)
    return y, h_t, c_t


def _parse_rnn_args(mode: str, args: tuple):
    """(input, batch_sizes, states, weights, has_biases, num_layers, dropout, train, bidirectional,
    batch_first) from either overload of aten::lstm/gru/rnn_*."""
    packed = _is_list(args[3])
    if packed:  # .data(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional)
        input, batch_sizes, hx, params = args[:4]
        rest, batch_first = args[4:9], False
    else:  # .input(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
        input, hx, params = args[:3]
        batch_sizes = None
        rest, batch_first = args[3:8], sh._get_const(args[8], "b", "batch_first")
    has_biases = sh._get_const(rest[0], "b", "has_biases")
    num_layers = sh._get_const(rest[1], "i", "num_layers")
    dropout = sh._get_const(rest[2], "f", "dropout")
    train = sh._get_const(rest[3], "b", "train")
    bidirectional = sh._get_const(rest[4], "b", "bidirectional")
    states = sh.unpack_list(hx) if mode == "LSTM" else [hx]
    weights = sh.unpack_list(params)
    return (input, batch_sizes, states, weights, has_biases, num_layers, dropout, train, bidirectional,
            batch_first)


def _is_list(v) -> bool:
    return isinstance(v, Value) and (v.elements is not None or (v.is_const and isinstance(v.const, (list, tuple))))


def _rnn(g, mode: str, args: tuple):
    (input, batch_sizes, states, weights, has_biases, num_layers, dropout, train, bidirectional,
     batch_first) = _parse_rnn_args(mode, args)
    if batch_sizes is not None and input.rank == 2:  # torch's packed rows: a PackedSequence given to the model
        input = padded_from_packed(g, input, batch_sizes)
    return generic_rnn(g, mode, input, states, weights, has_biases, num_layers, dropout, train, bidirectional,
                       batch_first, batch_sizes)


# ---------------------------------------------------------------------------------------------
# Layers


@symbolic("aten::lstm")
def lstm(g, *args):
    """lstm.input(Tensor input, Tensor[] hx, Tensor[] params, bool has_biases, int num_layers,
    float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor, Tensor);
    lstm.data(Tensor data, Tensor batch_sizes, Tensor[] hx, Tensor[] params, bool has_biases,
    int num_layers, float dropout, bool train, bool bidirectional) -> (Tensor, Tensor, Tensor)"""
    return _rnn(g, "LSTM", args)


@symbolic("aten::gru")
def gru(g, *args):
    """gru.input(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers,
    float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor);
    gru.data(Tensor data, Tensor batch_sizes, Tensor hx, Tensor[] params, bool has_biases,
    int num_layers, float dropout, bool train, bool bidirectional) -> (Tensor, Tensor)"""
    return _rnn(g, "GRU", args)


@symbolic("aten::rnn_tanh")
def rnn_tanh(g, *args):
    """rnn_tanh.input(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers,
    float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor);
    rnn_tanh.data(Tensor data, Tensor batch_sizes, Tensor hx, Tensor[] params, bool has_biases,
    int num_layers, float dropout, bool train, bool bidirectional) -> (Tensor, Tensor)"""
    return _rnn(g, "RNN_TANH", args)


@symbolic("aten::rnn_relu")
def rnn_relu(g, *args):
    """rnn_relu.input(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers,
    float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor);
    rnn_relu.data(Tensor data, Tensor batch_sizes, Tensor hx, Tensor[] params, bool has_biases,
    int num_layers, float dropout, bool train, bool bidirectional) -> (Tensor, Tensor)"""
    return _rnn(g, "RNN_RELU", args)


# ---------------------------------------------------------------------------------------------
# Cells (they reach the graph from scripted models; tracing decomposes them into linear ops)


def _cell(g, mode: str, input, states, w_ih, w_hh, b_ih, b_hh):
    has_biases = not sh.is_none(b_ih)
    weights = [w_ih, w_hh] + ([b_ih, b_hh] if has_biases else [])
    x = onnx_ops.unsqueeze(g, input, [0])
    states = [onnx_ops.unsqueeze(g, s, [0]) for s in states]
    results = generic_rnn(g, mode, x, states, weights, has_biases, 1, 0.0, False, False)
    return tuple(onnx_ops.squeeze(g, s, [0]) for s in results[1:])


@symbolic("aten::lstm_cell")
def lstm_cell(g, input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """lstm_cell(Tensor input, Tensor[] hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None,
    Tensor? b_hh=None) -> (Tensor, Tensor)"""
    return _cell(g, "LSTM", input, sh.unpack_list(hx), w_ih, w_hh, b_ih, b_hh)


@symbolic("aten::gru_cell")
def gru_cell(g, input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """gru_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None,
    Tensor? b_hh=None) -> Tensor"""
    return _cell(g, "GRU", input, [hx], w_ih, w_hh, b_ih, b_hh)[0]


@symbolic("aten::rnn_tanh_cell")
def rnn_tanh_cell(g, input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """rnn_tanh_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None,
    Tensor? b_hh=None) -> Tensor"""
    return _cell(g, "RNN_TANH", input, [hx], w_ih, w_hh, b_ih, b_hh)[0]


@symbolic("aten::rnn_relu_cell")
def rnn_relu_cell(g, input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """rnn_relu_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None,
    Tensor? b_hh=None) -> Tensor"""
    return _cell(g, "RNN_RELU", input, [hx], w_ih, w_hh, b_ih, b_hh)[0]


# ---------------------------------------------------------------------------------------------
# Packed sequences


@symbolic("aten::_pack_padded_sequence")
@sh.parse_args("v", "v", "b")
def _pack_padded_sequence(g, input, lengths, batch_first):
    """_pack_padded_sequence(Tensor input, Tensor lengths, bool batch_first) -> (Tensor, Tensor)"""
    x = g.op("Transpose", input, perm_i=[1, 0] + list(range(2, input.rank))) if batch_first else input
    lengths = onnx_ops.cast(g, lengths, torch.int64)
    longest = onnx_ops.reduce(g, "ReduceMax", lengths, [0], True)
    steps = int_range(g, longest)
    # batch_sizes[t] = #{b: lengths[b] > t}, for t < max(lengths), as torch computes it.
    alive = g.op("Less", onnx_ops.unsqueeze(g, steps, [1]), onnx_ops.unsqueeze(g, lengths, [0]))
    batch_sizes = onnx_ops.reduce(g, "ReduceSum", onnx_ops.cast(g, alive, torch.int64), [1], False)
    data = x if _same_length(x, steps) else g.op("Gather", x, steps, axis_i=0)
    return data, batch_sizes


def _same_length(x: Value, steps: Value) -> bool:
    return sh.is_static(x, 0) and sh.is_static(steps, 0) and x.shape[0] == steps.shape[0]


def padded_from_packed(g, data: Value, batch_sizes: Value) -> Value:
    """torch's packed rows (sum of the lengths, features), step t's batch_sizes[t] rows one block
    after the other, as the padded batch this module keeps instead (steps, batch, features),
    zeros past each sequence's end."""
    OPSET.require(g, "a PackedSequence's packed rows (a model argument; ONNX CumSum)", data)
    sizes = onnx_ops.cast(g, batch_sizes, torch.int64)
    starts = g.op("Sub", g.op("CumSum", sizes, g.constant(0, torch.int64)), sizes)  # each step's first row
    positions = int_range(g, g.op("Gather", sizes, g.constant(0, torch.int64), axis_i=0))  # 0 .. batch-1
    alive = g.op("Less", onnx_ops.unsqueeze(g, positions, [0]), onnx_ops.unsqueeze(g, sizes, [1]))
    rows = g.op("Add", onnx_ops.unsqueeze(g, starts, [1]), onnx_ops.unsqueeze(g, positions, [0]))
    padded = g.op("Gather", data, g.op("Where", alive, rows, g.constant(0, torch.int64)), axis_i=0)
    return g.op("Where", onnx_ops.unsqueeze(g, alive, [2]), padded, g.constant(0, data.dtype))


@symbolic("aten::_pad_packed_sequence")
@sh.parse_args("v", "v", "b", "f", "v")
def _pad_packed_sequence(g, data, batch_sizes, batch_first, padding_value, total_length):
    """_pad_packed_sequence(Tensor data, Tensor batch_sizes, bool batch_first, Scalar padding_value,
    int total_length) -> (Tensor, Tensor)"""
    lengths = lengths_from_batch_sizes(g, batch_sizes, onnx_ops.size(g, data, 1), torch.int64)
    # Steps past each sequence's end hold padding_value in torch. The padded data kept here holds
    # whatever came in (onnxruntime's RNN ops happen to write zeros there, the spec does not say).
    steps = int_range(g, onnx_ops.size(g, data, 0))
    alive = g.op("Less", onnx_ops.unsqueeze(g, steps, [1]), onnx_ops.unsqueeze(g, lengths, [0]))
    alive = onnx_ops.unsqueeze(g, alive, list(range(2, data.rank)))
    data = g.op("Where", alive, data, g.constant(padding_value, data.dtype))
    if not _is_steps_of(total_length, batch_sizes, data):
        data = _pad_steps(g, data, total_length, padding_value)
    if batch_first:
        data = g.op("Transpose", data, perm_i=[1, 0] + list(range(2, data.rank)))
    return data, lengths


def _is_steps_of(total_length: Value, batch_sizes: Value, data: Value) -> bool:
    """Whether ``total_length`` is ``batch_sizes.size(0)`` (what pad_packed_sequence passes when
    the caller gives none): then data already has that many steps."""
    known = sh.const(total_length)
    if known is not sh.UNKNOWN:
        return sh.is_static(data, 0) and data.shape[0] == int(known)
    node = total_length.producer
    if node is None or node.op_type != "Gather" or node.inputs[0].producer is None:
        return False
    shape = node.inputs[0].producer
    index = sh.const(node.inputs[1])
    return shape.op_type == "Shape" and shape.inputs[0] is batch_sizes and index is not sh.UNKNOWN \
        and int(index) == 0


def _pad_steps(g, data: Value, total_length: Value, padding_value: float) -> Value:
    """Append steps of ``padding_value`` up to ``total_length`` (torch requires it >= the longest)."""
    length = onnx_ops.cast(g, total_length, torch.int64) if isinstance(total_length, Value) \
        and not total_length.is_const else g.constant(int(sh.const(total_length)), torch.int64)
    missing = g.op("Sub", onnx_ops.unsqueeze(g, length, [0]) if length.rank == 0 else length,
                   onnx_ops.unsqueeze(g, onnx_ops.size(g, data, 0), [0]))
    rest = onnx_ops.slice(g, onnx_ops.shape_of(g, data), [0], [1], [data.rank])
    fill = g.op("ConstantOfShape", g.op("Concat", missing, rest, axis_i=0),
                value_t=torch.tensor([padding_value], dtype=data.dtype))
    return g.op("Concat", data, fill, axis_i=0)
