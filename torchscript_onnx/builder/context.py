"""GraphContext: what a symbolic function receives as ``g``.

``g.op("Relu", x)`` emits a node (or folds it when every input is known), applies the shape rules
and returns its output value(s). Attribute names carry their ONNX type as a suffix, as in the
legacy exporter: ``_i _f _s _t _g`` (a list value makes them plural), ``_is _fs _ss _ts`` spelled
out, or no suffix to infer the type from the value. ``"domain::Op"`` targets a custom domain.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import torch

from . import folding, onnx_ops, shapes
from .ir import UNKNOWN, Graph, Node, Value
from .options import ExportOptions

_ATTR_SUFFIX = re.compile(r"^(.+)_(is|fs|ss|ts|gs|i|f|s|t|g)$")
# Constants at most this large become Constant nodes; larger ones become initializers.
MAX_CONSTANT_NODE_ELEMENTS = 16


@dataclasses.dataclass(eq=False)
class GraphContext:
    graph: Graph
    opset: int
    options: ExportOptions
    training: bool = False
    original_node: Any = None  # the torch._C.Node being converted, for prim symbolics
    scope: str = ""  # "/layer1/0/conv1": names the nodes a symbolic emits
    source: str = ""  # "model.py:42"
    origin: Any = None  # ir.Origin of the JIT node being converted: stamped on every node emitted
    # Values whose dims named in dynamic_axes must stay symbolic: no trusted trace sizes.
    dynamic: bool = False
    custom_domains: dict[str, int] = dataclasses.field(default_factory=dict)
    # (domain, name) -> FunctionProto of the onnxscript functions g.onnxscript_op called (root context)
    onnxscript_functions: dict[tuple[str, str], Any] = dataclasses.field(default_factory=dict)
    # id(tensor) -> state_dict key, for parameters reached through attributes (scripted modules)
    param_names: dict[int, str] = dataclasses.field(default_factory=dict)
    _params: dict[int, Value] = dataclasses.field(default_factory=dict)
    # ids of the graph constants materialize() made initializers (legacy keeps them as Constant nodes)
    constant_initializers: set[int] = dataclasses.field(default_factory=set)
    # Set inside If/Loop bodies: the context of the enclosing graph.
    parent: GraphContext | None = None
    # The converter's side of control flow (convert.Converter sets it): converting a JIT block, as a
    # subgraph or inline, and reading or rebinding what a JIT value of the graph stands for. Symbolics
    # reach it through the four methods below, never directly.
    converter: Any = None
    # Constants materialised in this subgraph (outer values must not point into a subgraph):
    # id(value) -> (value, local copy).
    _local: dict[int, tuple] = dataclasses.field(default_factory=dict)
    # A body a legacy symbolic opened with ``node.addBlock()`` (compat.LegacyBlock): the context
    # ``dataclasses.replace(g, block=block)`` makes emits into it, as legacy's
    # ``jit_utils.add_op_with_blocks`` expects.
    block: Any = None

    def __post_init__(self):
        if self.block is not None and self.block.context is None:
            outer = dataclasses.replace(self, block=None)
            self.graph, self.parent, self._local = Graph(parent=outer.graph), outer, {}
            self.block.open(self, self.graph)

    @property
    def root(self) -> GraphContext:
        ctx = self
        while ctx.parent is not None:
            ctx = ctx.parent
        return ctx

    def subgraph_context(self, graph: Graph) -> GraphContext:
        """A context that emits into ``graph``, a body nested in this context's graph."""
        return dataclasses.replace(self, graph=graph, parent=self, _local={})

    def convert_block(self, block, inputs: list[Value], **extra):
        """Convert a JIT block into a subgraph with ``inputs``; returns (Graph, block outputs).
        ``extra``: ``mutated``/``carried``/``scanned``/``finish`` (see Converter.convert_subgraph)."""
        return self.converter.convert_subgraph(self, block, inputs, **extra)

    def inline_block(self, block) -> list[Value]:
        """Convert a JIT block's nodes into this graph; returns the block's output values."""
        return self.converter.inline_block(self, block)

    def value_of(self, jit_value) -> Value:
        """What a JIT value converted so far stands for (an outer value a block reads or mutates)."""
        return self.converter.value_of(jit_value)

    def rebind(self, jit_value, value: Value) -> None:
        """Point a JIT value that the node being converted mutates (a list a loop appends to, a
        tensor a branch writes) at its new value: later readers of ``jit_value`` get ``value``."""
        self.converter.rebind(jit_value, value)

    # legacy spelling
    @property
    def opset_version(self) -> int:
        return self.opset

    def onnxscript_op(self, onnx_fn, *args, outputs: int = 1, **attributes):
        """``g.onnxscript_op(fn, *inputs, **attributes)``: a call of an onnxscript function
        (``@script``) as a node in its domain; its FunctionProto goes into the model (as legacy)."""
        try:
            import onnxscript  # noqa: F401, PLC0415 - an optional dependency
        except ImportError as error:
            raise ImportError("g.onnxscript_op needs onnxscript (an optional dependency): pip install onnxscript") \
                from error
        if not hasattr(onnx_fn, "to_function_proto") or not hasattr(onnx_fn, "opset"):
            raise TypeError(f"g.onnxscript_op expects an onnxscript function (decorated with @script(opset)); "
                            f"got {type(onnx_fn).__name__}")
        proto = onnx_fn.to_function_proto()
        domain, version = onnx_fn.opset.domain, onnx_fn.opset.version
        if not domain:
            raise ValueError(f"onnxscript function {proto.name} must live in a custom domain: "
                             "@script(Opset('my.domain', 1))")
        root = self.root
        root.onnxscript_functions[(domain, proto.name)] = proto
        root.custom_domains[domain] = version
        for entry in proto.opset_import:  # the ops its body calls
            if entry.domain:
                root.custom_domains.setdefault(entry.domain, entry.version)
        return self.op(f"{domain}::{proto.name}", *args, outputs=outputs, **attributes)

    def op(self, opname: str, *inputs, outputs: int = 1, **attributes):
        domain, op_type = _split_domain(opname)
        # As in legacy, whose helpers pass both: a tensor input is a constant, a None value an
        # omitted input.
        inputs = [self.constant(v) if isinstance(v, torch.Tensor) else None if isinstance(v, Value) and v.is_none
                  else v for v in inputs]
        attrs = _parse_attributes(attributes)
        folded = self._try_fold(domain, op_type, inputs, attrs, outputs)
        if folded is not None:
            self._keep_weight_fold(op_type, inputs, attrs, folded)
            return folded[0] if outputs == 1 else tuple(folded)
        node_inputs = [self.materialize(v) for v in inputs]
        if domain:
            self.custom_domains.setdefault(domain, self.options.custom_opsets.get(domain, 1))
        node = self.graph.add_node(op_type, domain, node_inputs, attrs, outputs, self.scope, self.source, self.origin)
        shapes.infer(node)
        return node.outputs[0] if outputs == 1 else tuple(node.outputs)

    def at(self, operator: str, *inputs, overload_name: str = "", **attributes):
        """An ATen fallback node: ``org.pytorch.aten::ATen`` naming the aten op it stands for."""
        return self.op("org.pytorch.aten::ATen", *inputs, operator_s=operator, overload_name_s=overload_name,
                       **attributes)

    aten_op = at  # legacy spelling

    def constant(self, value, dtype: torch.dtype | None = None) -> Value:
        """A constant value: Python number, list or tensor, optionally cast to ``dtype``."""
        tensor = as_tensor(value, dtype)
        return Value("", tensor.dtype, tuple(tensor.shape), tensor)

    def param(self, tensor: torch.Tensor) -> Value:
        """The initializer holding ``tensor`` (one per tensor, named by its state_dict key)."""
        value = self._params.get(id(tensor))
        if value is None:
            name = self.param_names.get(id(tensor), "param")
            value = self._params[id(tensor)] = self.root.graph.add_initializer(name, tensor.detach())
            value.from_weight = True
        return value

    def output_dtype(self, k: int = 0) -> torch.dtype | None:
        """The dtype the trace recorded for output ``k`` of the node being converted."""
        node = self.original_node
        if node is None or k >= node.outputsSize():
            return None
        jit_type = node.outputsAt(k).type()
        if not isinstance(jit_type, torch._C.TensorType) or jit_type.scalarType() is None:
            return None
        from .dtypes import SCALAR_NAME_TO_TORCH

        dtype = SCALAR_NAME_TO_TORCH.get(jit_type.scalarType())
        # a quantized tensor is its dequantized float inside the converter (symbolic/ops/quantized.py)
        return torch.float32 if dtype in (torch.quint8, torch.qint8, torch.qint32) else dtype

    def materialize(self, value: Value | None) -> Value | None:
        """Return ``value`` as a graph value, emitting its constant or list once if needed."""
        if value is None:
            return None
        if not isinstance(value, Value):
            raise TypeError(f"expected a graph value as node input, got {type(value).__name__}: {value!r}")
        if value.in_graph:
            return value
        if self.parent is not None:
            return self._materialize_local(value)
        if value.elements is not None:
            return self._list_to_tensor(value)
        if not value.is_const or value.const is None:
            raise TypeError(f"{value!r} has no graph representation")
        tensor = as_tensor(value.const, None)
        # Constant-1 (opsets 7-8) holds only float tensors; other constants go to initializers, and
        # so do values computed from weights, as in the legacy exporter (named in legacy_names.py).
        constant_node_ok = self.opset >= 9 or tensor.dtype in (torch.float16, torch.float32, torch.float64)
        if tensor.numel() <= MAX_CONSTANT_NODE_ELEMENTS and constant_node_ok and not value.from_weight:
            node = self.graph.add_node("Constant", "", [], {"value": ("t", tensor)}, 1, self.scope, self.source,
                                       self.origin)
            out = node.outputs[0]
            value.name, value.producer = out.name, node
            node.outputs[0] = value
        else:
            name = self.graph.value_names.fresh(f"onnx::{value.name or 'Constant'}")
            self.graph.initializers[name] = tensor
            value.name, value.is_param = name, True
            self.constant_initializers.add(id(value))
        value.dtype, value.shape = tensor.dtype, tuple(tensor.shape)
        if not isinstance(value.const, torch.Tensor):
            value.const = tensor
        return value

    def _materialize_local(self, value: Value) -> Value:
        """In a subgraph, constants get a fresh local node (large ones a root initializer), so the
        shared value never points into a scope the outer graph cannot see."""
        entry = self._local.get(id(value))
        if entry is not None and entry[0] is value:
            return entry[1]
        if value.elements is not None:
            copy = Value("", elements=value.elements)
            local = self._list_to_tensor(copy)
        elif not value.is_const or value.const is None:
            raise TypeError(f"{value!r} has no graph representation")
        else:
            tensor = as_tensor(value.const, None)
            if tensor.numel() > MAX_CONSTANT_NODE_ELEMENTS:
                local = self.root.materialize(value)
            else:
                local = self.graph.add_node("Constant", "", [], {"value": ("t", tensor)}, 1, self.scope,
                                            self.source, self.origin).outputs[0]
                local.dtype, local.shape, local.const = tensor.dtype, tuple(tensor.shape), tensor
        self._local[id(value)] = (value, local)  # the value is kept alive so its id is not reused
        return local

    def _list_to_tensor(self, value: Value) -> Value:
        """A list of int scalars (some known only at runtime) as one 1-D int64 tensor."""
        parts = []
        for element in value.elements:
            if element.is_const:
                parts.append(self.constant([int(element.const)], torch.int64))
            else:
                scalar = element if element.dtype == torch.int64 else self.op("Cast", element, to_i=7)
                parts.append(onnx_ops.unsqueeze(self, scalar, [0]) if scalar.rank == 0 else scalar)
        out = self.op("Concat", *parts, axis_i=0)
        value.name, value.producer, value.dtype, value.shape = out.name, out.producer, out.dtype, out.shape
        value.producer.outputs[0] = value
        return value

    def legacy_only(self, values: int = 1, folds: int = 0) -> None:
        """The legacy exporter's conversion of the node being converted makes ``values`` values
        more than this one (it keeps a node where this conversion returns the input), ``folds``
        of them computed later by its constant folding: they count in the numbers legacy's names
        carry (legacy_names.py)."""
        if self.parent is None:
            self.graph.legacy_only.append((len(self.graph.nodes), values, folds))

    def _keep_weight_fold(self, op_type: str, inputs, attrs: dict, outputs: list[Value]) -> None:
        """A node folded here that reads a weight is one the legacy exporter's graph has until its
        own constant folding: kept aside (``Graph.folded``), as legacy's numbering counts it."""
        if self.parent is not None or not any(v is not None and v.from_weight for v in inputs):
            return
        node = Node(op_type, "", inputs, attrs, "", self.scope, self.source, self.origin)
        for value in outputs:
            value.from_weight = True
            node.outputs.append(value)
        self.graph.folded.append((len(self.graph.nodes), node))

    def _try_fold(self, domain, op_type, inputs, attrs, outputs):
        if domain or op_type not in folding.FOLDERS:
            return None
        tensors = []
        for v in inputs:
            if v is None:
                tensors.append(None)
                continue
            if not isinstance(v, Value) or not v.is_const or v.const is None:
                return None
            if v.is_param and not self.options.do_constant_folding:
                return None
            tensors.append(as_tensor(v.const, None))
        plain = {name: value for name, (_, value) in attrs.items()}
        results = folding.fold(op_type, tensors, plain)
        if results is None or len(results) != outputs:
            return None
        return [Value("", t.dtype, tuple(t.shape), t) for t in results]


def _split_domain(opname: str) -> tuple[str, str]:
    if "::" not in opname:
        return "", opname
    domain, op_type = opname.split("::", 1)
    return ("" if domain == "onnx" else domain), op_type


def _parse_attributes(attributes: dict) -> dict[str, tuple[str, Any]]:
    parsed = {}
    for key, value in sorted(attributes.items()):
        if value is None:
            continue
        match = _ATTR_SUFFIX.match(key)
        if match:
            name, kind = match.group(1), match.group(2)
            if isinstance(value, (list, tuple)) and len(kind) == 1:
                kind += "s"
        else:
            name, kind = key, _infer_kind(key, value)
        parsed[name] = (kind, _coerce(kind, value))
    return parsed


def _infer_kind(key: str, value) -> str:
    if isinstance(value, bool) or isinstance(value, int):
        return "i"
    if isinstance(value, float):
        return "f"
    if isinstance(value, str):
        return "s"
    if isinstance(value, torch.Tensor):
        return "t"
    if isinstance(value, (list, tuple)) and value:
        return _infer_kind(key, value[0]) + "s"
    raise TypeError(f"cannot infer the ONNX attribute type of {key}={value!r}; add a suffix such as {key}_i")


def _coerce(kind: str, value):
    if kind == "i":
        return int(value)
    if kind == "f":
        return float(value)
    if kind == "is":
        return [int(v) for v in value]
    if kind == "fs":
        return [float(v) for v in value]
    if kind == "t" and not isinstance(value, torch.Tensor):
        return torch.tensor(value)
    return value


def as_tensor(value, dtype: torch.dtype | None) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        tensor = value
    elif isinstance(value, bool):
        tensor = torch.tensor(value, dtype=torch.bool)
    elif isinstance(value, int):
        tensor = torch.tensor(value, dtype=torch.int64)
    elif isinstance(value, float):
        # float64 constants are made in float64: through float32 they would lose digits (or become inf)
        tensor = torch.tensor(value, dtype=torch.float64 if dtype == torch.float64 else torch.float32)
    elif isinstance(value, (list, tuple)):
        if value and all(isinstance(v, torch.Tensor) for v in value):
            tensor = torch.stack(list(value))
        elif all(isinstance(v, bool) for v in value) and value:
            tensor = torch.tensor(value, dtype=torch.bool)
        elif all(isinstance(v, int) for v in value):
            tensor = torch.tensor(value, dtype=torch.int64)
        else:
            tensor = torch.tensor(value, dtype=torch.float32)
    else:
        raise TypeError(f"cannot turn {value!r} into a tensor")
    return tensor if dtype is None or tensor.dtype == dtype else tensor.to(dtype)


def node_of(value: Value) -> Node | None:
    return value.producer


__all__ = ["GraphContext", "UNKNOWN", "as_tensor"]
