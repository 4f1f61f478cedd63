"""Writes into views become functional: ``x[1:3] = y`` → ``x' = slice_scatter(x, y, 0, 1, 3)``.

Why a JIT-graph pass and not the symbolics: the tracer threads in-place ops on a tensor itself
(``x.add_(1)`` returns the value later uses read), but a write into a *view* (``aten::copy_`` into
``aten::slice``, ``aten::fill_`` into ``aten::select``, ``index_put_`` into a transpose) leaves every
later use of the base, and of the other views of it, reading the stale value. Fixing that needs to
see the whole graph (which values alias which, which uses come after the write); a symbolic sees one
node. ``torch._C._jit_pass_remove_mutation`` does not help: it keeps writes into views and in-place
ops on aliased values as they are (tests/ops/test_indexing.py checks this), so we do it here:

1. Every value made by a view op (slice, select, transpose, view, ...) is recorded with the node
   that made it and its parent.
2. At an in-place op on a view, the view's new value (the op's output; the registry maps
   ``add_`` to ``add`` and ``copy_`` to ``copy``) is scattered back level by level with the
   functional inverse of each view op (``slice_scatter``, ``select_scatter``, ``diagonal_scatter``,
   a reshape back to the parent's size, the inverse permutation) up to the base.
3. Later uses of the base read the new base; views of the base that are read later are made again
   from the new base, so aliases see the write as in eager PyTorch.

A reshape/flatten is a view only when the strides the trace recorded allow it; otherwise it copied
and writes into it stay there. In scripted graphs, which never thread in-place results, later reads
of a written tensor are pointed at the write's result as well.

Branches and loop bodies of scripted graphs are rewritten block by block: a write there into a
view of a tensor defined outside the block ends with ``aten::copy_`` of the new value into that
tensor, which the converter carries out of the If/Loop like any other mutation of an outer value.
Views of it made outside and read inside are made again and copied back the same way; views of it
read after the If/Loop are made again after it. Writes into views this pass cannot invert
(expand, as_strided, the pieces of split/chunk/unbind) raise a clear error instead of exporting a
model that silently ignores the write.
"""

from __future__ import annotations

import torch

from ...builder import jit_walk
from ...builder.errors import SymbolicValueError
from ...builder.mutation import inside, mutated_outside

# view op -> how the new value of the view goes back into its parent
_RESHAPE_BACK = {"aten::view", "aten::reshape", "aten::unsqueeze", "aten::squeeze", "aten::flatten",
                 "aten::unflatten", "aten::view_as", "aten::reshape_as", "aten::_reshape_alias"}
_SELF_INVERSE = {"aten::t", "aten::numpy_T", "aten::mT", "aten::mH", "aten::adjoint"}
_SAME = {"aten::alias", "aten::detach"}
VIEW_OPS = (_RESHAPE_BACK | _SELF_INVERSE | _SAME
            | {"aten::slice", "aten::select", "aten::narrow", "aten::diagonal", "aten::transpose",
               "aten::swapaxes", "aten::swapdims", "aten::permute", "aten::movedim", "aten::moveaxis"})
# Views whose writes cannot be turned back into a write into the base.
UNINVERTIBLE_VIEWS = {"aten::expand", "aten::expand_as", "aten::broadcast_to", "aten::as_strided",
                      "aten::unfold", "aten::split", "aten::split_with_sizes", "aten::chunk",
                      "aten::unbind", "aten::tensor_split", "aten::unsafe_split", "aten::unsafe_chunk",
                      "prim::ConstantChunk", "aten::view_as_real", "aten::view_as_complex"}

# Uninvertible views that cut their input into non-overlapping pieces.
DISJOINT_PIECES = {"aten::split", "aten::split_with_sizes", "aten::chunk", "aten::unbind", "aten::tensor_split",
                   "aten::unsafe_split", "aten::unsafe_chunk", "prim::ConstantChunk"}


# These return a view when the strides allow it and a copy otherwise (writes into a copy stay there).
_COPY_WHEN_STRIDED = {"aten::reshape", "aten::flatten", "aten::reshape_as", "aten::unflatten"}


def _reshape_is_view(node: torch._C.Node) -> bool:
    """Whether a reshape gave a view, from the sizes and strides the trace recorded (unknown: yes)."""
    source, result = node.inputsAt(0).type(), node.output().type()
    sizes, strides = source.sizes(), source.strides()
    target = result.sizes() if isinstance(result, torch._C.TensorType) else None
    if sizes is None or strides is None or target is None:
        return True
    try:
        torch.empty_strided(sizes, strides, device="meta").view(target)
    except RuntimeError:
        return False
    return True


def is_inplace(node: torch._C.Node) -> bool:
    kind = node.kind()
    return (kind.startswith("aten::") and kind.endswith("_") and not kind.endswith("__")
            and node.inputsSize() > 0 and isinstance(node.inputsAt(0).type(), torch._C.TensorType))


def remove_inplace_views(graph: torch._C.Graph) -> bool:
    """Rewrite writes into views in every block; return whether anything changed."""
    return _Rewriter(graph, graph.block()).run()


class _Rewriter:
    """Rewrites one block; blocks nested in it (If branches, Loop bodies) get their own, ``outer``
    being the rewriter of the enclosing block, whose views they can see."""

    def __init__(self, graph: torch._C.Graph, block, outer: _Rewriter | None = None):
        self.graph, self.block, self.outer = graph, block, outer
        self.views: dict[torch._C.Value, tuple[torch._C.Node, torch._C.Value]] = {}
        self.uninvertible: dict[torch._C.Value, str] = {}
        self.bases: dict[torch._C.Value, torch._C.Value] = {}  # uninvertible view -> its input
        # view -> the tensor it finally views, and root -> its views in creation order, so that
        # each write costs time in the views of its own root only
        self.roots: dict[torch._C.Value, torch._C.Value] = {}
        self.by_root: dict[torch._C.Value, list[torch._C.Value]] = {}
        self.changed = False

    def levels(self):
        level = self
        while level is not None:
            yield level
            level = level.outer

    def find(self, table: str, value):
        """``value``'s entry in ``table`` of this block's rewriter or an enclosing one."""
        return next((getattr(level, table)[value] for level in self.levels() if value in getattr(level, table)),
                    None)

    def defines(self, value) -> bool:
        return value.node().owningBlock() == self.block

    def add_view(self, value, template, parent) -> None:
        self.views[value] = (template, parent)
        root = self.roots[value] = self.root_of(parent)
        self.by_root.setdefault(root, []).append(value)

    def run(self) -> bool:
        for node in list(self.block.nodes()):
            kind = node.kind()
            if kind in VIEW_OPS and isinstance(node.inputsAt(0).type(), torch._C.TensorType) \
                    and (kind not in _COPY_WHEN_STRIDED or _reshape_is_view(node)):
                self.add_view(node.output(), node, node.inputsAt(0))
            elif kind in UNINVERTIBLE_VIEWS:
                for out in node.outputs():
                    self.uninvertible[out] = kind
                    self.bases[out] = node.inputsAt(0)
            elif kind == "prim::ListUnpack" and self.find("uninvertible", node.inputsAt(0)):
                for out in node.outputs():
                    self.uninvertible[out] = self.find("uninvertible", node.inputsAt(0))
                    self.bases[out] = self.find("bases", node.inputsAt(0))
            elif is_inplace(node):
                self.rewrite_write(node)
            blocks = jit_walk.blocks(node)  # without a C++ exception per node (see jit_walk)
            if blocks:
                for block in blocks:
                    self.changed |= _Rewriter(self.graph, block, self).run()
                if self.by_root:  # only views made here can go stale
                    self.after_nested(node)
        return self.changed

    def root_of(self, value):
        return self.find("roots", value) or value

    def views_of(self, root) -> bool:
        return any(level.by_root.get(root) for level in self.levels())

    def rewrite_write(self, node: torch._C.Node) -> None:
        target = node.inputsAt(0)
        uninvertible = self.find("uninvertible", target)
        if uninvertible:
            base = self.find("bases", target)
            if uninvertible in DISJOINT_PIECES and self.find("views", base) is None \
                    and not _used_after(base, node):
                return  # pieces do not overlap and nobody reads the base later (LSTMCell's gates)
            raise SymbolicValueError(
                f"{node.kind()} writes into a view made by {uninvertible}, which cannot be "
                f"exported as a write into its base; write into the base tensor instead"
                f" ({_source(node)})")
        root = self.root_of(target)
        if target is root and not self.views_of(root):
            # A write into a tensor nobody views: traces already read the op's output afterwards;
            # scripted graphs keep reading the input, which now means the written value (the
            # converter rebinds writes in nested blocks itself).
            if self.outer is None and _used_after(root, node):
                root.replaceAllUsesAfterNodeWith(node, node.output())
                self.changed = True
            return
        self.changed = True
        anchor = node
        new = node.output()
        value = target
        written_outside = []  # (value defined outside this block, its new value)
        chain = {target}
        while (view := self.find("views", value)) is not None:
            template, parent = view
            new = self.scatter_back(template, parent, new, anchor)
            anchor = new.node()
            value = parent
            chain.add(parent)
            if not self.defines(parent):
                written_outside.append((parent, new))
        if target is not root:
            self.add_view(node.output(), *self.find("views", target))
        if self.defines(root):
            root.replaceAllUsesAfterNodeWith(anchor, new)
            self.refresh(root, new, anchor)
            return
        # The base lives outside this branch or loop body: write it back with an in-place copy_,
        # which the converter carries out of the block like any other mutation of an outer value.
        emit = _Emitter(self.graph, anchor)
        for outer_value, new_value in written_outside:
            new = emit("aten::copy_", [outer_value, new_value, *emit.consts(False)], outer_value.type())
        remade = {**dict(written_outside), root: new}
        self.refresh_outer_views(root, chain, remade, emit)
        self.refresh(root, new, emit.anchor)

    def refresh_outer_views(self, root, chain: set, remade: dict, emit: _Emitter) -> None:
        """Views of ``root`` made outside this block and read inside the If/Loop that holds it would
        miss the write: make them again from the new root and copy_ them back, so the converter
        carries them as well."""
        stale, container = set(), self
        for level in self.outer.levels():
            compound = container.block.owningNode()
            stale.update(v for v in level.by_root.get(root, [])
                         if v not in chain and any(inside(use.user, compound) for use in v.uses()))
            container = level
        needed = set()
        for view in stale:
            while view not in remade and view not in needed:
                needed.add(view)
                view = self.find("views", view)[1]
        outer_views = [v for level in reversed(list(self.outer.levels())) for v in level.by_root.get(root, [])]
        for view in [v for v in outer_views if v in needed]:
            template, parent = self.find("views", view)
            clone = self.graph.createClone(template, lambda x: x)
            clone.replaceInput(0, remade[parent])
            clone.insertAfter(emit.anchor)
            clone.output().setType(view.type())
            emit.anchor = clone
            remade[view] = clone.output()
        for view in [v for v in outer_views if v in stale]:
            emit("aten::copy_", [view, remade[view], *emit.consts(False)], view.type())

    def after_nested(self, node: torch._C.Node) -> None:
        """Views read after a branch or loop that wrote into their base are made again after it."""
        for value in mutated_outside(node):
            root = self.root_of(value)
            if self.by_root.get(root):
                self.refresh(root, root, node)
                self.changed = True

    def refresh(self, root, new_root, anchor) -> None:
        """Views of ``root`` read after ``anchor`` are made again from ``new_root``."""
        stale = self.by_root.pop(root, [])
        needed = set()
        for v in reversed(stale):
            if v in needed or _used_after(v, anchor):
                needed.add(v)
                needed.add(self.views[v][1])
        remap = {root: new_root}
        for v in stale:
            template, parent = self.views.pop(v)
            del self.roots[v]
            if v not in needed:
                continue
            clone = self.graph.createClone(template, lambda x: x)
            clone.replaceInput(0, remap[parent])
            clone.insertAfter(anchor)
            anchor = clone
            out = clone.output()
            out.setType(v.type())
            v.replaceAllUsesAfterNodeWith(anchor, out)
            remap[v] = out
            self.add_view(out, template, remap[parent])

    def scatter_back(self, template, parent, new, anchor):
        """The parent's new value once its view ``template`` holds ``new``; inserted after ``anchor``."""
        kind = template.kind()
        args = list(template.inputs())[1:]
        emit = _Emitter(self.graph, anchor)
        if kind == "aten::slice" and _is_full_slice(args):
            return new  # x[:, i] = v traces a write into x[:], which is x itself
        if kind == "aten::slice":
            out = emit("aten::slice_scatter", [parent, new] + args)
        elif kind == "aten::narrow":
            dim, start, length = (_const(v, template) for v in args)
            out = emit("aten::slice_scatter", [parent, new] + emit.consts(dim, start, start + length, 1))
        elif kind == "aten::select":
            out = emit("aten::select_scatter", [parent, new] + args)
        elif kind == "aten::diagonal":
            out = emit("aten::diagonal_scatter", [parent, new] + args)
        elif kind in ("aten::transpose", "aten::swapaxes", "aten::swapdims"):
            out = emit("aten::transpose", [new] + args)
        elif kind == "aten::permute":
            dims = _const(args[0], template)
            rank = len(dims)
            inverse = sorted(range(rank), key=lambda k: dims[k] % rank)
            out = emit("aten::permute", [new] + emit.consts(inverse))
        elif kind in ("aten::movedim", "aten::moveaxis"):
            out = emit("aten::movedim", [new, args[1], args[0]])
        elif kind in _SELF_INVERSE:
            out = emit(kind, [new])
        elif kind in _SAME:
            return new
        else:  # shape-only views
            size = emit("aten::size", [parent], torch._C.ListType.ofInts())
            out = emit("aten::reshape", [new, size])
        out.setType(parent.type())
        return out


class _Emitter:
    """Creates nodes one after another, starting right after ``anchor``."""

    def __init__(self, graph, anchor):
        self.graph, self.anchor = graph, anchor

    def consts(self, *values):
        with self.graph.insert_point_guard(self.anchor):
            return [self.graph.insertConstant(v) for v in values]

    def __call__(self, kind, inputs, out_type=None):
        node = self.graph.create(kind, inputs, 1)
        node.insertAfter(self.anchor)
        node.copyMetadata(self.anchor)
        self.anchor = node
        if out_type is not None:
            node.output().setType(out_type)
        return node.output()


def _is_full_slice(args) -> bool:
    if any(v.node().kind() != "prim::Constant" for v in args[1:4]):
        return False
    start, end, step = (v.toIValue() for v in args[1:4])
    return start in (None, 0) and step in (None, 1) and (end is None or end >= 9223372036854775807)


def _used_after(value, anchor) -> bool:
    return any(use.user.isAfter(anchor) for use in value.uses())


def _const(value, node):
    producer = value.node()
    if producer.kind() == "prim::ListConstruct":
        ivalue = [v.toIValue() for v in producer.inputs()]
        ivalue = None if any(v is None for v in ivalue) else ivalue
    else:
        ivalue = value.toIValue()
    if ivalue is None:
        raise SymbolicValueError(f"{node.kind()} with arguments known only at runtime cannot be written "
                                 f"into ({_source(node)})")
    return ivalue


def _source(node) -> str:
    text = node.sourceRange()
    return text.split("\n", 1)[0].strip() if text else node.kind()
