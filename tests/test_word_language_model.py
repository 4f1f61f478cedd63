"""The word-language model of pytorch/examples (embedding -> RNN -> dropout -> linear -> log_softmax)
for RNN_TANH, RNN_RELU, LSTM and GRU, and a packed-sequence LSTM, exported with dynamic batch and
sequence and checked against eager PyTorch at the traced size and at another size.
"""

import io

import onnx
import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from torchscript_onnx import MAX_OPSET, export
from torchscript_onnx.verify import verify

NTOKEN, NINP, NHID, NLAYERS = 50, 16, 12, 2


class RNNModel(nn.Module):
    """pytorch/examples word_language_model/model.py: encoder, recurrent module, decoder."""

    def __init__(self, rnn_type, ntoken=NTOKEN, ninp=NINP, nhid=NHID, nlayers=NLAYERS, dropout=0.5,
                 tie_weights=False):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type in ("LSTM", "GRU"):
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        else:
            nonlinearity = {"RNN_TANH": "tanh", "RNN_RELU": "relu"}[rnn_type]
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            self.decoder.weight = self.encoder.weight
        self.rnn_type, self.nhid, self.nlayers = rnn_type, nhid, nlayers
        self.init_weights()

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == "LSTM":
            return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))
        return weight.new_zeros(self.nlayers, bsz, self.nhid)


class PackedLSTMModel(RNNModel):
    """The same model over padded batches of sequences of different lengths."""

    def __init__(self):
        super().__init__("LSTM", ninp=NHID, tie_weights=True)

    def forward(self, input, lengths, hidden):
        emb = self.drop(self.encoder(input))
        packed = pack_padded_sequence(emb, lengths)
        output, hidden = self.rnn(packed, hidden)
        output, _ = pad_packed_sequence(output)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden


def _random_hidden(model, batch):
    hidden = model.init_hidden(batch)
    if isinstance(hidden, tuple):
        return tuple(torch.randn_like(h) for h in hidden)
    return torch.randn_like(hidden)


def _export_options(model, packed=False):
    hidden = ["h0", "c0"] if model.rnn_type == "LSTM" else ["h0"]
    names = ["input"] + (["lengths"] if packed else []) + hidden
    axes = {"input": {0: "seq", 1: "batch"}, "output": {0: "seq_x_batch"}}
    if packed:
        axes["lengths"] = {0: "batch"}
    for name in hidden:
        axes[name] = {1: "batch"}
    return {"input_names": names, "output_names": ["output"], "dynamic_axes": axes}


OPSETS = (7, 9, 14, 17, MAX_OPSET)
RNN_TYPES = ("RNN_TANH", "RNN_RELU", "LSTM", "GRU")


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("rnn_type", RNN_TYPES)
def test_word_language_model(rnn_type, opset):
    torch.manual_seed(0)
    # the LSTM model ties the decoder to the encoder (the example's --tied), which needs ninp == nhid
    tied = rnn_type == "LSTM"
    model = RNNModel(rnn_type, ninp=NHID if tied else NINP, tie_weights=tied).eval()
    seq, batch = 6, 3
    args = (torch.randint(0, NTOKEN, (seq, batch)), _random_hidden(model, batch))
    other = (torch.randint(0, NTOKEN, (9, 5)), _random_hidden(model, 5))
    report = verify(model, args, opset_version=opset, other_inputs=[other], rtol=1e-4, atol=1e-5,
                    **_export_options(model))
    assert report.opset == opset


@pytest.mark.parametrize("opset", (9, 11, 14, 17, MAX_OPSET))
def test_packed_sequence_word_language_model(opset):
    torch.manual_seed(0)
    model = PackedLSTMModel().eval()
    args = (torch.randint(0, NTOKEN, (6, 3)), torch.tensor([6, 4, 2]), _random_hidden(model, 3))
    # another batch and sequence length, and a padded length above the longest sequence
    others = [(torch.randint(0, NTOKEN, (9, 4)), torch.tensor([9, 9, 5, 1]), _random_hidden(model, 4)),
              (torch.randint(0, NTOKEN, (5, 2)), torch.tensor([5, 3]), _random_hidden(model, 2))]
    verify(model, args, opset_version=opset, other_inputs=others, rtol=1e-4, atol=1e-5,
           **_export_options(model, packed=True))


def test_word_language_model_graph_is_dynamic():
    """No size of the traced example is baked into the graph: one LSTM node per layer, no Loop."""
    torch.manual_seed(0)
    model = RNNModel("LSTM").eval()
    buffer = io.BytesIO()
    export(model, (torch.randint(0, NTOKEN, (6, 3)), _random_hidden(model, 3)), buffer, opset_version=17,
           **_export_options(model))
    proto = onnx.load_from_string(buffer.getvalue())
    ops = [n.op_type for n in proto.graph.node]
    assert ops.count("LSTM") == NLAYERS and "Loop" not in ops
    dims = {i.name: [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim] for i in proto.graph.input}
    assert dims["input"] == ["seq", "batch"]
    assert dims["h0"] == [NLAYERS, "batch", NHID]
