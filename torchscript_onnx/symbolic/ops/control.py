"""Control flow of scripted models: prim::If -> ONNX If, prim::Loop -> ONNX Loop.

A condition known at export time folds to the taken branch. Loop bodies get ONNX's
(iteration, condition, carried...) inputs; carried values keep their dtype and rank while their
dims are left open, since a body may change them from one iteration to the next."""

from __future__ import annotations

import torch

from torchscript_onnx.builder import onnx_ops
from torchscript_onnx.builder.ir import Value
from torchscript_onnx.builder.mutation import inside, mutated_outside

from .. import symbolic_helper as sh
from ..registry import declare_opset_requirements, symbolic


# When an op here needs a higher opset than it is registered at: the condition (the reason its
# conversion states with OPSET.require) -> the lowest opset that converts it (docs/supported_ops.md).
OPSET = declare_opset_requirements({
    ("prim::If", "prim::Loop"): {
        "a value that is None on some paths of a branch or loop (ONNX optionals)": 16,
        "a list of runtime length carried by a loop or branch (ONNX sequences)": 13},
    "prim::Loop": {"a list of tensors filled in a loop (ONNX sequences)": 11},
}, unlisted={"a list of runtime length (ONNX sequences)": 11})

INT64_MAX = onnx_ops.INT64_MAX


def _merged_shape(a, b):
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(x if x == y else None for x, y in zip(a, b))


def _as_bool(g, condition: Value) -> Value:
    return onnx_ops.cast(g, condition, torch.bool) if condition.dtype not in (None, torch.bool) else condition


# Python numbers at runtime are 0-d tensors: int -> int64, bool -> bool, float -> float64 (a
# TorchScript float is a double; aten::Float casts to float64 too).
_NUMBER_DTYPES = {torch._C.IntType: torch.int64, torch._C.FloatType: torch.float64, torch._C.BoolType: torch.bool}


def number_dtype(jit_type) -> torch.dtype | None:
    for kind, dtype in _NUMBER_DTYPES.items():
        if isinstance(jit_type, kind):
            return dtype
    if isinstance(jit_type, torch._C.TensorType) and jit_type.scalarType():
        from torchscript_onnx.builder.dtypes import SCALAR_NAME_TO_TORCH

        return SCALAR_NAME_TO_TORCH.get(jit_type.scalarType())
    return None


def to_sequence(g, value: Value, jit_type=None, carried: bool = False) -> Value:
    """A list as an ONNX sequence (its length may change at runtime, in a loop or a branch).
    Loop and If carry sequences (``carried``) from opset 13; sequence ops exist from 11."""
    if value.sequence:
        return value
    reason = "a list of runtime length carried by a loop or branch (ONNX sequences)" if carried \
        else "a list of runtime length (ONNX sequences)"
    opset = OPSET.opset(reason)
    hint = ("; below it a loop may only fill a list that is empty before it, appending once per "
            "iteration without reading it" if carried else "")
    OPSET.require(g, reason, value, f"{reason} needs opset {opset} or higher (pass opset_version={opset}){hint}")
    items = [sh._as_value(item) for item in sh.unpack_list(value)]
    elem_type = jit_type.getElementType() if isinstance(jit_type, torch._C.ListType) else None
    dtype = number_dtype(elem_type) if elem_type is not None else None
    if not items:
        from torchscript_onnx.builder import dtypes

        out = g.op("SequenceEmpty", dtype_i=dtypes.to_onnx(dtype or torch.float32))
        out.dtype, out.shape = dtype, None
    else:
        dtype = dtype or next((i.dtype for i in items if not i.is_const), None) or items[0].dtype
        tensors = [_typed_number(g, item, dtype) for item in items]
        out = g.op("SequenceConstruct", *tensors)
        out.dtype = dtype or tensors[0].dtype
        shapes = [t.shape for t in tensors]
        out.shape = shapes[0] if all(s == shapes[0] for s in shapes) else None
    out.sequence = True
    return out


def set_sequence_dtype(value: Value, dtype: torch.dtype | None) -> None:
    """Element dtypes of an empty list are known only once something is appended: patch them."""
    if dtype is None or value.dtype is not None:
        return
    value.dtype = dtype
    node = value.producer
    if node is not None and node.op_type == "SequenceEmpty":
        from torchscript_onnx.builder import dtypes

        node.attrs["dtype"] = ("i", dtypes.to_onnx(dtype))


def _typed_number(g, value: Value, dtype: torch.dtype | None) -> Value:
    """``value`` as a graph tensor of ``dtype`` (Python constants are made in it directly)."""
    if dtype is None:
        return g.materialize(value)
    if value.is_const and not isinstance(value.const, torch.Tensor):
        return g.materialize(g.constant(value.const, dtype))
    value = g.materialize(value)
    return onnx_ops.cast(g, value, dtype) if value.dtype not in (None, dtype) else value


def _finish(g, value: Value, jit_type) -> Value:
    """A block output as the ONNX body returns it: lists as sequences, numbers in their dtype."""
    if isinstance(jit_type, torch._C.ListType) or value.sequence:
        return to_sequence(g, value, jit_type, carried=True)
    dtype = number_dtype(jit_type)
    if dtype is not None and not isinstance(jit_type, torch._C.TensorType):
        return _typed_number(g, value, dtype)
    return value


def _placeholder(g, jit_type) -> Value:
    """A typed stand-in for an uninitialized branch output (its dtype and rank fixed up later)."""
    dtype = number_dtype(jit_type) or torch.float32
    node = g.graph.add_node("Constant", "", [], {"value": ("t", torch.zeros((), dtype=dtype))}, 1, g.scope, g.source)
    out = node.outputs[0]
    out.dtype, out.shape = dtype, ()
    return out


def _retype_placeholder(node, placeholder: Value, like: Value) -> None:
    """Give a placeholder the other branch's dtype and rank, so both branches type the If alike."""
    dtype = like.dtype or placeholder.dtype
    shape = (1,) * len(like.shape) if like.shape is not None else ()
    node.attrs["value"] = ("t", torch.zeros(shape, dtype=dtype))
    placeholder.dtype, placeholder.shape = dtype, shape


# -- Optional[T] values that are None on some paths: ONNX optionals (Optional op from 15; If and
# Loop carry them from 16) -------------------------------------------------------------------


def optional(graph, value: Value | None, scope: str = "", source: str = "") -> Value:
    """ONNX Optional in ``graph``: ``value`` wrapped, or an empty optional (a None) whose element
    type ``type_optionals`` fills in once the other path shows it."""
    node = graph.add_node("Optional", "", [] if value is None else [value], {}, 1, scope, source)
    out = node.outputs[0]
    out.optional = True
    if value is not None:
        out.dtype, out.shape = value.dtype, value.shape
        node.attrs["type"] = ("tp", (value.dtype or torch.float32, value.shape))
    return out


def type_optionals(values, dtype, shape) -> None:
    """Give optionals made by ``optional`` their element type (an empty one needs it)."""
    for value in values:
        value.dtype, value.shape = dtype, shape
        if value.producer is not None and value.producer.op_type == "Optional":
            value.producer.attrs["type"] = ("tp", (dtype or torch.float32, shape))


def _require_optionals(g) -> None:
    OPSET.require(g, "a value that is None on some paths of a branch or loop (ONNX optionals)")


def _as_optional(g, graphs_outputs: list, k: int) -> tuple:
    """Make output ``k`` of every (graph, outputs) pair an optional; return its element dtype and shape."""
    _require_optionals(g)
    values = [outputs[k] for _, outputs in graphs_outputs]
    typed = [v for v in values if v.dtype is not None]
    dtype = typed[0].dtype if typed else None
    shape = typed[0].shape if typed else None
    for v in typed[1:]:
        shape = _merged_shape(shape, v.shape)
    for graph, outputs in graphs_outputs:
        if not outputs[k].optional:
            outputs[k] = optional(graph, outputs[k], g.scope, g.source)
            graph.outputs[k] = outputs[k]
    type_optionals([outputs[k] for _, outputs in graphs_outputs], dtype, shape)
    return dtype, shape


def _results(g, outputs, mutated=(), updates=()):
    """Rebind the outer values the If/Loop mutates to ``updates`` and return its outputs as the
    converter binds them: the node's lone output alone, since a 1-tuple for an output of list type
    reads as its elements."""
    for jit_value, value in zip(mutated, updates, strict=True):
        g.rebind(jit_value, value)
    outputs = tuple(outputs)
    if len(outputs) == 1 and g.original_node.outputsSize() == 1:
        return outputs[0]
    return outputs or None


def _raises(block) -> bool:
    return any(n.kind() == "prim::RaiseException" for n in block.nodes())


@symbolic("prim::If")
def prim_if(g, condition):
    """prim::If(bool cond) -> (outputs of the taken block)"""
    node = g.original_node
    then_block, else_block = list(node.blocks())
    known = sh.const(condition)
    raises = (_raises(then_block), _raises(else_block))
    if known is sh.UNKNOWN and raises[0] != raises[1]:
        known = raises[1]  # ONNX cannot raise: the branch that raises is taken never to run
    if known is not sh.UNKNOWN:
        flag = bool(known.item() if isinstance(known, torch.Tensor) else known)
        return _results(g, g.inline_block(then_block if flag else else_block))
    mutated = mutated_outside(node)
    n_outputs = node.outputsSize() + len(mutated)
    if n_outputs == 0:
        return None  # both branches only have side effects (prints, warnings), which ONNX drops
    placeholders: dict[int, object] = {}

    def finish(g, value, jit_type):
        if value is UNINITIALIZED and isinstance(jit_type, torch._C.ListType):
            # a list beside a branch that raises: an empty sequence, typed from the other branch below
            return to_sequence(g, Value("", elements=[]), jit_type, carried=True)
        if value is UNINITIALIZED:
            placeholder = _placeholder(g, jit_type)
            placeholders[id(placeholder)] = placeholder.producer
            return placeholder
        if value.is_none:  # None on this path of an Optional: an empty ONNX optional
            return optional(g.graph, None, g.scope, g.source)
        return _finish(g, value, jit_type)

    then_graph, then_outputs = g.convert_block(then_block, [], mutated=mutated, finish=finish)
    else_graph, else_outputs = g.convert_block(else_block, [], mutated=mutated, finish=finish)
    for k, (a, b) in enumerate(zip(then_outputs, else_outputs)):
        if a.optional or b.optional:
            _as_optional(g, [(then_graph, then_outputs), (else_graph, else_outputs)], k)
            continue
        for mine, other in ((a, b), (b, a)):
            if id(mine) in placeholders and id(other) not in placeholders:
                _retype_placeholder(placeholders[id(mine)], mine, other)
    outputs = g.op("If", _as_bool(g, condition), then_branch_g=then_graph, else_branch_g=else_graph,
                   outputs=n_outputs)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    for out, a, b in zip(outputs, then_outputs, else_outputs):
        if a.dtype != b.dtype and a.dtype is not None and b.dtype is not None:
            sh.value_error(f"prim::If: the branches return different dtypes ({a.dtype} and {b.dtype})")
        out.dtype = a.dtype or b.dtype
        out.shape = _merged_shape(a.shape, b.shape)
        out.sequence, out.optional = a.sequence, a.optional
        if a.sequence:
            set_sequence_dtype(a, b.dtype)
            set_sequence_dtype(b, a.dtype)
    n_block = node.outputsSize()
    return _results(g, outputs[:n_block], mutated, outputs[n_block:])


def _open_dims(value: Value) -> tuple | None:
    return None if value.shape is None else (None,) * len(value.shape)


def _carry(g, value: Value, jit_type) -> Value:
    if isinstance(jit_type, torch._C.ListType) or value.sequence:
        return to_sequence(g, value, jit_type, carried=True)
    if not value.in_graph:
        dtype = number_dtype(jit_type)
        return _typed_number(g, value, dtype if not isinstance(jit_type, torch._C.TensorType) else None)
    return value


def _body_input(value: Value) -> Value:
    typed = Value("", value.dtype, _open_dims(value))
    typed.sequence, typed.optional = value.sequence, value.optional
    return typed


def _optional_carried(node, values: list) -> set[int]:
    """Which carried values are None on some path: an Optional that is None before the loop, or
    that the body sets to None (an ONNX optional each)."""
    body = next(iter(node.blocks()))
    returned = list(body.outputs())[1:]
    found = set()
    for k, (value, jit_out) in enumerate(zip(values, node.outputs())):
        if not isinstance(jit_out.type(), torch._C.OptionalType):
            continue
        if value.is_none or value.optional or isinstance(returned[k].type(), torch._C.NoneType):
            found.add(k)
    return found


def _finish_optional(g, value: Value, jit_type) -> Value:
    """``_finish``, with None (on this path of an Optional) as an empty ONNX optional."""
    if value.is_none and value is not UNINITIALIZED:
        return optional(g.graph, None, g.scope, g.source)
    return _finish(g, value, jit_type)


def _scanned_lists(g, body, mutated: list) -> list:
    """Lists the loop only fills: empty before it, appended to once per iteration at the top of the
    body and not read in it. Below opset 13 ONNX Loop cannot carry a sequence, but it can stack a
    value per iteration (a scan output), which is such a list; the legacy exporter does the same."""
    if OPSET.met(g, "a list of runtime length carried by a loop or branch (ONNX sequences)"):
        return []
    loop = g.original_node
    scanned = []
    for jit_value in mutated:
        if not isinstance(jit_value.type(), torch._C.ListType) or g.value_of(jit_value).sequence:
            continue
        if sh.unpack_list(g.value_of(jit_value)):
            continue
        users = [use.user for use in jit_value.uses() if inside(use.user, loop)]
        if len(users) == 1 and users[0].kind() == "aten::append" and users[0].owningBlock() == body:
            scanned.append(jit_value)
    return scanned


def _from_scan(g, stacked: Value, element: Value, jit_list) -> Value:
    """The list a scan output stands for: its slices along axis 0, as a sequence. Below opset 11
    (no sequences) a list of numbers is its 1-D tensor, which is how symbolics take int[]/float[]
    of runtime values."""
    stacked.dtype = element.dtype
    stacked.shape = None if element.shape is None else (None, *element.shape)
    if not onnx_ops.has_op(g, "SplitToSequence"):
        if isinstance(jit_list.type().getElementType(), torch._C.TensorType):
            OPSET.require(g, "a list of tensors filled in a loop (ONNX sequences)", stacked)
        return stacked
    out = g.op("SplitToSequence", stacked, axis_i=0, keepdims_i=0)
    out.dtype, out.shape, out.sequence = element.dtype, element.shape, True
    return out


@symbolic("prim::Loop")
def prim_loop(g, max_trip_count, condition, *carried):
    """prim::Loop(int max_trip_count, bool cond, *carried) -> (*carried)"""
    node = g.original_node
    body = next(iter(node.blocks()))
    mutated = mutated_outside(node)
    scanned = _scanned_lists(g, body, mutated)
    if scanned:
        scanned_ids = {m.unique() for m in scanned}
        every_mutated, mutated = mutated, [m for m in mutated if m.unique() not in scanned_ids]
    jit_values = list(node.inputs())[2:] + mutated
    values = list(carried) + [g.value_of(m) for m in mutated]
    if not values and not scanned:
        return None  # a loop that carries nothing only has side effects, which ONNX drops
    trips = sh.const(max_trip_count)
    if trips is not sh.UNKNOWN and int(trips) >= INT64_MAX:
        trip_input = None  # a while loop: only the condition stops it
    elif trips is not sh.UNKNOWN:
        trip_input = g.constant(int(trips), torch.int64)
    else:
        trip_input = onnx_ops.cast(g, max_trip_count, torch.int64)
    n_block = len(carried)
    optionals = _optional_carried(node, values[:n_block])
    if optionals:
        _require_optionals(g)
    values = [optional(g.graph, None if v.is_none else g.materialize(v), g.scope, g.source) if k in optionals
              else _carry(g, v, j.type()) for k, (v, j) in enumerate(zip(values, jit_values))]
    body_inputs = [Value("", torch.int64, ())] + [_body_input(v) for v in values[:n_block]]
    body_graph, body_outputs = g.convert_block(body, body_inputs, mutated=mutated, scanned=scanned,
                                               carried=[_body_input(v) for v in values[n_block:]],
                                               finish=_finish_optional)
    scan_elements = body_outputs[len(body_outputs) - len(scanned):]
    body_outputs = body_outputs[:len(body_outputs) - len(scanned)]
    # ONNX bodies take (iteration, condition, carried...); the JIT block has no condition input.
    body_graph.add_input(f"{g.scope}/cond", torch.bool, ())
    body_graph.inputs.insert(1, body_graph.inputs.pop())
    if body_outputs[0].dtype not in (None, torch.bool):
        sh.value_error("prim::Loop: the loop condition must be a bool", body_outputs[0])
    for k in optionals:
        if not body_outputs[k + 1].optional:
            body_outputs[k + 1] = body_graph.outputs[k + 1] = optional(body_graph, body_outputs[k + 1], g.scope,
                                                                       g.source)
        typed = [v for v in (values[k], body_outputs[k + 1]) if v.dtype is not None]
        dtype = typed[0].dtype if typed else None
        type_optionals([body_graph.inputs[k + 2]], dtype, _open_dims(typed[0]) if typed else None)
        # the value before the loop, then after each iteration: dims that agree are the loop's
        shape = _merged_shape(*(v.shape for v in typed)) if len(typed) == 2 else typed[0].shape if typed else None
        type_optionals([values[k], body_outputs[k + 1]], dtype, shape)
    for body_output, body_in, value in zip(body_outputs[1:], body_graph.inputs[2:], values):
        if value.sequence:
            set_sequence_dtype(value, body_output.dtype)
            set_sequence_dtype(body_in, value.dtype)
            set_sequence_dtype(body_output, value.dtype)
            continue
        if body_output.dtype != value.dtype and None not in (body_output.dtype, value.dtype):
            sh.value_error(f"prim::Loop: a carried value changes dtype ({value.dtype} -> {body_output.dtype})")
        body_output.shape = _open_dims(body_output) if body_output.shape is not None else None
    flag = []
    if not values:  # a loop that only scans: onnxruntime wants a carried value, so it carries a flag
        flag_in = body_graph.add_input(f"{g.scope}/unused", torch.bool, ())
        flag_out = body_graph.add_node("Identity", "", [flag_in], {}, 1, g.scope, g.source).outputs[0]
        flag_out.dtype, flag_out.shape = torch.bool, ()
        body_graph.outputs.insert(1, flag_out)
        flag = [g.materialize(g.constant(True, torch.bool))]
    outputs = g.op("Loop", trip_input, _as_bool(g, condition), *values, *flag, body_g=body_graph,
                   outputs=len(values) + len(flag) + len(scanned))
    outputs = (outputs if isinstance(outputs, tuple) else (outputs,))[len(flag):]
    for out, value, body_output in zip(outputs, values, body_outputs[1:]):
        out.dtype, out.shape, out.sequence, out.optional = value.dtype, _open_dims(value), value.sequence, \
            value.optional
        if value.optional:
            out.shape = value.shape
        if value.sequence:
            out.shape = body_output.shape if value.shape is None else _merged_shape(value.shape, body_output.shape)
    if not scanned:
        return _results(g, outputs[:n_block], mutated, outputs[n_block:])
    new = {m.unique(): _from_scan(g, out, e, m) for m, out, e in zip(scanned, outputs[len(values):], scan_elements)}
    new.update((m.unique(), out) for m, out in zip(mutated, outputs[n_block:len(values)]))
    return _results(g, outputs[:n_block], every_mutated, [new[m.unique()] for m in every_mutated])


@symbolic("aten::Bool")
def aten_bool(g, value):
    """aten::Bool.Tensor(Tensor a) -> bool"""
    known = sh.const(value)
    if known is not sh.UNKNOWN:
        return Value("", const=bool(known.item() if isinstance(known, torch.Tensor) else known))
    return onnx_ops.cast(g, value, torch.bool)


@symbolic("aten::__not__")
def not_(g, value):
    """aten::__not__(bool self) -> bool"""
    known = sh.const(value)
    if known is not sh.UNKNOWN:
        return Value("", const=not known)
    return g.op("Not", _as_bool(g, value))


@symbolic("prim::RaiseException")
def prim_raise_exception(g, *args, **kwargs):
    """prim::RaiseException(str msg, str? cls=None) -> (): ONNX has no exceptions; dropped."""
    return None


@symbolic("aten::warn")
def warn(g, *args, **kwargs):
    """aten::warn(str message, int stacklevel=2) -> (): side effect only; dropped."""
    return None


@symbolic("prim::Print")
def prim_print(g, *args, **kwargs):
    """prim::Print(...) -> (): side effect only; dropped."""
    return None


# -- lists of known length: kept element-wise (sequences at opset 11 take the runtime ones) -----


def _items(values) -> list[Value]:
    return [sh._as_value(item) for item in sh.unpack_list(values)]


def _index(g, index: Value, n: int, what: str) -> int:
    position = sh.const(index)
    if position is sh.UNKNOWN:
        sh.value_error(f"{what} with an index known only at runtime needs ONNX sequences: opset 11 or later",
                       index)
    position = int(position)
    if not -n <= position < n:
        sh.value_error(f"{what}: index {position} out of range for a list of {n}", index)
    return position % n if n else 0


def _new_list(items: list[Value]) -> Value:
    return Value("", elements=items)


@symbolic("aten::append")
def append(g, values, element):
    """append.t(t[](a!) self, t(c -> *) el) -> t[](a!)"""
    new = _new_list(_items(values) + [element])
    return new, new


@symbolic("aten::insert")
def insert(g, values, index, element):
    """insert.t(t[](a!) self, int idx, t(b -> *) el) -> ()"""
    items = _items(values)
    position = sh.const(index)
    if position is sh.UNKNOWN:
        sh.value_error("list.insert at an index known only at runtime needs ONNX sequences: opset 11 or later")
    items.insert(int(position), element)
    return (_new_list(items),)


@symbolic("aten::pop")
def pop(g, values, index=None):
    """pop.t(t[](a!) self, int idx=-1) -> t(*)"""
    items = _items(values)
    position = _index(g, index if index is not None else Value("", const=-1), len(items), "list.pop")
    element = items.pop(position)
    return _new_list(items), element


@symbolic("aten::_set_item")
def set_item(g, values, index, element):
    """_set_item.t(t[](a!) l, int idx, t(b -> *) el) -> t[](a!)"""
    items = _items(values)
    items[_index(g, index, len(items), "list[i] = v")] = element
    new = _new_list(items)
    return new, new


@symbolic("aten::Delete")
def delete(g, values, index):
    """Delete.t(t[](a!) self, int idx) -> (): ``del l[i]``"""
    items = _items(values)
    del items[_index(g, index, len(items), "del list[i]")]
    return (_new_list(items),)


@symbolic("aten::clear")
def clear(g, values):
    """clear.t(t[](a!) self) -> ()"""
    return (_new_list([]),)


@symbolic("aten::extend")
def extend(g, values, other):
    """extend.t(t[](a!) self, t[] other) -> ()"""
    return (_new_list(_items(values) + _items(other)),)


@symbolic("aten::reverse")
def reverse(g, values):
    """reverse.t(t[](a!) self) -> ()"""
    return (_new_list(_items(values)[::-1]),)


@symbolic("aten::list")
def list_(g, values):
    """list.t(t[] l) -> t[]: a copy"""
    return _new_list(_items(values))


@symbolic("aten::len")
def len_(g, values):
    """len.t(t[] a) -> int; len.Tensor(Tensor t) -> int"""
    if values.elements is not None or (values.is_const and isinstance(values.const, (list, tuple))):
        return Value("", const=len(sh.unpack_list(values)))
    dims = sh.sizes(values)
    if dims is not None and dims and isinstance(dims[0], int):
        return Value("", const=dims[0])
    return onnx_ops.size(g, values, 0)


@symbolic("aten::__getitem__")
def getitem(g, values, index):
    """__getitem__.t(t[](a) list, int idx) -> t(*)"""
    if number_vector(values):  # a number list that is a 1-D tensor (sliced or filled at runtime)
        position = _typed_number(g, index, torch.int64)
        below = onnx_ops.cast(g, g.op("Less", position, g.constant(0, torch.int64)), torch.int64)
        position = g.op("Add", position, g.op("Mul", below, onnx_ops.size(g, values, 0)))
        return g.op("Gather", values, position, axis_i=0)
    items = _items(values)
    if sh.const(index) is sh.UNKNOWN and items:
        return _gather_item(g, items, index)
    return items[_index(g, index, len(items), "list[i]")]


def number_vector(values: Value) -> bool:
    """Whether a list value is a 1-D tensor of its numbers (not items, a constant or a sequence)."""
    return values.elements is None and not values.is_const and not values.sequence and values.rank == 1


def _gather_item(g, items: list[Value], index: Value) -> Value:
    """``list[i]`` of a list of known length at a runtime index, without sequences (opset < 11):
    the items stacked into one tensor, then gathered (numbers, or tensors of one static shape)."""
    jit_type = g.original_node.inputsAt(0).type()
    dtype = number_dtype(jit_type.getElementType()) if isinstance(jit_type, torch._C.ListType) else None
    tensors = [_typed_number(g, item, dtype) for item in items]
    shapes = {t.shape for t in tensors}
    if len(shapes) != 1 or None in shapes or any(not isinstance(d, int) for d in next(iter(shapes))) \
            or len({t.dtype for t in tensors}) != 1:
        sh.value_error("list[i] with an index known only at runtime needs ONNX sequences: opset 11 or later "
                       "(below it, only lists of numbers or of tensors of one static shape)", index)
    stacked = g.op("Concat", *[onnx_ops.unsqueeze(g, t, [0]) for t in tensors], axis_i=0)
    n = len(tensors)
    position = _typed_number(g, index, torch.int64)
    # negative positions count from the back (Gather takes them only from opset 11)
    below = onnx_ops.cast(g, g.op("Less", position, g.constant(0, torch.int64)), torch.int64)
    position = g.op("Add", position, g.op("Mul", below, g.constant(n, torch.int64)))
    return g.op("Gather", stacked, position, axis_i=0)


@symbolic("aten::__is__")
def is_(g, a, b):
    """__is__(t1 self, t2 obj) -> bool: decided at export time (None checks on Optionals), or at
    runtime for an ONNX optional"""
    for value, other in ((a, b), (b, a)):
        if value.optional and other.is_none:
            out = g.op("Not", g.op("OptionalHasElement", value))
            out.dtype, out.shape = torch.bool, ()
            return out
    if a.is_none or b.is_none:
        return Value("", const=a.is_none and b.is_none)
    if a.is_const and b.is_const:
        return Value("", const=a.const is b.const)
    return Value("", const=a is b)


@symbolic("aten::__isnot__")
def isnot(g, a, b):
    """__isnot__(t1 self, t2 obj) -> bool"""
    for value, other in ((a, b), (b, a)):
        if value.optional and other.is_none:
            out = g.op("OptionalHasElement", value)
            out.dtype, out.shape = torch.bool, ()
            return out
    return Value("", const=not is_(g, a, b).const)


@symbolic("prim::unchecked_cast")
def prim_unchecked_cast(g, value):
    """prim::unchecked_cast(t x) -> t: refines an Optional (an ONNX optional: its element)."""
    if not value.optional:
        return value
    out = g.op("OptionalGetElement", value)
    out.dtype, out.shape = value.dtype, value.shape
    return out


# The value of a variable on a path that never reads it (a branch that raises, the flags of a
# loop's break/continue): a branch returning it returns a typed placeholder instead.
UNINITIALIZED = Value("", const=None)


@symbolic("prim::Uninitialized")
def prim_uninitialized(g):
    """prim::Uninitialized() -> Any: a value that is never read (a tuple of them, once tuples are
    lowered, has one output per item)."""
    n = g.original_node.outputsSize()
    return UNINITIALIZED if n == 1 else (UNINITIALIZED,) * n


@symbolic("aten::__contains__")
def contains(g, container, key):
    """__contains__.int_list(int[] l, int item) -> bool (and the str/dict overloads): export-time only"""
    items, wanted = sh.const(container), sh.const(key)
    if items is sh.UNKNOWN or wanted is sh.UNKNOWN:
        sh.value_error("`in` needs a container and an item known at export time", container)
    return Value("", const=wanted in items)


@symbolic("aten::format")
def format_(g, fmt, *args):
    """format(str self, ...) -> str: messages for exceptions and warnings, which ONNX drops"""
    values = [sh.const(a) for a in args]
    text = sh.const(fmt)
    if sh.UNKNOWN in values:
        return Value("", const=text)
    try:
        return Value("", const=text.format(*values))
    except (IndexError, KeyError, ValueError):
        return Value("", const=text)
