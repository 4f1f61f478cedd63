"""Scripted models (torch.jit.script modules and functions, torch.jit.save archives) with real
control flow: each is exported at opsets 11, 13, 17, 20 and 26 and checked in onnxruntime
against PyTorch on inputs that take different branches and trip counts. Models with
data-dependent control flow must export real ONNX If / Loop nodes.
"""

from __future__ import annotations

import io
from typing import List, Optional, Tuple

import onnx
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from torchscript_onnx import export
from torchscript_onnx.verify import verify

OPSETS = (11, 13, 17, 20, 26)


class ForAccumulate(nn.Module):
    def forward(self, x, n: int):
        acc = torch.zeros_like(x)
        for i in range(n):
            acc = acc + x * i
        return acc


class WhileDataStop(nn.Module):
    def forward(self, x):
        steps = 0
        while bool(x.abs().sum() < 100.0) and steps < 20:
            x = x * 2.0 + 1.0
            steps += 1
        return x, steps


class EarlyExit(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x.relu() * 2
        y = x - 1
        return y.abs()


class ListThenCat(nn.Module):
    def forward(self, x, n: int):
        parts: List[torch.Tensor] = []
        for i in range(n):
            parts.append(x * (i + 1))
        return torch.cat(parts, 0), len(parts)


class ListWhileStack(nn.Module):
    """A list filled by a while loop with a data-dependent stop, then stacked."""

    def forward(self, x):
        rows: List[torch.Tensor] = []
        while bool(x.abs().sum() < 50.0):
            x = x * 2.0 + 0.5
            rows.append(x)
        rows.append(x.neg())
        return torch.stack(rows, 1), len(rows)


class ListReadInLoop(nn.Module):
    """A list the loop body also reads: it must be carried as a sequence (ONNX Loop, opset 13)."""

    def forward(self, x, n: int):
        parts: List[torch.Tensor] = [x]
        for i in range(n):
            parts.append(parts[-1] * 0.5 + float(len(parts)))
        return torch.cat(parts, 0)


class SliceAssignInLoop(nn.Module):
    """Writes into views of an outer tensor inside a loop and a branch (``out[:, i] = v``)."""

    def forward(self, x, n: int):
        out = torch.zeros(x.size(0), n)
        for i in range(n):
            out[:, i] = x.sum(1) * i
            row = out[0]
            row += 1.0
            if bool(x[0, 0] > 0):
                out[1:, i] -= 2.0
        return out


class SliceAssignInBranch(nn.Module):
    def forward(self, x):
        y = x.clone()
        if bool(y.sum() > 0):
            y[0] = 0.0
            y[:, 1:] *= 2.0
        else:
            y.t()[0].fill_(-1.0)
        return y + 1


class ViewReadAfterLoop(nn.Module):
    """Views made before a loop that writes into their base: read after it, read and written in it."""

    def forward(self, x, n: int):
        y = x.clone()
        col = y[:, 0]
        row = y[1]
        for i in range(n):
            y.mul_(2.0)
            row[i % 3] = row.sum()
        return col + 1, row, y


class InPlaceInLoop(nn.Module):
    """In-place updates of an outer tensor inside a loop and a branch: mutated values are carried."""

    def forward(self, x, n: int):
        acc = torch.zeros_like(x)
        for i in range(n):
            acc.add_(x)
            if bool(acc.sum() > 3.0):
                acc.mul_(0.5)
        return acc


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.scale = 0.5

    def forward(self, x):
        return self.lin(x) * self.scale


class WithSubmodules(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = Scaled()
        self.b = Scaled()
        self.use_b = True
        self.repeats = 2
        self.register_buffer("offset", torch.linspace(-1, 1, 4))

    def forward(self, x):
        for _ in range(self.repeats):
            x = self.a(x)
        if self.use_b:
            x = self.b(x)
        if x.mean() > 0:
            x = x + self.offset
        return x


class Numbers(nn.Module):
    """Python int/float/bool math on runtime values, Optional and None checks, method tuples."""

    def pair(self, x) -> Tuple[torch.Tensor, int]:
        return x * 2, x.size(0)

    def forward(self, x, k: int, bias: Optional[torch.Tensor] = None):
        y, rows = self.pair(x)
        m = int(x.sum() > 0) + k // 2
        if bias is not None:
            y = y + bias
        if m > 1 and rows >= 2:
            y = y * float(m)
        return y, m


@torch.jit.script
def scripted_function(x, y):
    if bool((x > y).all()):
        return x - y
    out = x
    for _ in range(3):
        out = out + y
    return out


class CellLoopLM(nn.Module):
    """A word-language model stepping an RNN cell over time in a scripted loop."""

    def __init__(self, ntoken=30, ninp=8, nhid=10):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.cell = nn.GRUCell(ninp, nhid)
        self.decoder = nn.Linear(nhid, ntoken)

    def forward(self, tokens, hidden):
        emb = self.encoder(tokens)
        outputs: List[torch.Tensor] = []
        for t in range(emb.size(0)):
            hidden = self.cell(emb[t], hidden)
            outputs.append(hidden)
        out = torch.stack(outputs, 0)
        return F.log_softmax(self.decoder(out), dim=-1), hidden


class WordLanguageModel(nn.Module):
    """pytorch/examples' word-language model (embedding -> LSTM -> linear -> log_softmax), scripted."""

    def __init__(self, ntoken=30, ninp=8, nhid=8, nlayers=2):
        super().__init__()
        self.ntoken = ntoken
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers)
        self.decoder = nn.Linear(nhid, ntoken)

    def forward(self, tokens, h0, c0):
        emb = self.encoder(tokens)
        output, (h, c) = self.rnn(emb, (h0, c0))
        decoded = self.decoder(output).view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), h, c


class RunningMaxOptional(nn.Module):
    """An Optional that is None until the loop's first step, tested for None inside and after it."""

    def forward(self, x):
        best: Optional[torch.Tensor] = None
        for k in range(x.size(0)):
            row = x[k]
            if best is None:
                best = row
            else:
                best = torch.maximum(best, row)
        if best is None:
            return x.sum(0) - 1.0
        return best * 2.0


def _archive():
    buffer = io.BytesIO()
    torch.jit.save(torch.jit.script(WhileDataStop()), buffer)
    buffer.seek(0)
    return torch.jit.load(buffer)


def _x(*values):
    return torch.tensor(values, dtype=torch.float32)


# name -> (model factory, example args, other args, expected control-flow ops, lowest opset[, export options])
CASES = {
    "for_accumulate": (lambda: torch.jit.script(ForAccumulate()), (torch.randn(3), 4),
                       [(torch.randn(3), 0), (torch.randn(3), 1), (torch.randn(3), 7)], {"Loop"}, 11),
    "while_data_stop": (lambda: torch.jit.script(WhileDataStop()), (_x(0.1, -0.2, 0.3),),
                        [(_x(50.0, 60.0, 1.0),), (_x(3.0, 1.0, 2.0),), (_x(-0.001, 0.0, 0.0),)], {"Loop"}, 11),
    "early_exit": (lambda: torch.jit.script(EarlyExit()), (_x(1.0, 2.0, -0.5),),
                   [(_x(-1.0, -2.0, 0.5),), (_x(0.0, 0.0, 0.0),)], {"If"}, 11),
    "list_then_cat": (lambda: torch.jit.script(ListThenCat()), (torch.randn(2, 3), 3),
                      [(torch.randn(2, 3), 1), (torch.randn(2, 3), 5)], {"Loop"}, 11),
    "list_while_stack": (lambda: torch.jit.script(ListWhileStack()), (_x(0.1, -0.2, 0.3),),
                         [(_x(40.0, 9.0, 0.5),), (_x(3.0, 1.0, 2.0),), (_x(60.0, 0.0, 0.0),)], {"Loop"}, 11),
    "list_read_in_loop": (lambda: torch.jit.script(ListReadInLoop()), (torch.randn(2, 3), 3),
                          [(torch.randn(2, 3), 0), (torch.randn(2, 3), 5)], {"Loop", "SequenceInsert"}, 13),
    "slice_assign_in_loop": (lambda: torch.jit.script(SliceAssignInLoop()), (torch.randn(2, 3), 3),
                             [(torch.randn(2, 3), 0), (-torch.ones(2, 3), 4), (torch.ones(2, 3), 2)],
                             {"Loop", "If"}, 11),
    "slice_assign_in_branch": (lambda: torch.jit.script(SliceAssignInBranch()), (torch.rand(3, 4),),
                               [(-torch.rand(3, 4),), (torch.rand(3, 4) - 0.6,)], {"If"}, 11),
    "view_read_after_loop": (lambda: torch.jit.script(ViewReadAfterLoop()), (torch.randn(2, 3), 2),
                             [(torch.randn(2, 3), 0), (torch.randn(2, 3), 5)], {"Loop"}, 11),
    "in_place_in_loop": (lambda: torch.jit.script(InPlaceInLoop()), (_x(0.5, 0.25, 1.0), 4),
                         [(_x(0.1, 0.1, 0.1), 2), (_x(2.0, 1.0, 1.0), 6), (_x(1.0, 1.0, 1.0), 0)],
                         {"Loop", "If"}, 11),
    "submodules": (lambda: torch.jit.script(WithSubmodules().eval()), (torch.randn(2, 4),),
                   [(torch.randn(2, 4) * 5,), (-torch.randn(2, 4).abs() * 5,)], {"If"}, 11),
    "numbers": (lambda: torch.jit.script(Numbers()), (_x(1.0, 2.0), 3),
                [(_x(-1.0, -2.0), 3), (_x(1.0, 2.0), 0), (_x(-1.0, 0.5), 5)], {"If"}, 11),
    "function": (lambda: scripted_function, (_x(3.0, 4.0), _x(1.0, 2.0)),
                 [(_x(0.0, 4.0), _x(1.0, 2.0)), (_x(-3.0, 4.0), _x(1.0, 2.0))], {"If", "Loop"}, 11),
    # language models: dynamic sequence and batch, so other inputs step the loop other numbers of times
    "cell_loop_language_model": (lambda: torch.jit.script(CellLoopLM().eval()),
                                 (torch.randint(0, 30, (5, 2)), torch.randn(2, 10)),
                                 [(torch.randint(0, 30, (9, 3)), torch.randn(3, 10)),
                                  (torch.randint(0, 30, (1, 1)), torch.randn(1, 10))], {"Loop"}, 11,
                                 {"input_names": ["tokens", "hidden"],
                                  "dynamic_axes": {"tokens": [0, 1], "hidden": [0]}}),
    "word_language_model": (lambda: torch.jit.script(WordLanguageModel().eval()),
                            (torch.randint(0, 30, (5, 2)), torch.randn(2, 2, 8), torch.randn(2, 2, 8)),
                            [(torch.randint(0, 30, (7, 3)), torch.randn(2, 3, 8), torch.randn(2, 3, 8))],
                            set(), 11, {"input_names": ["tokens", "h0", "c0"],
                                        "dynamic_axes": {"tokens": [0, 1], "h0": [1], "c0": [1]}}),
    "running_max_optional": (lambda: torch.jit.script(RunningMaxOptional()), (torch.randn(3, 4),),
                             [(torch.randn(1, 4),), (torch.randn(0, 4),), (torch.randn(6, 4),)],
                             {"Loop", "If", "OptionalHasElement"}, 16,
                             {"input_names": ["x"], "dynamic_axes": {"x": [0]}}),
    "saved_archive": (_archive, (_x(0.1, -0.2, 0.3),), [(_x(50.0, 60.0, 1.0),), (_x(1.0, 2.0, 3.0),)],
                      {"Loop"}, 11),
}


def _ops(graph: onnx.GraphProto) -> set[str]:
    found = set()
    for node in graph.node:
        found.add(node.op_type)
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                found |= _ops(attr.g)
    return found


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_scripted_model(name, opset):
    factory, args, others, control_ops, min_opset, *options = CASES[name]
    options = options[0] if options else {}
    torch.manual_seed(0)
    model = factory()
    if opset < min_opset:
        with pytest.raises(Exception, match=f"opset {min_opset}"):
            export(model, args, io.BytesIO(), opset_version=opset, **options)
        return
    verify(model, args, opset_version=opset, other_inputs=others, rtol=1e-4, atol=1e-5, **options)
    buffer = io.BytesIO()
    export(model, args, buffer, opset_version=opset, **options)
    ops = _ops(onnx.load_from_string(buffer.getvalue()).graph)
    assert control_ops <= ops, f"expected {control_ops} in the graph, found {sorted(ops)}"


def test_constant_condition_folds():
    class Flag(nn.Module):
        def __init__(self):
            super().__init__()
            self.training_mode = False

        def forward(self, x):
            if self.training_mode:
                return x * 2
            return x + 1

    buffer = io.BytesIO()
    export(torch.jit.script(Flag()), (torch.randn(3),), buffer, opset_version=17)
    assert "If" not in _ops(onnx.load_from_string(buffer.getvalue()).graph)


def test_raise_in_untaken_branch():
    class Checked(nn.Module):
        def forward(self, x):
            if x.dim() != 2:
                raise ValueError("expected a matrix")
            if bool(x.sum() > 100):
                raise RuntimeError("too large")
            print("checked")
            return x * 3

    verify(torch.jit.script(Checked()), (torch.randn(2, 3),), opset_version=17)



def test_scripted_nodes_carry_module_scopes():
    buffer = io.BytesIO()
    export(torch.jit.script(WithSubmodules().eval()), (torch.randn(2, 4),), buffer, opset_version=17)
    graph = onnx.load_from_string(buffer.getvalue()).graph
    names = {node.name for node in graph.node}
    loop_body = next(node for node in graph.node if node.op_type == "Loop").attribute[0].g
    assert "/b/lin/Gemm" in names and "/a/lin/Gemm" in {node.name for node in loop_body.node}


def test_module_scopes_ignore_scope_names_left_in_compiled_code():
    """The legacy exporter writes its scope names (``/linear``) into the compiled code a scripted
    model's submodules share with every later instance of their class: exported after it in the
    same process, our node names still follow the model being exported."""

    class Holder(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(4, 4)

        def forward(self, x):
            return self.linear(x)

    torch.onnx.export(torch.jit.script(Holder().eval()), (torch.randn(2, 4),), io.BytesIO(), dynamo=False)
    left = {node.scopeName() for node in torch.jit.script(nn.Linear(4, 4)).graph.nodes()} - {""}
    assert left, "the legacy export left no scope name in nn.Linear's compiled code to ignore"
    test_scripted_nodes_carry_module_scopes()


def test_scripted_modules_as_functions():
    model = torch.jit.script(WithSubmodules().eval())
    args, others = (torch.randn(2, 4),), [(torch.randn(2, 4) * 5,)]
    verify(model, args, opset_version=17, export_modules_as_functions={Scaled}, other_inputs=others)
    buffer = io.BytesIO()
    export(model, args, buffer, opset_version=17, export_modules_as_functions={Scaled})
    proto = onnx.load_from_string(buffer.getvalue())
    assert [(f.domain, f.name) for f in proto.functions] == [(Scaled.__module__, "Scaled")]
    assert "Scaled" in {node.op_type for node in proto.graph.node}


class NoneUnlessLong(nn.Module):
    def forward(self, x) -> Optional[torch.Tensor]:
        out: Optional[torch.Tensor] = None
        if x.size(0) > 2:
            out = x + 1
        return out


class NoneWhenLong(nn.Module):
    def forward(self, x) -> Optional[torch.Tensor]:
        out: Optional[torch.Tensor] = x * 3
        if x.size(0) > 2:
            out = None
        return out


class SetInLoop(nn.Module):
    def forward(self, x) -> Optional[torch.Tensor]:
        out: Optional[torch.Tensor] = None
        for k in range(x.size(0)):
            out = x - k
        return out


class ClearedInLoop(nn.Module):
    def forward(self, x) -> Optional[torch.Tensor]:
        out: Optional[torch.Tensor] = x
        for _ in range(x.size(0)):
            out = None
        return out


OPTIONAL_OUTPUTS = {"none_unless_long": NoneUnlessLong, "none_when_long": NoneWhenLong,
                    "set_in_loop": SetInLoop, "cleared_in_loop": ClearedInLoop}


@pytest.mark.parametrize("opset", (16, 20, 26))
@pytest.mark.parametrize("name", sorted(OPTIONAL_OUTPUTS))
def test_optional_output(name, opset):
    """An Optional output that is None on some paths is an ONNX optional (in the graph's output and
    every branch), None in onnxruntime exactly where PyTorch returns None, else the same tensor."""
    import onnxruntime

    model = torch.jit.script(OPTIONAL_OUTPUTS[name]())
    buffer = io.BytesIO()
    export(model, (torch.ones(1),), buffer, opset_version=opset, input_names=["x"], dynamic_axes={"x": {0: "n"}})
    proto = onnx.load_from_string(buffer.getvalue())
    expected = onnx.helper.make_optional_type_proto(onnx.helper.make_tensor_type_proto(onnx.TensorProto.FLOAT, ("n",)))
    assert proto.graph.output[0].type == expected
    for node in proto.graph.node:
        for attr in node.attribute:
            if node.op_type == "If":
                assert attr.g.output[0].type.HasField("optional_type")
    session = onnxruntime.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
    for n in (0, 1, 2, 3, 5):
        x = torch.randn(n)
        (got,) = session.run(None, {"x": x.numpy()})
        want = model(x)
        assert (got is None) == (want is None), f"n={n}: onnxruntime {got}, PyTorch {want}"
        if want is not None:
            torch.testing.assert_close(torch.from_numpy(got), want)


def test_optional_needs_opset_16():
    with pytest.raises(Exception, match="opset 16"):
        export(torch.jit.script(NoneUnlessLong()), (torch.ones(3),), io.BytesIO(), opset_version=15,
               input_names=["x"], dynamic_axes={"x": {0: "n"}})
