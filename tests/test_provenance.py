"""Provenance in the file: node metadata_props (module scope, class hierarchy, source lines under
the dynamo exporter's keys), value_info for intermediate values, the model's doc string and
user metadata.

value_info is checked against what onnxruntime computes: every intermediate value of the main
graph is exposed as an output and run, at the traced sizes and at other sizes along the dynamic
axes; a dim we name must take one size wherever that name appears.
"""

from __future__ import annotations

import ast

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

import torchscript_onnx as tso
from torchscript_onnx.pipeline import provenance
from torchscript_onnx.pipeline.serialize import PRODUCER_NAME

HERE = __file__


class Block(torch.nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.proj = torch.nn.Linear(features, features)
        self.scale = torch.nn.Parameter(torch.full((features,), 0.5))

    def forward(self, x):
        return torch.tanh(self.proj(x)) * self.scale  # BLOCK_LINE


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = torch.nn.Sequential(Block(8), Block(8))
        self.head = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.head(self.encoder(x)).softmax(-1)  # NET_LINE


class Looped(torch.nn.Module):
    """Scripted control flow: value_info inside If and Loop bodies."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x, n: int):
        for _ in range(n):
            x = self.lin(x).relu()
        if bool(x.sum() > 0):
            x = x * 2
        return x


def _line(marker: str) -> int:
    with open(HERE, encoding="utf-8") as source:
        return next(k for k, line in enumerate(source, 1) if line.rstrip().endswith(f"# {marker}"))


def _props(node: onnx.NodeProto) -> dict[str, str]:
    return {entry.key: entry.value for entry in node.metadata_props}


def _nodes(proto, op_type: str) -> list[onnx.NodeProto]:
    return [n for n in proto.graph.node if n.op_type == op_type]


def _net_class(cls) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


# -- node metadata --------------------------------------------------------------------------------


@pytest.mark.parametrize("script", [False, True], ids=["traced", "scripted"])
def test_nested_module_nodes_carry_scope_classes_and_source(script):
    model = Net().eval()
    model = torch.jit.script(model) if script else model
    proto = tso.export(model, (torch.randn(2, 8),), None, opset_version=17)
    tanh = _nodes(proto, "Tanh")
    assert len(tanh) == 2
    for k, node in enumerate(tanh):
        props = _props(node)
        assert ast.literal_eval(props[provenance.NAME_SCOPES]) == ["", "encoder", f"encoder.{k}", "tanh"]
        assert ast.literal_eval(props[provenance.CLASS_HIERARCHY]) == [
            _net_class(Net), "torch.nn.modules.container.Sequential", _net_class(Block), "aten::tanh"]
        assert props[provenance.NAMESPACE] == (
            f": {_net_class(Net)}/encoder: torch.nn.modules.container.Sequential/encoder.{k}: "
            f"{_net_class(Block)}/tanh: aten::tanh")
        trace = props[provenance.STACK_TRACE]
        # the innermost frame is Block.forward's line, with its code
        assert trace.endswith(f'File "{HERE}", line {_line("BLOCK_LINE")}' + (", in forward" if not script else "")
                              + "\n    return torch.tanh(self.proj(x)) * self.scale  # BLOCK_LINE")
        if not script:  # the tracer records the whole stack: Net.forward first, outermost first
            assert trace.startswith(f'File "{HERE}", line {_line("NET_LINE")}, in forward')
    # the Linear inside each block: its qualified name and class
    gemm_scopes = sorted(ast.literal_eval(_props(n)[provenance.NAME_SCOPES])[-2] for n in _nodes(proto, "Gemm"))
    assert gemm_scopes == ["encoder.0.proj", "encoder.1.proj", "head"]
    for node in _nodes(proto, "Gemm"):
        assert ast.literal_eval(_props(node)[provenance.CLASS_HIERARCHY])[-2:] == [
            "torch.nn.modules.linear.Linear", "aten::linear"]


def test_every_converted_node_has_metadata():
    proto = tso.export(Net().eval(), (torch.randn(2, 8),), None)
    weights = {init.name for init in proto.graph.initializer}
    for node in proto.graph.node:
        if node.op_type == "Identity" and node.input[0] in weights:
            continue  # the two equal 'scale' weights are stored once: the second name is an Identity
        props = _props(node)
        assert set(props) >= {provenance.NAMESPACE, provenance.CLASS_HIERARCHY, provenance.NAME_SCOPES,
                              provenance.STACK_TRACE}, node.name
        assert HERE in props[provenance.STACK_TRACE]


def test_function_model_gets_the_op_only():
    """A traced function has no module: the op and its line, as dynamo writes nodes without a module."""
    proto = tso.export(lambda x: torch.relu(x) + 1, (torch.randn(3),), None)  # FUNCTION_LINE
    props = _props(_nodes(proto, "Relu")[0])
    assert ast.literal_eval(props[provenance.NAME_SCOPES]) == ["relu"]
    assert ast.literal_eval(props[provenance.CLASS_HIERARCHY]) == ["aten::relu"]
    assert f'File "{HERE}", line {_line("FUNCTION_LINE")}, in <lambda>' in props[provenance.STACK_TRACE]


def test_provenance_off_writes_no_node_metadata_and_no_paths():
    proto = tso.export(Net().eval(), (torch.randn(2, 8),), None, provenance=False)
    assert all(not n.metadata_props for n in proto.graph.node)
    assert HERE.encode() not in proto.SerializeToString()


def test_stack_trace_formats():
    """Tracer stacks: innermost first in, outermost first out, without torch's call machinery and
    the tracer's own frames; scripted ranges: the file, line and marked code."""
    line = _line("BLOCK_LINE")
    traced = ("/site/torch/nn/modules/linear.py(134): forward\n"
              f"{provenance._CALL_MACHINERY[0]}(1768): _call_impl\n"
              f"{HERE}({line}): forward\n"
              f"{provenance._EXPORTER_DIRS[0]}_trace.py(131): wrapper\n"
              "/user/script.py(3): <module>\n")
    assert provenance.stack_trace(traced) == (
        f'File "{HERE}", line {line}, in forward\n    return torch.tanh(self.proj(x)) * self.scale  # BLOCK_LINE'
        '\n  File "/site/torch/nn/modules/linear.py", line 134, in forward')
    scripted = '  File "m.py", line 12\n    def f(x):\n        return x.relu()\n               ~~~~~~ <--- HERE\n'
    assert provenance.stack_trace(scripted) == 'File "m.py", line 12\n    return x.relu()'


# -- value_info -----------------------------------------------------------------------------------


def _exposed(proto: onnx.ModelProto) -> onnx.ModelProto:
    """The model with every main-graph value_info entry also a graph output."""
    proto = onnx.ModelProto.FromString(proto.SerializeToString())
    proto.graph.output.extend(info for info in proto.graph.value_info if info.type.HasField("tensor_type"))
    return proto


def _run_all(proto: onnx.ModelProto, feeds: dict) -> dict[str, np.ndarray]:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3  # declared-vs-actual shape warnings are what this test checks itself
    session = ort.InferenceSession(_exposed(proto).SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds)))


def check_value_info(proto: onnx.ModelProto, feeds: dict) -> int:
    """Every value_info entry of the main graph against onnxruntime's values on ``feeds``:
    dtype, rank, each numbered dim, and one size per dim name (the graph inputs' names included).
    Returns how many entries were checked."""
    values = _run_all(proto, feeds)
    sizes: dict[str, int] = {}
    for info in proto.graph.input:
        if info.name in feeds:
            for dim, size in zip(info.type.tensor_type.shape.dim, feeds[info.name].shape):
                if dim.HasField("dim_param"):
                    sizes.setdefault(dim.dim_param, size)
    checked = 0
    for info in proto.graph.value_info:
        if not info.type.HasField("tensor_type"):
            continue
        tensor_type, got = info.type.tensor_type, np.asarray(values[info.name])
        assert tensor_type.elem_type == onnx.helper.np_dtype_to_tensor_dtype(got.dtype), info.name
        if tensor_type.HasField("shape"):
            dims = tensor_type.shape.dim
            assert len(dims) == got.ndim, (info.name, dims, got.shape)
            for dim, size in zip(dims, got.shape):
                if dim.HasField("dim_value"):
                    assert dim.dim_value == size, (info.name, list(dims), got.shape)
                elif dim.HasField("dim_param"):
                    assert sizes.setdefault(dim.dim_param, size) == size, (info.name, dim.dim_param, got.shape)
        checked += 1
    return checked


def _intermediates(graph: onnx.GraphProto) -> set[str]:
    outputs = {o.name for o in graph.output}
    return {name for node in graph.node for name in node.output if name and name not in outputs}


def _feeds(proto, args) -> dict:
    flat = [a for a in args if isinstance(a, torch.Tensor)]
    return {info.name: t.numpy() for info, t in zip(proto.graph.input, flat)}


def _net_dynamic():
    return Net().eval(), (torch.randn(2, 8),), dict(input_names=["x"], dynamic_axes={"x": {0: "batch"}}), \
        [(torch.randn(5, 8),)]


def _zoo(name):
    def load():
        from bench.zoo import MODELS

        model, args = MODELS[name]()
        return model.eval(), args, {}, []
    return load


def _tiny_cnn():
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(8 * 8 * 8, 10))
    return model.eval(), (torch.randn(2, 3, 16, 16),), \
        dict(input_names=["img"], dynamic_axes={"img": {0: "n"}}), [(torch.randn(3, 3, 16, 16),)]


def _transformer(name):
    def load():
        from bench.transformers_zoo import OTHER_SIZES, TRACED, ZOO

        entry = ZOO[name]
        options = dict(input_names=entry.input_names, output_names=entry.output_names,
                       dynamic_axes=entry.dynamic_axes, opset_version=max(17, entry.min_opset))
        return entry.model(), entry.inputs(*TRACED), options, [entry.inputs(*size) for size in OTHER_SIZES]
    return load


def _flat_feeds(proto, args) -> dict:
    """Feeds by graph input order for args whose trailing dict holds keyword tensors."""
    flat = []
    for arg in args:
        flat += list(arg.values()) if isinstance(arg, dict) else [arg]
    return {info.name: t.numpy() for info, t in zip(proto.graph.input, flat)}


# (id, loader -> (model, args, export options, other args))
VALUE_INFO_CASES = [
    ("net-static", lambda: (Net().eval(), (torch.randn(2, 8),), {}, [])),
    ("net-dynamic", _net_dynamic),
    ("net-scripted", lambda: (torch.jit.script(Net().eval()), (torch.randn(2, 8),),
                              dict(input_names=["x"], dynamic_axes={"x": {0: "batch"}}), [(torch.randn(4, 8),)])),
    ("cnn-bn-folded-dynamic", _tiny_cnn),
    ("resnet18", _zoo("resnet18")),
    ("mobilenet_v2", _zoo("mobilenet_v2")),
    ("inception_v3", _zoo("inception_v3")),
    ("super_resolution", _zoo("super_resolution")),
    ("bert", _transformer("bert")),
    ("gpt2", _transformer("gpt2")),
    ("llama_padded", _transformer("llama_padded")),
    ("t5", _transformer("t5")),
    ("nn_transformer_encoder", _transformer("nn_transformer_encoder")),
]


@pytest.mark.parametrize("load", [c[1] for c in VALUE_INFO_CASES], ids=[c[0] for c in VALUE_INFO_CASES])
def test_value_info_matches_onnxruntime(load):
    model, args, options, others = load()
    proto = tso.export(model, args, None, **options)
    infos = {info.name for info in proto.graph.value_info}
    assert infos == _intermediates(proto.graph)  # every intermediate value has an entry
    onnx.checker.check_model(proto, full_check=True)
    for example in [args, *others]:
        assert check_value_info(proto, _flat_feeds(proto, example)) == len(infos)
    if options.get("dynamic_axes"):  # dynamic dims stay named through the intermediates
        names = {d.dim_param for info in proto.graph.value_info for d in info.type.tensor_type.shape.dim}
        assert names & {name for axes in options["dynamic_axes"].values()
                        for name in (axes.values() if isinstance(axes, dict) else [])}


def test_value_info_agrees_with_onnx_shape_inference():
    """Where onnx's own shape inference (on the model without value_info) knows a dim, ours agrees."""
    model, args, options, _ = _transformer("bert")()
    proto = tso.export(model, args, None, **options)
    bare = tso.export(model, args, None, value_info=False, **options)
    assert not bare.graph.value_info
    inferred = {i.name: i for i in onnx.shape_inference.infer_shapes(bare, strict_mode=True).graph.value_info}
    compared = 0
    for info in proto.graph.value_info:
        theirs = inferred.get(info.name)
        if theirs is None or not theirs.type.HasField("tensor_type"):
            continue
        assert info.type.tensor_type.elem_type == theirs.type.tensor_type.elem_type, info.name
        if not theirs.type.tensor_type.HasField("shape") or not info.type.tensor_type.HasField("shape"):
            continue
        ours_dims, their_dims = info.type.tensor_type.shape.dim, theirs.type.tensor_type.shape.dim
        assert len(ours_dims) == len(their_dims), info.name
        for a, b in zip(ours_dims, their_dims):
            if a.HasField("dim_value") and b.HasField("dim_value"):
                assert a.dim_value == b.dim_value, info.name
                compared += 1
    assert compared > 100


def test_value_info_in_control_flow_bodies():
    model = torch.jit.script(Looped().eval())
    proto = tso.export(model, (torch.randn(2, 4), 3), None, opset_version=17)
    bodies = [a.g for n in proto.graph.node for a in n.attribute if a.type == onnx.AttributeProto.GRAPH]
    assert bodies and any(body.value_info for body in bodies)
    for body in bodies:
        assert {i.name for i in body.value_info} == _intermediates(body)
    onnx.checker.check_model(proto, full_check=True)
    check_value_info(proto, {proto.graph.input[0].name: np.random.randn(2, 4).astype(np.float32),
                             proto.graph.input[1].name: np.array(3, dtype=np.int64)})


def test_value_info_off():
    proto = tso.export(Net().eval(), (torch.randn(2, 8),), None, value_info=False)
    assert not proto.graph.value_info


# -- the model's own metadata ---------------------------------------------------------------------


def test_producer_doc_string_and_user_metadata(tmp_path):
    path = tmp_path / "m.onnx"
    tso.export(Net().eval(), (torch.randn(2, 8),), str(path), metadata_props={"author": "team", "licence": "MIT"})
    proto = onnx.load(str(path))
    assert proto.producer_name == PRODUCER_NAME and proto.producer_version == tso.__version__
    assert {(e.key, e.value) for e in proto.metadata_props} == {("author", "team"), ("licence", "MIT")}
    assert _net_class(Net) in proto.doc_string and "traced" in proto.doc_string and "opset 20" in proto.doc_string
    onnx.checker.check_model(str(path), full_check=True)
    scripted = tso.export(torch.jit.script(Net().eval()), (torch.randn(2, 8),), None)
    assert _net_class(Net) in scripted.doc_string and "scripted" in scripted.doc_string
    assert not scripted.metadata_props  # none unless given


@pytest.mark.parametrize("options, message", [
    (dict(metadata_props=["author"]), "metadata_props must be a dict"),
    (dict(metadata_props={"version": 2}), "str keys to str values"),
    (dict(value_info="yes"), "value_info must be True or False"),
    (dict(provenance=None), "provenance must be True or False"),
])
def test_bad_file_metadata_options_raise_before_writing(tmp_path, options, message):
    path = tmp_path / "m.onnx"
    with pytest.raises(TypeError, match=message):
        tso.export(Net().eval(), (torch.randn(2, 8),), str(path), **options)
    assert not path.exists()
