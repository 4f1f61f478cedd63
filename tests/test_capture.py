"""Capture: the legacy argument rules, the captured graph's inputs and parameters, and the
promise that the model is left exactly as it was (flags, buffers, requires_grad, global flags)."""

from __future__ import annotations

import contextlib
import io
import sys

import pytest
import torch

import torchscript_onnx as tso
from torchscript_onnx import api
from torchscript_onnx.pipeline import capture
from torchscript_onnx.builder.options import TrainingMode


def _x():
    return torch.randn(2, 3)


class Keywords(torch.nn.Module):
    def forward(self, x, y=None, z=2.0):
        return x * z if y is None else x + y


X, Y = _x(), _x()

# (id, model, args, kwargs, expected positional args)
NORMALIZE_CASES = [
    ("tensor", Keywords(), X, None, (X, None, 2.0)),
    ("tuple", Keywords(), (X, Y), None, (X, Y, 2.0)),
    ("trailing-dict", Keywords(), (X, {"z": 3.0}), None, (X, None, 3.0)),
    ("kwargs", Keywords(), (X,), {"y": Y}, (X, Y, 2.0)),
    ("kwargs-and-dict", Keywords(), (X, {"y": Y}), {"z": 4.0}, (X, {"y": Y}, 4.0)),
    ("empty-trailing-dict", Keywords(), (X, {}), None, (X, None, 2.0)),
    ("list-is-one-arg", Keywords(), [X, Y], None, ([X, Y], None, 2.0)),
]


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return a is b
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(p, q) for p, q in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


@pytest.mark.parametrize("model, args, kwargs, expected",
                         [pytest.param(*row[1:], id=row[0]) for row in NORMALIZE_CASES])
def test_normalize_args_follows_the_legacy_rules(model, args, kwargs, expected):
    assert _same(capture.normalize_args(model, args, kwargs), expected)


def test_normalize_args_errors_name_args():
    with pytest.raises(TypeError, match="args: keyword argument"):
        capture.normalize_args(Keywords(), (X, {"w": 1}), None)
    with pytest.raises(TypeError, match="args do not fit"):
        capture.normalize_args(Keywords(), (X, Y, 1.0, 2.0), None)
    with pytest.raises(TypeError, match="args: the model's forward needs 'x'"):
        capture.normalize_args(Keywords(), (), None)


def test_trace_capture_names_parameters_by_state_dict_keys():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    captured = capture.capture(model, (_x(),), TrainingMode.EVAL)
    assert [name for _, name, _ in captured.params] == list(model.state_dict())
    assert len(captured.user_inputs) == 1


def test_trace_capture_flattens_nested_inputs():
    def fn(x, pair, table):
        return x + pair[0] * pair[1][0] + table["a"]

    args = (_x(), (_x(), [_x()]), {"a": _x()}, {})
    captured = capture.capture(fn, capture.normalize_args(fn, args, None), TrainingMode.EVAL)
    assert len(captured.user_inputs) == 4


def test_script_capture_checks_the_number_of_inputs():
    scripted = torch.jit.script(torch.nn.Linear(3, 4))
    with pytest.raises(TypeError, match="args"):
        capture.capture(scripted, (_x(), _x()), TrainingMode.EVAL)


# -- the model is left as it was -----------------------------------------------------------------


class Stateful(torch.nn.Module):
    """Changes its own state in forward: a counter, a reassigned cache, running stats."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(3, 3)
        self.norm = torch.nn.BatchNorm1d(3)
        self.register_buffer("count", torch.zeros(()))
        self.register_buffer("cache", torch.zeros(3))

    def forward(self, x):
        self.count += 1
        self.cache = x.mean(0).detach()
        return self.norm(self.linear(x)) + self.cache


@pytest.mark.parametrize("mode", list(TrainingMode))
def test_buffers_flags_and_requires_grad_come_back(mode):
    model = Stateful().train()
    model.linear.eval()
    model.linear.bias.requires_grad_(False)
    flags = [m.training for m in model.modules()]
    buffers = {name: b.clone() for name, b in model.named_buffers()}
    objects = {name: b for name, b in model.named_buffers()}
    params = {name: p.detach().clone() for name, p in model.named_parameters()}
    grads = {name: p.requires_grad for name, p in model.named_parameters()}
    tso.export(model, (torch.randn(4, 3),), None, training=mode, do_constant_folding=False)
    assert [m.training for m in model.modules()] == flags
    for name, b in model.named_buffers():
        assert b is objects[name], name
        assert torch.equal(b, buffers[name]), name
    for name, p in model.named_parameters():
        assert torch.equal(p, params[name]) and p.requires_grad == grads[name], name


def test_state_comes_back_when_capture_fails():
    class Fails(Stateful):
        def forward(self, x):
            super().forward(x)
            raise RuntimeError("model bug")

    model = Fails().train()
    before = {name: b.clone() for name, b in model.named_buffers()}
    with pytest.raises(RuntimeError, match="model bug"):
        tso.export(model, (torch.randn(4, 3),), None, training=TrainingMode.TRAINING)
    assert all(torch.equal(b, before[name]) for name, b in model.named_buffers())
    assert model.training and all(m.training for m in model.modules())
    assert not tso.is_in_onnx_export() and not torch.onnx.is_in_onnx_export()


def test_export_flags_and_module_map_are_restored():
    previous_map = getattr(torch.jit._trace, "_trace_module_map", None)
    seen = []

    class Probe(torch.nn.Module):
        def forward(self, x):
            seen.append((tso.is_in_onnx_export(), torch.onnx.is_in_onnx_export(),
                         torch.jit._trace._trace_module_map is not None))
            return x + 1

    tso.export(Probe(), (_x(),))
    assert seen == [(True, True, True)]
    assert getattr(torch.jit._trace, "_trace_module_map", None) is previous_map
    assert not tso.is_in_onnx_export() and not torch.onnx.is_in_onnx_export()


def test_a_buffer_resized_in_forward_comes_back():
    class Resizes(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("history", torch.arange(3.0))

        def forward(self, x):
            self.history.resize_(5).fill_(7.0)
            return x + 1

    model = Resizes()
    try:
        tso.export(model, (_x(),), None)
    except tso.OnnxExporterError:
        pass  # whether resize_ converts or not, the buffer must come back
    assert torch.equal(model.history, torch.arange(3.0))


# -- old-style ScriptModule subclasses (@torch.jit.script_method) --------------------------------


class OldStyleAffine(torch.jit.ScriptModule):
    """A ScriptModule subclass: its forward is a ScriptMethod whose signature still lists self."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(3))

    @torch.jit.script_method
    def forward(self, x, scale: float = 2.0):
        return x * self.weight * scale


class OldStylePair(torch.jit.ScriptModule):
    @torch.jit.script_method
    def forward(self, x, y):
        return x - y, x * y


# (id, model, args, kwargs, expected positional args); as for torch.jit.script'ed modules, a
# default stays out of the args (capture binds it from the schema)
OLD_STYLE_CASES = [
    ("one-tensor", OldStyleAffine(), X, None, (X,)),
    ("tuple", OldStylePair(), (X, Y), None, (X, Y)),
    ("trailing-dict", OldStyleAffine(), (X, {"scale": 3.0}), None, (X, 3.0)),
    ("kwargs", OldStylePair(), (X,), {"y": Y}, (X, Y)),
]


@pytest.mark.parametrize("model, args, kwargs, expected",
                         [pytest.param(*row[1:], id=row[0]) for row in OLD_STYLE_CASES])
def test_old_style_script_module_args_bind_without_self(model, args, kwargs, expected):
    assert _same(capture.normalize_args(model, args, kwargs), expected)


def test_old_style_script_module_arity_errors_do_not_count_self():
    with pytest.raises(TypeError, match=r"forward\(x, y\)"):
        capture.normalize_args(OldStylePair(), (X, Y, X), None)


@pytest.mark.parametrize("model, args", [(OldStyleAffine(), (X,)), (OldStylePair(), (X, Y))],
                         ids=["affine", "pair"])
def test_old_style_script_module_exports_and_matches_eager(model, args):
    from torchscript_onnx.verify import verify

    report = verify(model, args, opset_version=17)
    assert report.comparisons


# -- torch's fused transformer path is never captured ---------------------------------------------


class SelfAttention(torch.nn.Module):
    def __init__(self, batch_first: bool):
        super().__init__()
        self.attention = torch.nn.MultiheadAttention(8, 2, batch_first=batch_first)

    def forward(self, x, mask):
        return self.attention(x, x, x, key_padding_mask=mask, need_weights=False)[0]


class Encoder(torch.nn.Module):
    def __init__(self, batch_first: bool, layers: int | None):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=batch_first)
        self.encoder = layer if layers is None else torch.nn.TransformerEncoder(layer, layers)

    def forward(self, x, mask):
        return self.encoder(x, src_key_padding_mask=mask)


def _sequences(batch_first: bool, length: int):
    """Inputs and a key padding mask: the first sequence padded after 2 tokens, the other not."""
    x = torch.randn(3, length, 8) if batch_first else torch.randn(length, 3, 8)
    mask = torch.zeros(3, length, dtype=torch.bool)
    mask[0, 2:] = True
    return x, mask


# id, module factory, batch_first
FAST_PATH_CASES = [
    ("encoder", lambda: Encoder(True, 2), True),
    ("encoder-seq-first", lambda: Encoder(False, 2), False),
    ("encoder-layer", lambda: Encoder(True, None), True),
    ("multihead-attention", lambda: SelfAttention(True), True),
    ("multihead-attention-seq-first", lambda: SelfAttention(False), False),
]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("make, batch_first", [pytest.param(m, b, id=i) for i, m, b in FAST_PATH_CASES])
def test_transformers_with_padding_masks_export_their_plain_path(make, batch_first):
    """In eval mode without grad, torch runs these through fused kernels and nested tensors that
    ONNX cannot express; capture takes the plain path (as the legacy exporter, which traces with
    grad enabled). Checked at the traced length and another one, where the mask is False (at
    padded positions the fused path writes zeros, the plain path does not)."""
    import io

    from torchscript_onnx.verify import run_onnxruntime

    torch.manual_seed(0)
    model = make().eval()
    seq = 1 if batch_first else 0
    axes = {"x": {seq: "length", 1 - seq: "batch"}, "mask": {0: "batch", 1: "length"}, "out": {seq: "length"}}
    buffer = io.BytesIO()
    tso.export(model, _sequences(batch_first, 5), buffer, input_names=["x", "mask"], output_names=["out"],
               dynamic_axes=axes, opset_version=17)
    assert torch.backends.mha.get_fastpath_enabled()
    for length in (5, 7):
        x, mask = _sequences(batch_first, length)
        with torch.no_grad():
            expected = model(x, mask)
        (actual,) = run_onnxruntime(buffer.getvalue(), [x, mask])
        kept = ~mask if batch_first else ~mask.T
        torch.testing.assert_close(torch.from_numpy(actual)[kept], expected[kept], rtol=1e-4, atol=1e-5)


class Failing(torch.nn.Module):
    def forward(self, x, mask):
        raise RuntimeError("forward fails")


@pytest.mark.parametrize("before", [True, False], ids=["enabled", "disabled"])
@pytest.mark.parametrize("model", [Encoder(True, 1).eval(), Failing()], ids=["export", "failed-export"])
def test_transformer_fast_path_switch_comes_back(model, before):
    previous = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(before)
    try:
        if isinstance(model, Failing):
            with pytest.raises(RuntimeError, match="forward fails"):
                tso.export(model, _sequences(True, 4), None, opset_version=17)
        else:
            tso.export(model, _sequences(True, 4), None, opset_version=17)
        assert torch.backends.mha.get_fastpath_enabled() is before
    finally:
        torch.backends.mha.set_fastpath_enabled(previous)


class Nested(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU())

    def forward(self, x):
        return self.inner(x) * 2


class Convolutions(torch.nn.Module):
    """Module calls, a functional call, one line run twice, a module called twice, and a module
    made in forward (outside the module map: no scope of its own)."""

    def __init__(self):
        super().__init__()
        self.convs = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.Conv2d(4, 4, 3))
        self.shared = torch.nn.Conv2d(4, 4, 1)

    def forward(self, x):
        x = self.convs(x)
        for _ in range(2):
            x = torch.nn.functional.conv2d(x, self.shared.weight, padding=1)
        x = self.shared(self.shared(x))
        return torch.nn.Hardtanh(0.0, 6.0)(x) + 1


def _image():
    return torch.randn(1, 3, 12, 12, generator=torch.Generator().manual_seed(0))


def test_nodes_a_line_records_share_one_source_text(monkeypatch):
    # Every traced node holds a copy of the Python stack (~2 KB); the convolution's constants and
    # lists hold the same text as the convolution and are given its copy while the trace runs.
    copies = []
    copy_metadata = torch._C.Node.copyMetadata

    def counting(node, other):
        copies.append((node.sourceRange(), other.sourceRange(), node.scopeName(), other.scopeName()))
        return copy_metadata(node, other)

    monkeypatch.setattr(torch._C.Node, "copyMetadata", counting)
    capture.capture(Convolutions(), (_image(),), TrainingMode.EVAL)
    convolutions = 6
    assert len(copies) >= 10 * convolutions  # each records its constants and lists from one stack
    assert all(text == other and scope == other_scope for text, other, scope, other_scope in copies)


@pytest.mark.parametrize("provenance", [True, False])
def test_shared_source_texts_change_no_byte_of_the_file(monkeypatch, provenance):
    # The names come from the nodes' scopes and the doc strings from their texts: both are kept.
    def export():
        f = io.BytesIO()
        tso.export(Convolutions(), (_image(),), f, provenance=provenance)
        return f.getvalue()

    torch.manual_seed(0)
    shared = export()
    monkeypatch.setattr(capture, "_source_ranges_shared_while_tracing", contextlib.nullcontext)
    torch.manual_seed(0)
    assert export() == shared


def test_the_sharing_hook_is_gone_after_export():
    hooks = dict(torch.nn.modules.module._global_forward_hooks)
    tso.export(Convolutions(), (_image(),), io.BytesIO())
    assert dict(torch.nn.modules.module._global_forward_hooks) == hooks


def test_the_traced_graph_is_freed_before_the_file_is_made(monkeypatch):
    # Each traced node holds ~2 KB of stack text: the graph must not live through optimisation and
    # serialisation. Python references to it (the captured inputs, the last converted node, the
    # converter's reference cycle) kept DenseNet-121's 12 MB graph alive until the export ended.
    traced = []
    trace_graph = torch.jit._get_trace_graph

    def recording(*args, **kwargs):
        graph, outputs = trace_graph(*args, **kwargs)
        traced.append(graph)
        return graph, outputs

    monkeypatch.setattr(torch.jit, "_get_trace_graph", recording)
    references = []
    optimize = api.optimize

    def counting(*args, **kwargs):
        references.append(sys.getrefcount(traced[0]) - 1)  # less getrefcount's argument
        return optimize(*args, **kwargs)

    monkeypatch.setattr(api, "optimize", counting)
    api.build(Nested(), (_x(),))
    assert references == [1]  # when optimisation starts, only the test's list holds the graph


def test_export_goes_on_when_no_thread_can_be_started(monkeypatch):
    # Giving heap pages back while tracing is a saving, not a need: under a process limit on
    # threads the export still runs, only without it.
    def refuse(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(capture.threading.Thread, "start", refuse)
    model = Nested()
    proto = tso.export(model, (_x(),))
    assert [node.op_type for node in proto.graph.node].count("Gemm") == 1
