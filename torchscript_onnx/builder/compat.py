"""The torch._C.Value / Node / Type surface that legacy custom symbolics call.

``ir.Value`` inherits it (``LegacyValueSurface``), so a symbolic written for the legacy exporter can
ask ``x.type().isSubtypeOf(torch._C.TensorType.get())``, ``x.type().varyingSizes()``,
``x.node().kind()``, ``x.node()["value"]`` or call ``y.setType(...)``, and torch's own legacy
symbolic functions (opset 9's ``softmax``, ``masked_fill``, ...), which such symbolics call, run on
our values.

``value.type()`` is a real TorchScript type (``torch._C.TensorType``, ``ListType``, ``OptionalType``,
``NoneType``, ...), built from what the builder knows, and it is the type the legacy exporter gives
the same value: a tensor's dtype and sizes (a dynamic dim unknown), a constant number as a 0-d tensor
(legacy turns it into an ``onnx::Constant``), a list built by ``prim::ListConstruct`` with the list
type the captured graph gave it. Every method and ``isinstance`` check of torch's type API then
answers as torch answers it. Only the device is not known here (``device()`` is None).

This module imports nothing of the builder: the builder imports it.
"""

from __future__ import annotations

import torch


_C = torch._C


def tensor_type(dtype: torch.dtype | None, shape) -> _C.TensorType:
    """The TensorType of a tensor of ``dtype`` and ``shape`` (None: unknown; a str or None dim: dynamic)."""
    jit_type = _C.TensorType.get()
    if dtype is not None:
        jit_type = jit_type.with_dtype(dtype)
    if shape is not None:
        jit_type = jit_type.with_sizes([d if isinstance(d, int) else None for d in shape])
    return jit_type


def _number_dtype(number) -> torch.dtype | None:
    # The dtypes of the legacy exporter's onnx::Constant for a Python number (float is Double).
    if isinstance(number, bool):
        return torch.bool
    if isinstance(number, int):
        return torch.int64
    if isinstance(number, float):
        return torch.float64
    return None


def _constant_type(const) -> _C.JitType:
    if isinstance(const, torch.Tensor):
        return tensor_type(const.dtype, const.shape)
    if isinstance(const, torch.device):
        return _C.DeviceObjType.get()
    if isinstance(const, str):  # legacy's string onnx::Constant: a 0-d tensor of no known dtype
        return tensor_type(None, ())
    if isinstance(const, (list, tuple)):  # a constant list is a 1-d onnx::Constant in legacy
        kinds = {_number_dtype(e) for e in const}
        if len(kinds) == 1 and None not in kinds:
            return tensor_type(kinds.pop(), (len(const),))
        return _C.AnyType.get()
    dtype = _number_dtype(const)
    return tensor_type(dtype, ()) if dtype is not None else _C.AnyType.get()


def _element_type(element) -> _C.JitType:
    """The element type of a list built by a conversion (lists from the captured graph keep the
    type it gave them)."""
    if element.is_none:
        return _C.OptionalType.ofTensor()
    if element.is_const and not isinstance(element.const, torch.Tensor):
        dtype = _number_dtype(element.const)
        return {torch.int64: _C.IntType.get(), torch.float64: _C.FloatType.get(),
                torch.bool: _C.BoolType.get()}.get(dtype, _C.AnyType.get())
    return _C.TensorType.get()


def _list_type(elements) -> _C.ListType:
    kinds = {str(t): t for t in (_element_type(e) for e in elements)}
    if "Optional[Tensor]" in kinds:
        return _C.ListType(_C.OptionalType.ofTensor())
    if len(kinds) == 1:
        return _C.ListType(kinds.popitem()[1])
    if set(kinds) <= {"int", "Tensor"}:  # sizes: runtime sizes next to constant ones
        return _C.ListType.ofInts()
    return _C.ListType.ofTensors()


def jit_type(value) -> _C.JitType:
    """The TorchScript type legacy gives ``value`` (an ir.Value): what ``value.type()`` returns."""
    if value.jit_type is not None:
        return value.jit_type
    if value.is_none:
        return _C.NoneType.get()
    if value.elements is not None:
        return _list_type(value.elements)
    element = tensor_type(value.dtype, value.shape)
    if value.sequence:
        return _C.ListType(element)
    if value.optional:
        return _C.OptionalType(element)
    if value.is_const and not value.is_param:
        return _constant_type(value.const)
    return element


def _merged_shape(old, new):
    """``new`` sizes (None where unknown) over ``old``: a dynamic dim the builder named ("batch")
    stays named where the new type leaves it open."""
    if old is None or len(old) != len(new):
        return tuple(new)
    return tuple(o if n is None and isinstance(o, str) else n for o, n in zip(old, new))


def _constant_tensor(const) -> torch.Tensor:
    if isinstance(const, torch.Tensor):
        return const
    if isinstance(const, (list, tuple)):
        kinds = {_number_dtype(e) for e in const}
        return torch.tensor(const, dtype=kinds.pop() if len(kinds) == 1 else None)
    return torch.tensor(const, dtype=_number_dtype(const))


class NodeView:
    """What ``value.node()`` returns: the kind, inputs and attributes of the value's producer, as the
    legacy exporter shows them (``onnx::Add``, ``onnx::Constant``, ``prim::ListConstruct``, ...)."""

    __class__ = _C.Node  # isinstance(node, torch._C.Node), as legacy's helpers check (see LegacyValueSurface)

    def __init__(self, value):  # an ir.Value
        self._value = value

    def kind(self) -> str:
        v = self._value
        if v.producer is not None:
            op = v.producer
            return f"{op.domain or 'onnx'}::{op.op_type}"
        if isinstance(v.jit_type, _C.TupleType):
            return "prim::TupleConstruct"
        if v.elements is not None or v.jit_type is not None:
            return "prim::ListConstruct"
        if v.is_none:
            return "prim::Constant"
        if v.is_const and not v.is_param:
            return "onnx::Constant"
        return "prim::Param"

    def mustBeNone(self) -> bool:  # noqa: N802
        return self._value.is_none

    def __getitem__(self, name: str):
        v = self._value
        if name == "value" and v.is_const and not v.is_none:
            return v.const if isinstance(v.const, str) else _constant_tensor(v.const)
        if v.producer is not None and name in v.producer.attrs:
            return v.producer.attrs[name][1]
        raise RuntimeError(f"the value's node ({self.kind()}) has no attribute {name!r}")

    # The typed attribute readers (legacy reads ``node.kindOf(name)`` then calls the reader it names;
    # ``is``, a keyword, is set below the class).
    t = i = f = s = ival = ts = fs = ss = __getitem__

    def kindOf(self, name: str) -> str:  # noqa: N802
        v = self._value
        if name == "value" and v.is_const and not v.is_none:
            return "s" if isinstance(v.const, str) else "t"
        if v.producer is not None and name in v.producer.attrs:
            return v.producer.attrs[name][0]
        raise RuntimeError(f"the value's node ({self.kind()}) has no attribute {name!r}")

    def sourceRange(self) -> str:  # noqa: N802
        producer = self._value.producer
        return producer.source if producer is not None and producer.source else ""

    def hasAttribute(self, name: str) -> bool:  # noqa: N802
        v = self._value
        return (name == "value" and v.is_const and not v.is_none) or (
            v.producer is not None and name in v.producer.attrs)

    def attributeNames(self):  # noqa: N802
        v = self._value
        if v.producer is not None:
            return list(v.producer.attrs)
        return ["value"] if v.is_const and not v.is_none else []

    def inputs(self):
        v = self._value
        if v.elements is not None:
            return list(v.elements)
        if v.jit_type is not None and isinstance(v.const, (list, tuple)):  # a list of constants
            return [type(v)("", const=e) for e in v.const]
        return [] if v.producer is None else [x for x in v.producer.inputs if x is not None]

    def input(self):
        inputs = self.inputs()
        if len(inputs) != 1:
            raise RuntimeError(f"node.input(): {self.kind()} has {len(inputs)} inputs, not one")
        return inputs[0]

    def outputs(self):
        return [self._value] if self._value.producer is None else list(self._value.producer.outputs)

    def output(self):
        outputs = self.outputs()
        if len(outputs) != 1:
            raise RuntimeError(f"node.output(): {self.kind()} has {len(outputs)} outputs, not one")
        return outputs[0]

    def removeAllInputs(self) -> None:  # noqa: N802
        """As on a JIT node: a list (``prim::ListConstruct``) or an ONNX node loses its inputs."""
        v = self._value
        if v.producer is not None:
            v.producer.inputs = []
        elif v.elements is not None or v.jit_type is not None:
            _make_runtime_list(v, [])
        else:
            raise RuntimeError(f"node.removeAllInputs(): {self.kind()} has no inputs to remove")

    def addInput(self, value) -> None:  # noqa: N802
        v = self._value
        if v.producer is not None:
            v.producer.inputs.append(value)
        elif v.elements is not None:
            v.elements.append(value)
        elif v.jit_type is not None:  # a list of constants gets a runtime element
            _make_runtime_list(v, self.inputs() + [value])
        else:
            raise RuntimeError(f"node.addInput(): {self.kind()} takes no inputs")


    def addBlock(self) -> LegacyBlock:  # noqa: N802
        """A new body of this If or Loop, as legacy's ``jit_utils.add_op_with_blocks`` opens one:
        ``dataclasses.replace(g, block=...)`` then gives the context that emits into it."""
        node = self._value.producer
        if node is None or node.op_type not in BODY_ATTRIBUTES:
            raise RuntimeError(f"node.addBlock(): {self.kind()} takes no blocks (If and Loop do)")
        return LegacyBlock(node)


setattr(NodeView, "is", NodeView.__getitem__)

# The graph attributes an ONNX node's blocks become, in the order legacy adds them.
BODY_ATTRIBUTES = {"If": ("then_branch", "else_branch"), "Loop": ("body",), "Scan": ("body",)}


class LegacyBlock:
    """What ``node.addBlock()`` returns: a body of an If or a Loop that a legacy symbolic fills.

    ``GraphContext`` opens it when ``dataclasses.replace(g, block=block)`` makes a context for it
    (``open``); the symbolic then emits into that context, adds a Loop body's inputs with
    ``addInputToBlock()`` (legacy's ``utils._add_input_to_block``) and its outputs with
    ``registerOutput(value)``. The node's outputs take their types from the body's outputs."""

    def __init__(self, node):  # an ir.Node: the If or Loop
        self.node = node
        self.context = None  # the GraphContext emitting into the body, once opened
        self.index = 0  # which of the node's blocks it is

    @property
    def graph(self):
        return self.context.graph

    def open(self, context, graph) -> None:
        names = BODY_ATTRIBUTES[self.node.op_type]
        taken = sum(name in self.node.attrs for name in names)
        if taken == len(names):
            raise RuntimeError(f"{self.node.op_type} has all its blocks already ({', '.join(names)})")
        self.context, self.index = context, taken
        self.node.attrs[names[taken]] = ("g", graph)

    def addInputToBlock(self):  # noqa: N802
        """A Loop body's next input: the iteration number, the condition, then each carried value
        typed like the Loop's input it starts from."""
        k = len(self.graph.inputs)
        if k < 2:
            dtype, shape = (torch.int64, ()) if k == 0 else (torch.bool, ())
        else:
            start = self.node.inputs[k] if k < len(self.node.inputs) else None
            dtype, shape = (start.dtype, start.shape) if start is not None else (None, None)
        value = self.graph.add_input(f"{self.node.name}/block_input_{k}", dtype, shape)
        if k >= 2 and start is not None:
            value.sequence, value.optional = start.sequence, start.optional
        return value

    def registerOutput(self, value) -> int:  # noqa: N802
        graph = self.graph
        value = self.context.materialize(value)
        if value.producer is None or value.producer not in graph.nodes:
            if value not in graph.inputs:  # a body output is produced in the body, as ONNX wants
                identity = graph.add_node("Identity", "", [value], {}, 1, self.context.scope, self.context.source)
                out = identity.outputs[0]
                out.dtype, out.shape, out.sequence, out.optional = value.dtype, value.shape, value.sequence, \
                    value.optional
                value = out
        graph.outputs.append(value)
        self._type_node_output(len(graph.outputs) - 1, value)
        return len(graph.outputs) - 1

    def _type_node_output(self, k: int, body_output) -> None:
        """The node output body output ``k`` gives: an If's k-th; a Loop's carried and scanned
        values follow its condition (body output 0)."""
        loop = self.node.op_type != "If"
        index = k - 1 if loop else k
        if index < 0 or index >= len(self.node.outputs):
            return
        out = self.node.outputs[index]
        if out.dtype is None:
            out.dtype, out.sequence, out.optional = body_output.dtype, body_output.sequence, body_output.optional
        shape = body_output.shape
        if loop and shape is not None and index >= len(self.node.inputs) - 2:  # a scan output stacks
            shape = (None, *shape)
        if not loop and self.index == 1:  # the else branch: what both branches agree on
            then_shape = out.shape
            shape = None if then_shape is None or shape is None or len(then_shape) != len(shape) else \
                tuple(a if a == b else None for a, b in zip(then_shape, shape))
        elif out.shape is not None:
            return
        out.shape = shape


def _make_runtime_list(value, elements) -> None:
    from .ir import UNKNOWN  # noqa: PLC0415 - ir imports this module at its top

    value.elements, value.const = elements, UNKNOWN


class LegacyValueSurface:
    """The methods of ``torch._C.Value`` that legacy custom symbolics call on their arguments."""

    __slots__ = ("_debug_name",)

    # ``isinstance(value, torch._C.Value)`` holds, as ``unittest.mock`` does for a spec: torch's legacy
    # helpers (``_is_value``, ``_maybe_get_const``, ``JitScalarType.from_value``) take their value
    # paths only for such values, and read a constant argument as a number instead of passing the
    # value through. ``type(value)`` is still ``ir.Value``.
    __class__ = _C.Value

    def type(self) -> _C.JitType:
        return jit_type(self)

    def setType(self, new_type):  # noqa: N802 - legacy name
        """Take dtype and sizes from a TensorType (or an Optional / List of one, making the value an
        optional or a sequence). Other types (numbers, None) leave the value as it is: the builder
        keeps numbers as 0-d tensors, as the legacy exporter does."""
        if isinstance(new_type, (_C.OptionalType, _C.ListType)) and isinstance(
                new_type.getElementType(), _C.TensorType):
            self.optional = isinstance(new_type, _C.OptionalType)
            self.sequence = not self.optional
            new_type = new_type.getElementType()
        if isinstance(new_type, _C.TensorType):
            if new_type.dtype() is not None:
                self.dtype = new_type.dtype()
            sizes = new_type.varyingSizes()
            if sizes is not None:
                self.shape = _merged_shape(self.shape, sizes)
        return self

    def node(self) -> NodeView:
        return NodeView(self)

    def debugName(self) -> str:  # noqa: N802
        return getattr(self, "_debug_name", None) or self.name

    def setDebugName(self, name: str):  # noqa: N802
        """Rename the value for what symbolics read back; the file's names stay as legacy writes them
        (legacy names every value after conversion, whatever a symbolic called it)."""
        self._debug_name = name
        return self

    def replaceAllUsesWith(self, value):  # noqa: N802
        raise NotImplementedError(
            "value.replaceAllUsesWith() is not supported by torchscript_onnx: its values do not record "
            "their uses. Return the replacement value from the symbolic function instead.")

    def unique(self) -> int:
        return id(self)

    def isCompleteTensor(self) -> bool:  # noqa: N802
        """A tensor whose dtype and every dim are known (legacy also asks for strides and a device,
        which a trace always records and the builder does not keep)."""
        return self.dtype is not None and self.shape is not None and not self.is_none \
            and all(isinstance(d, int) for d in self.shape) and not (self.sequence or self.optional)
