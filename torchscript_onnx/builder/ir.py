"""The graph being built: values, nodes, initializers.

A ``Value`` knows its dtype (a ``torch.dtype``), its shape (a tuple of ints, symbolic dim names
(str) or None for unknown dims; None when even the rank is unknown), and, when known at export
time, its constant (``const``): a Python number, list, string, None, torch.Tensor, or any other
Python object the JIT graph carries (a module, a device). Constants stay Python values until a
node needs them as a tensor input; then ``GraphContext.materialize`` emits them once.

A value built by ``prim::ListConstruct`` from runtime values keeps them in ``elements``.
The torch._C.Value calls that legacy custom symbolics make are answered by ``compat.py``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

from .compat import LegacyValueSurface


class _Unknown:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()


class Value(LegacyValueSurface):
    __slots__ = ("name", "dtype", "shape", "const", "producer", "elements", "is_param", "sym", "sequence",
                 "optional", "jit_type", "from_weight", "legacy_fold")

    def __init__(self, name: str, dtype=None, shape=None, const=UNKNOWN, producer=None, elements=None):
        self.name = name
        self.dtype: torch.dtype | None = dtype
        self.shape: tuple | None = shape
        self.const = const
        self.producer: Node | None = producer
        self.elements: list[Value] | None = elements
        self.is_param = False
        # A runtime scalar known to equal a symbolic dim ("batch"): lets shapes built from sizes
        # keep their dim names (Reshape to [batch, -1] has dim "batch").
        self.sym: str | None = None
        # An ONNX sequence (a list whose length is known only at runtime); dtype and shape then
        # describe its elements.
        self.sequence = False
        # An ONNX optional (a scripted ``Optional[Tensor]`` that is None on some paths); dtype and
        # shape then describe its element.
        self.optional = False
        # The TorchScript type of a list or tuple the captured graph built (prim::ListConstruct,
        # prim::TupleConstruct): what ``value.type()`` answers legacy symbolics, as legacy does.
        self.jit_type = None
        # A parameter or buffer of the model, or a value computed from one at export time.
        self.from_weight = False
        # Where the legacy exporter's constant folding computes this value: its place among the
        # values that pass creates (legacy_names.py), or None.
        self.legacy_fold: int | None = None

    @property
    def is_const(self) -> bool:
        return self.const is not UNKNOWN

    @property
    def is_none(self) -> bool:
        return self.const is None

    @property
    def rank(self) -> int | None:
        return None if self.shape is None else len(self.shape)

    @property
    def in_graph(self) -> bool:
        """True when the value is a graph input, an initializer or a node output."""
        return self.producer is not None or self.is_param or self._is_graph_input

    _is_graph_input = False

    def __repr__(self) -> str:
        const = "" if self.const is UNKNOWN else f" const={_short(self.const)}"
        return f"Value({self.name!r}, {self.dtype}, {self.shape}{const})"

    # The torch._C.Value surface used by legacy custom symbolics lives in compat.py and is
    # attached below, so this class stays about the graph.


def _short(obj) -> str:
    if isinstance(obj, torch.Tensor):
        return f"tensor{tuple(obj.shape)}" if obj.numel() > 8 else repr(obj.tolist())
    text = repr(obj)
    return text if len(text) < 60 else text[:57] + "..."


class GraphInput(Value):
    __slots__ = ()
    _is_graph_input = True


class Origin:
    """Where nodes come from: the TorchScript node they were converted from, as TorchScript
    recorded it. One object per converted JIT node, shared by every ONNX node its conversion
    emits; ``provenance.py`` turns it into the nodes' ``metadata_props`` when the model is written.

    ``kind``: the JIT node's kind (``aten::linear``); ``scope_name``: its raw scope name
    (``__main__.M::/torch.nn.modules.linear.Linear::lin``, traced) or ""; ``scope``: the module path
    the node names use (``/lin``); ``source_range``: its raw source range text (the tracer's stack,
    innermost frame first, or a scripted file and line).
    """

    __slots__ = ("kind", "scope_name", "scope", "source_range")

    def __init__(self, kind: str, scope_name: str, scope: str, source_range: str):
        self.kind = kind
        self.scope_name = scope_name
        self.scope = scope
        self.source_range = source_range

    def __repr__(self) -> str:
        return f"Origin({self.kind!r}, {self.scope!r})"


class Node:
    __slots__ = ("op_type", "domain", "inputs", "outputs", "attrs", "name", "scope", "source", "origin")

    def __init__(self, op_type: str, domain: str, inputs, attrs: dict, name: str, scope: str, source: str,
                 origin: Origin | None = None):
        self.op_type = op_type
        self.domain = domain
        self.inputs: list[Value | None] = list(inputs)
        self.outputs: list[Value] = []
        # name -> (attribute kind, value); kinds: i f s t is fs ss ts g
        self.attrs: dict[str, tuple[str, Any]] = attrs
        self.name = name
        self.scope = scope
        self.source = source
        self.origin = origin

    def attr(self, name: str, default=None):
        entry = self.attrs.get(name)
        return default if entry is None else entry[1]

    def __repr__(self) -> str:
        ins = ", ".join("" if v is None else v.name for v in self.inputs)
        outs = ", ".join(v.name for v in self.outputs)
        return f"{outs} = {self.op_type}({ins})"


class Namer:
    """Unique names: the first request gets the name itself, later ones a numeric suffix."""

    def __init__(self):
        self._used: set[str] = set()
        self._next: dict[str, int] = {}

    def fresh(self, base: str) -> str:
        if base not in self._used:
            self._used.add(base)
            return base
        k = self._next.get(base, 1)
        while f"{base}_{k}" in self._used:
            k += 1
        self._next[base] = k + 1
        name = f"{base}_{k}"
        self._used.add(name)
        return name

    def claim(self, name: str) -> bool:
        """Take ``name`` if free; return whether it was."""
        if name in self._used:
            return False
        self._used.add(name)
        return True

    def release(self, name: str) -> None:
        self._used.discard(name)


class Graph:
    """A graph or, with ``parent`` set, an If/Loop body that shares its names with the outer graph."""

    def __init__(self, parent: Graph | None = None):
        self.inputs: list[Value] = []
        self.outputs: list[Value] = []
        self.nodes: list[Node] = []
        # name -> tensor, in first-use order; written once, straight from the tensors. The optimizer
        # may put a lazy.LazyTensor here (folded weights), computed only while being written.
        # Bodies keep none: their large constants live in the outermost graph.
        self.initializers: dict[str, torch.Tensor] = {}
        self.parent = parent
        self.value_names = parent.value_names if parent is not None else Namer()
        self.node_names = parent.node_names if parent is not None else Namer()
        # (position in ``nodes``, node): nodes the builder evaluated at export time that read a
        # weight. They are in no graph; the legacy exporter's graph has them (legacy_names.py).
        self.folded: list[tuple[int, Node]] = []
        # (position in ``nodes``, values, folds): values the legacy exporter's conversion makes
        # there and ours does not (a node it keeps where ours returns the input), and how many of
        # them its constant folding computes, for its numbering (legacy_names.py).
        self.legacy_only: list[tuple[int, int, int]] = []
        # The first number the legacy exporter's own passes give a value they create (set by the
        # converter, advanced by conv + batch norm folding); None when not known.
        self.legacy_next_number: int | None = None
        # ids of the graph outputs named by their legacy number (``191``, ``onnx::Relu_9``)
        self.numbered_outputs: set[int] = set()

    def add_input(self, name: str, dtype, shape) -> Value:
        value = GraphInput(self.value_names.fresh(name), dtype, shape)
        self.inputs.append(value)
        return value

    def add_initializer(self, name: str, tensor: torch.Tensor, const=True) -> Value:
        value = Value(self.value_names.fresh(name), tensor.dtype, tuple(tensor.shape), tensor if const else UNKNOWN)
        value.is_param = True
        self.initializers[value.name] = tensor
        return value

    def add_node(self, op_type: str, domain: str, inputs: Iterable, attrs: dict, n_outputs: int,
                 scope: str = "", source: str = "", origin: Origin | None = None) -> Node:
        node = Node(op_type, domain, inputs, attrs, self.node_names.fresh(f"{scope}/{op_type}"), scope, source,
                    origin)
        for k in range(n_outputs):
            node.outputs.append(Value(self.value_names.fresh(f"{node.name}_output_{k}"), producer=node))
        self.nodes.append(node)
        return node

    def rename(self, value: Value, name: str) -> None:
        """Give ``value`` a user-chosen name; a different value holding it is renamed."""
        if value.name == name:
            return
        if not self.value_names.claim(name):
            holder = self._find(name)
            if holder is not None:
                fresh = self.value_names.fresh(name)
                if holder.is_param:
                    self.initializers[fresh] = self.initializers.pop(holder.name)
                holder.name = fresh
        self.value_names.release(value.name)
        if value.is_param:
            self.initializers[name] = self.initializers.pop(value.name)
        value.name = name
        self.value_names.claim(name)

    def _find(self, name: str) -> Value | None:
        for value in self.inputs:
            if value.name == name:
                return value
        for node in self.nodes:
            for value in node.outputs:
                if value.name == name:
                    return value
        if name in self.initializers:  # a weight: found where a node or the graph reads it
            for value in [v for node in self.nodes for v in node.inputs] + self.outputs:
                if value is not None and value.name == name and value.is_param:
                    return value
        return None

    def consumers(self) -> dict[int, list[Node]]:
        """id(value) -> nodes that read it, in graph order."""
        users: dict[int, list[Node]] = {}
        for node in self.nodes:
            for value in node.inputs:
                if value is not None:
                    users.setdefault(id(value), []).append(node)
        return users
