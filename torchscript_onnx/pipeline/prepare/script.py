"""A scripted forward made one flat graph of what this export runs: submodule methods and
functions inlined (each inlined node's module scope recorded), plain attribute reads folded into
constants, and the graph specialised to the example inputs' dtypes and ranks."""

from __future__ import annotations

import torch

from ...builder import jit_walk
from ...builder.mutation import LIST_MUTATORS, iter_nodes, mutated_input
from ..scopes import scope_atom


# Attribute values read as constants of the graph, as freezing the module makes them.
_FOLDED_SCALARS = (bool, int, float, str)


def fold_attribute_reads(graph: torch._C.Graph, module, written=()) -> int:
    """Each read of a plain module attribute (a bool, int, float, str, None, or a list of such
    scalars) that the forward never writes becomes a constant of its value now, in the mode export
    set (``self.training`` included), as legacy's freezing of the module makes it. Constant
    propagation then drops the branches those values decide (``F.interpolate`` with
    ``mode=self.mode``: the antialias and lanczos paths). Tensors, parameters and buffers keep
    their reads (and so their initializer names); a list that the graph may change or let escape
    stays a read. Returns how many reads were folded."""
    self_value = next(graph.inputs())
    reads: dict[tuple, list] = {}
    for node in iter_nodes(graph):
        if node.kind() == "prim::GetAttr":
            key = _attribute_key(node.outputsAt(0), self_value)
            if key is not None and key not in written:
                reads.setdefault(key, []).append(node)
    folded = 0
    for key, nodes in reads.items():
        value = module
        for name in key:
            value = getattr(value, name)
        if not _plain_value(value) or isinstance(value, list) and not all(_list_read_only(n) for n in nodes):
            continue
        for node in nodes:
            read = node.outputsAt(0)
            with graph.insert_point_guard(node):
                constant = graph.insertConstant(value)
            if value is None:
                constant.setType(read.type())
            elif not constant.type().isSubtypeOf(read.type()):  # a list of another element type
                constant.node().destroy()
                continue
            if not read.debugName().isdigit():  # self.mode, as freezing names it
                constant.setDebugName(read.debugName())
            read.replaceAllUsesWith(constant)
            node.destroy()
            folded += 1
    return folded


def _attribute_key(value, self_value) -> tuple | None:
    """The attribute names from ``self`` to ``value`` (("inner", "mode")), or None."""
    names = []
    while value != self_value:
        if value.node().kind() != "prim::GetAttr":
            return None
        names.append(value.node().s("name"))
        value = value.node().inputsAt(0)
    return tuple(reversed(names))


def _plain_value(value) -> bool:
    if value is None or isinstance(value, _FOLDED_SCALARS):
        return True
    return isinstance(value, list) and bool(value) and all(type(v) is type(value[0]) for v in value) \
        and isinstance(value[0], _FOLDED_SCALARS)


def _list_read_only(read: torch._C.Node) -> bool:
    """Whether every use of a list attribute's read only reads it: no mutator (``append``,
    ``l[0] = ...``) and nothing it could escape into and be changed through."""
    escapes = {"prim::ListConstruct", "prim::TupleConstruct", "prim::DictConstruct", "prim::SetAttr"}
    value = read.outputsAt(0)
    for use in value.uses():
        user = use.user
        if user.kind() in escapes or mutated_input(user) == value or user.kind() in LIST_MUTATORS:
            return False
    return True


def inline_methods(graph: torch._C.Graph, module) -> dict:
    """Inline the submodule method calls of a scripted forward, returning each inlined node's module
    scope (``/b/lin``, as traced): torch's inliner keeps no scope, and node names and local functions need one."""
    scopes: dict[torch._C.Node, str] = {}
    self_value = next(graph.inputs())

    def submodule_path(value) -> list[str] | None:
        """The attribute names from ``self`` to the module ``value`` holds, or None."""
        names = []
        while value is not self_value:
            if value.node().kind() != "prim::GetAttr":
                return None
            names.append(value.node().s("name"))
            value = value.node().inputsAt(0)
        return names[::-1]

    pending = [n for n in iter_nodes(graph) if n.kind() == "prim::CallMethod"]
    while pending:  # calls inside a method appear once it is inlined: they join the worklist
        call = pending.pop()
        path = submodule_path(call.inputsAt(0))
        if path is None:
            continue
        target = module
        for name in path:
            target = getattr(target, name)
        anchor = call.prev()
        with graph.insert_point_guard(call):
            outputs = graph.insertGraph(target._c._get_method(call.s("name")).graph, list(call.inputs()))
        node, scope = call.prev(), "".join("/" + scope_atom(".".join(path[:k + 1])) for k in range(len(path)))
        inserted = _inserted(node, anchor)
        made = set(inserted)
        for old, new in zip(call.outputs(), outputs):
            old.replaceAllUsesWith(new)
            # The caller's name for the result (z = self.linear(x)) names it, as torch's inliner
            # does: the legacy exporter names graph outputs by it.
            if not old.debugName().isdigit() and new.node() in made:
                new.setDebugName(old.debugName())
        # atoms as traced scopes spell them (/layer1/layer1.0/conv1); self.helper() calls: ""
        call.destroy()
        for inner in inserted:
            scopes[inner] = scope
            if inner.kind() == "prim::CallMethod":
                pending.append(inner)
    return scopes


def _inserted(last: torch._C.Node, stop: torch._C.Node) -> list:
    """The nodes from ``last`` back to (not including) ``stop``, with the nodes nested in them:
    what an inliner put between ``stop`` and the node after ``last``."""
    found = []
    while last != stop:
        found.append(last)
        found += [n for block in jit_walk.blocks(last) for n in iter_nodes(block)]
        last = last.prev()
    return found


def inline_functions(graph: torch._C.Graph, scopes: dict) -> None:
    """torch's inliner for the scripted function calls left (``F.relu`` in ``nn.ReLU.forward``),
    each call's scope passed on to what it inlines: markers around each call find those nodes."""
    marked = []
    for call in [n for n in iter_nodes(graph) if n.kind() == "prim::CallFunction" and scopes.get(n)]:
        begin, end = graph.create("prim::Constant"), graph.create("prim::Constant")
        begin.insertBefore(call)
        end.insertAfter(call)
        marked.append((begin, end, scopes[call]))
    torch._C._jit_pass_inline(graph)
    for begin, end, scope in marked:
        for inner in _inserted(end.prev(), begin):
            scopes[inner] = scopes.get(inner) or scope
        begin.destroy()
        end.destroy()


def specialize(graph: torch._C.Graph, inputs: list, examples: list) -> None:
    """Stamp each tensor input's dtype and rank (not its sizes, which may be dynamic) from the
    example args, then fold what that decides: ``x.dim() == 3`` checks, ``is None`` on values that
    are not Optional, ``isinstance`` tests the static types answer, and the branches they guard
    (nn.LSTM's argument checks and tuple branches, pack_padded_sequence's lengths)."""
    for value, example in zip(inputs, examples):
        if isinstance(example, torch.Tensor) and isinstance(value.type(), torch._C.TensorType):
            typed = torch._C.TensorType.create_from_tensor(example)
            value.setType(typed.with_sizes([None] * example.dim()))
    fold_isinstance(graph)
    torch._C._jit_pass_peephole(graph, True)
    torch._C._jit_pass_constant_propagation(graph)
    torch._C._jit_pass_dce(graph)


# Static types that say nothing about which of several types a value holds at runtime.
_OPEN_TYPES = ("OptionalType", "UnionType", "AnyType", "InterfaceType", "AnyClassType", "AnyListType",
               "AnyTupleType", "AnyEnumType")


def fold_isinstance(graph: torch._C.Graph) -> int:
    """Each ``isinstance(x, T)`` whose answer the static type of ``x`` decides becomes a constant.

    An inlined function with a Union parameter keeps its test after the call site fixed the type
    (``pack_padded_sequence(x, lengths)`` with a Tensor ``lengths``: ``isinstance(lengths, Tensor)``),
    and ONNX has no type test; constant propagation then drops the branch not taken. A value of
    static type S is an instance of T when S is a subtype of T, and cannot be one when S is a
    closed type (no Optional, Union, Any or interface) of which T is no subtype. Returns how many
    tests were folded."""
    folded = 0
    for node in iter_nodes(graph):
        if node.kind() != "prim::isinstance":
            continue
        static = node.inputsAt(0).type()
        candidates = node.tys("types")
        if any(static.isSubtypeOf(t) for t in candidates):
            answer = True
        elif static.kind() not in _OPEN_TYPES and not any(t.isSubtypeOf(static) for t in candidates):
            answer = False
        else:
            continue
        with graph.insert_point_guard(node):
            constant = graph.insertConstant(answer)
        node.outputsAt(0).replaceAllUsesWith(constant)
        node.destroy()
        folded += 1
    return folded


def dict_outputs_to_tuples(graph: torch._C.Graph) -> int:
    """A dict the scripted forward returns (``{"logits": x, "loss": y}``) becomes a tuple of its
    values in insertion order, which tuple lowering flattens into one output each, as tracing
    flattens a returned dict. Returns how many dicts were replaced."""
    replaced = 0
    for k, output in enumerate(list(graph.outputs())):
        node = output.node()
        if node.kind() != "prim::DictConstruct" or len(output.uses()) != 1:
            continue
        values = list(node.inputs())[1::2]
        with graph.insert_point_guard(graph.return_node()):
            construct = graph.create("prim::TupleConstruct", values, 1)
            construct.output().setType(torch._C.TupleType([v.type() for v in values]))
            items = graph.insertNode(construct).output()
        graph.return_node().replaceInput(k, items)
        node.destroy()
        replaced += 1
    return replaced
