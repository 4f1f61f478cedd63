"""Opset 23's LLM ops in place of the hand-written patterns transformers' models trace to.

``FuseRMSNormalization``: LlamaRMSNorm (and Qwen2's, Mistral's, ... copies) is written by hand:
``x.to(float32)``, ``x.pow(2).mean(-1, keepdim=True)``, ``+ eps``, ``rsqrt``, ``x * ...``,
``.to(input_dtype)``, ``weight * ...``. Its lowering

    [Cast(to float)] -> Pow(x, 2) | Mul(x, x) -> ReduceMean(trailing axes, keepdims) -> Add(eps)
    -> Sqrt -> Div(1, .) | Reciprocal -> Mul(x, .)        (or Div(x, Sqrt(...)))
    -> [Cast(back to the input type)] -> [Mul(weight)]

becomes one ``RMSNormalization(x, weight, axis, epsilon, stash_type=1)``. Only when it computes
the same thing: the statistics in float32 (stash_type 1: float32 inputs, or float16 cast to float32
and back, as the spec's own cast), a scalar constant epsilon added after the mean, a
constant 1 in the reciprocal, the reduction over the trailing axes with keepdims, and a weight
that broadcasts into the normalised dims only (so the output keeps the input's shape).

``FuseRotaryEmbedding``: transformers' ``apply_rotary_pos_emb``, ``q * cos + rotate_half(q) * sin``
with ``rotate_half(x) = cat(-x[..., D/2:], x[..., :D/2])`` and ``cos``/``sin`` of shape
``(B, S, D)`` unsqueezed at dim 1, becomes ``RotaryEmbedding(q, cos_cache, sin_cache)``
(non-interleaved, ``q`` of shape ``(B, H, S, D)``, caches of shape ``(B, S, D/2)``). The op takes
half-width caches, so ``cos``/``sin`` must have two equal halves: they are built from
``cat(freqs, freqs)`` (followed by Cos/Sin, scalar scaling, casts) or are constants whose halves
are equal; the cache is then their first half. onnxruntime wants the caches' batch and sequence
equal to the input's (torch broadcasts a batch of 1), so they are expanded to ``q``'s batch and
sequence unless those provably match; that expansion is shared by every layer.

``AttentionGroupedKV``: Attention takes grouped key/value heads itself (query head ``h`` reads
key/value head ``h // n_rep``, as ``repeat_kv`` repeats them), so transformers' ``repeat_kv``
(Unsqueeze at 2 -> Expand by ``n_rep`` -> Reshape to ``(B, KV * n_rep, S, D)``) feeding an
Attention's key and value is dropped.

Each pass leaves the replaced nodes to the last dead-code pass; a pattern whose intermediate
values are read elsewhere (or are graph outputs, or read inside an If/Loop body) is left alone.
"""

from __future__ import annotations

import torch

from ...builder import shapes
from ...builder.ir import Graph, Node, Value
from .subgraphs import subgraph_references

# onnx.TensorProto.FLOAT: the stash type every fused RMSNormalization computes in
STASH_FLOAT = 1
# the dtypes RMSNormalization may take with float32 statistics (the model casts them to float32);
# not bfloat16: onnxruntime's CPU RMSNormalization expands to a bfloat16 Mul it has no kernel for
RMS_CAST_DTYPES = (torch.float16,)
ROTARY_DTYPES = (torch.float32, torch.float16)


def _op(value: Value | None, *op_types: str) -> Node | None:
    """The node making ``value`` when it is one of ``op_types`` (default domain)."""
    node = value.producer if value is not None else None
    if node is None or node.domain or node.op_type not in op_types:
        return None
    return node


def _tensor(value: Value | None) -> torch.Tensor | None:
    if value is None or not value.is_const or value.const is None:
        return None
    const = value.const
    if isinstance(const, torch.Tensor):
        return const
    if isinstance(const, (int, float, list, tuple)):
        try:
            return torch.tensor(const)
        except (TypeError, ValueError):
            return None
    return None


def _scalar(value: Value | None) -> float | None:
    tensor = _tensor(value)
    if tensor is None or tensor.numel() != 1 or tensor.dtype == torch.bool:
        return None
    return float(tensor.reshape(()).item())


def _ints(value: Value | None) -> list[int] | None:
    tensor = _tensor(value)
    if tensor is None or tensor.dtype.is_floating_point or tensor.dim() > 1:
        return None
    return [int(v) for v in tensor.reshape(-1).tolist()]


def _other(node: Node, value: Value) -> Value | None:
    """The other operand of a binary node one of whose operands is ``value``."""
    if len(node.inputs) != 2:
        return None
    a, b = node.inputs
    return b if a is value else a if b is value else None


def _same(a: Value | None, b: Value | None) -> bool:
    """The same value, or two casts of one value to one type (``x.float()`` written twice)."""
    if a is b:
        return a is not None
    ca, cb = _op(a, "Cast"), _op(b, "Cast")
    return ca is not None and cb is not None and ca.inputs[0] is cb.inputs[0] and ca.attr("to") == cb.attr("to")


def _same_dim(a, b) -> bool:
    return a is not None and a == b


class _Rewriter:
    """Shared bookkeeping: readers, pinned values, and new nodes placed before a given node."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.readers = graph.consumers()
        self.pinned = {id(v) for v in graph.outputs}
        self.inner = subgraph_references(graph)
        self.before: dict[int, list[Node]] = {}  # id(node) -> new nodes to place before it
        self.dropped: set[int] = set()  # id(node) of the nodes whose output a new node now makes

    def private(self, value: Value, *readers: Node) -> bool:
        """Whether ``value`` is read only by ``readers`` (so replacing them lets it die)."""
        if id(value) in self.pinned or value.name in self.inner:
            return False
        users = {id(u) for u in self.readers.get(id(value), [])}
        return users == {id(r) for r in readers}

    def new(self, op_type: str, inputs, attrs: dict, at: Node, output: Value | None = None) -> Node:
        """A node placed before ``at``; with ``output``, it makes that value (``at`` is dropped)."""
        node = self.graph.add_node(op_type, "", inputs, attrs, 0 if output is not None else 1, at.scope, at.source,
                                   at.origin)
        self.graph.nodes.pop()
        if output is not None:
            node.outputs.append(output)
            output.producer = node
            self.dropped.add(id(at))
        else:
            shapes.infer(node)
        self.before.setdefault(id(at), []).append(node)
        return node

    def constant(self, tensor: torch.Tensor, at: Node) -> Value:
        out = self.new("Constant", [], {"value": ("t", tensor)}, at).outputs[0]
        out.dtype, out.shape, out.const = tensor.dtype, tuple(tensor.shape), tensor
        return out

    def finish(self) -> bool:
        if not self.before:
            return False
        nodes = []
        for node in self.graph.nodes:
            nodes.extend(self.before.get(id(node), ()))
            if id(node) not in self.dropped:
                nodes.append(node)
        self.graph.nodes = nodes
        return True


# ---------------------------------------------------------------------------------------------
# RMSNormalization


class _RMSMatch:
    __slots__ = ("x", "axis", "epsilon", "out", "inner")

    def __init__(self, x, axis, epsilon, out, inner=None):
        # inner: the float32 result a cast back to the input type reads (itself a match, not emitted)
        self.x, self.axis, self.epsilon, self.out, self.inner = x, axis, epsilon, out, inner


def _rms_core(rw: _Rewriter, out: Value) -> _RMSMatch | None:
    """``out`` = x / sqrt(mean(x², trailing axes) + eps), maybe cast from and back to float16."""
    top = _op(out, "Mul", "Div", "Cast")
    if top is None:
        return None
    cast_back = None
    if top.op_type == "Cast":
        cast_back, top = top, _op(top.inputs[0], "Mul", "Div")
        if top is None or not rw.private(cast_back.inputs[0], cast_back):
            return None
    if top.op_type == "Div":  # Div(x, Sqrt(...))
        x, root = top.inputs
        sqrt = _op(root, "Sqrt")
        chain = [top]
    else:  # Mul(x, Div(1, Sqrt(...)) | Reciprocal(Sqrt(...)))
        for x, inv in (top.inputs, reversed(top.inputs)):
            recip = _op(inv, "Div", "Reciprocal")
            if recip is not None and (recip.op_type == "Reciprocal" or _scalar(recip.inputs[0]) == 1.0):
                break
        else:
            return None
        if not rw.private(inv, top):
            return None
        sqrt = _op(recip.inputs[-1], "Sqrt")
        chain = [top, recip]
    if sqrt is None or not rw.private(sqrt.outputs[0], chain[-1]):
        return None
    add = _op(sqrt.inputs[0], "Add")
    if add is None or not rw.private(add.outputs[0], sqrt):
        return None
    mean = next((_op(v, "ReduceMean") for v in add.inputs if _op(v, "ReduceMean") is not None), None)
    if mean is None or not rw.private(mean.outputs[0], add):
        return None
    epsilon = _scalar(_other(add, mean.outputs[0]))
    if epsilon is None:
        return None
    square = _op(mean.inputs[0], "Pow", "Mul")
    if square is None or not rw.private(square.outputs[0], mean):
        return None
    if square.op_type == "Pow" and not (_same(square.inputs[0], x) and _scalar(square.inputs[1]) == 2.0):
        return None
    if square.op_type == "Mul" and not (_same(square.inputs[0], x) and _same(square.inputs[1], x)):
        return None
    if x is None or x.dtype != torch.float32 or x.rank is None or x.rank < 1:
        return None
    axis = _trailing_axis(mean, x.rank)
    if axis is None:
        return None
    source = x
    cast_in = _op(x, "Cast")
    if cast_back is not None:
        # float32 statistics of a float16 input, cast back: stash_type 1 does exactly that
        if cast_in is None or cast_in.inputs[0].dtype not in RMS_CAST_DTYPES \
                or cast_back.outputs[0].dtype != cast_in.inputs[0].dtype:
            return None
        source = cast_in.inputs[0]
    return _RMSMatch(source, axis, epsilon, out, cast_back.inputs[0] if cast_back is not None else None)


def _trailing_axis(mean: Node, rank: int) -> int | None:
    """The first of the trailing axes a keepdims ReduceMean reduces, as a negative axis."""
    if mean.attr("keepdims", 1) != 1 or mean.attr("noop_with_empty_axes", 0):
        return None
    axes = mean.attr("axes")
    if axes is None:
        axes = _ints(mean.inputs[1]) if len(mean.inputs) > 1 and mean.inputs[1] is not None else None
    if not axes:
        return None
    normal = sorted({a + rank if a < 0 else a for a in axes})
    if len(normal) != len(axes) or normal != list(range(rank - len(normal), rank)):
        return None
    return -len(normal)


def _scale_fits(scale: Value, x: Value, axis: int) -> bool:
    """``scale`` broadcasts into the normalised dims of ``x`` without growing any dim."""
    if scale.shape is None or x.shape is None or scale.rank > -axis or scale.dtype != x.dtype:
        return False
    trailing = x.shape[len(x.shape) - scale.rank:]
    return all(s == 1 or _same_dim(s, d) for s, d in zip(scale.shape, trailing))


class FuseRMSNormalization:
    def run(self, graph: Graph) -> bool:
        rw = _Rewriter(graph)
        cores: dict[int, _RMSMatch] = {}
        for node in graph.nodes:
            for out in node.outputs:
                match = _rms_core(rw, out)
                if match is not None:
                    cores[id(out)] = match
        used: set[int] = set()
        for node in graph.nodes:  # weighted first: the weight's Mul ends the pattern
            if node.op_type != "Mul" or node.domain or len(node.inputs) != 2:
                continue
            for normed, scale in (node.inputs, reversed(node.inputs)):
                match = cores.get(id(normed))
                if match is None or id(normed) in used or scale is None or not rw.private(normed, node):
                    continue
                if not _scale_fits(scale, match.x, match.axis) or node.outputs[0].shape != match.x.shape:
                    continue
                used.add(id(normed))
                self._emit(rw, match, scale, node)
                break
        used.update(id(m.inner) for m in cores.values() if m.inner is not None)
        for key, match in cores.items():
            if key in used:
                continue
            ones = torch.ones(1, dtype=match.x.dtype)
            self._emit(rw, match, rw.constant(ones, match.out.producer), match.out.producer)
        return rw.finish()

    @staticmethod
    def _emit(rw: _Rewriter, match: _RMSMatch, scale: Value, at: Node) -> None:
        attrs = {"axis": ("i", match.axis), "epsilon": ("f", match.epsilon), "stash_type": ("i", STASH_FLOAT)}
        rw.new("RMSNormalization", [match.x, scale], attrs, at, output=at.outputs[0])


# ---------------------------------------------------------------------------------------------
# RotaryEmbedding


def _halves_equal(value: Value, half: int, depth: int = 0) -> bool:
    """Whether ``value``'s last axis is two equal halves of ``half`` entries, by construction."""
    if depth > 12 or value is None:
        return False
    tensor = _tensor(value)
    if tensor is not None:
        return tensor.dim() >= 1 and tensor.shape[-1] == 2 * half \
            and torch.equal(tensor[..., :half], tensor[..., half:])
    node = value.producer
    if node is None or node.domain:
        return False
    if node.op_type in ("Cast", "Cos", "Sin", "Neg", "Identity"):
        return _halves_equal(node.inputs[0], half, depth + 1)
    if node.op_type in ("Mul", "Div") and len(node.inputs) == 2:
        a, b = node.inputs
        if _scalar(b) is not None and b.rank is not None and b.rank <= (a.rank or 0):
            return _halves_equal(a, half, depth + 1)
        if node.op_type == "Mul" and _scalar(a) is not None and a.rank is not None and a.rank <= (b.rank or 0):
            return _halves_equal(b, half, depth + 1)
        return False
    if node.op_type == "Concat" and len(node.inputs) == 2 and node.inputs[0] is node.inputs[1]:
        part = node.inputs[0]
        rank = part.rank
        axis = node.attr("axis")
        return rank is not None and axis in (-1, rank - 1) and part.shape[-1] == half
    if node.op_type == "Gather" and node.inputs[0].rank is not None:
        axis = node.attr("axis", 0)
        rank = node.inputs[0].rank
        return axis % rank != rank - 1 and _halves_equal(node.inputs[0], half, depth + 1)
    return False


def _slice_half(node: Node, width: int) -> str | None:
    """'low' for x[..., :width/2], 'high' for x[..., width/2:] (constant starts/ends on the last axis)."""
    if node.op_type != "Slice" or node.domain or len(node.inputs) < 3:
        return None
    rank = node.inputs[0].rank
    starts, ends = _ints(node.inputs[1]), _ints(node.inputs[2])
    axes = _ints(node.inputs[3]) if len(node.inputs) > 3 and node.inputs[3] is not None else [0]
    steps = _ints(node.inputs[4]) if len(node.inputs) > 4 and node.inputs[4] is not None else [1]
    if None in (starts, ends, axes, steps) or len(starts) != 1 or axes[0] not in (-1, rank - 1) or steps != [1]:
        return None
    half = width // 2
    if starts == [0] and ends == [half]:
        return "low"
    if starts[0] in (half, half - width) and ends[0] >= width:
        return "high"
    return None


class _RotaryMatch:
    __slots__ = ("q", "cos", "sin", "add")

    def __init__(self, q, cos, sin, add):
        self.q, self.cos, self.sin, self.add = q, cos, sin, add


def _rotary(rw: _Rewriter, add: Node) -> _RotaryMatch | None:
    """``add`` = q * Unsqueeze(cos, 1) + rotate_half(q) * Unsqueeze(sin, 1)."""
    if add.op_type != "Add" or add.domain or len(add.inputs) != 2:
        return None
    for plain, rotated in (add.inputs, reversed(add.inputs)):
        mul_cos, mul_sin = _op(plain, "Mul"), _op(rotated, "Mul")
        if mul_cos is None or mul_sin is None or mul_cos is mul_sin:
            continue
        for rot, sin4 in (mul_sin.inputs, reversed(mul_sin.inputs)):
            concat = _op(rot, "Concat")
            if concat is None or len(concat.inputs) != 2:
                continue
            neg = _op(concat.inputs[0], "Neg")
            low = _op(concat.inputs[1], "Slice")
            high = _op(neg.inputs[0], "Slice") if neg is not None else None
            if high is None or low is None or low.inputs[0] is not high.inputs[0]:
                continue
            q = low.inputs[0]
            cos4 = _other(mul_cos, q)
            if cos4 is None or q.rank != 4 or not isinstance(q.shape[3], int) or q.shape[3] % 2:
                continue
            width = q.shape[3]
            if concat.attr("axis") not in (-1, 3) or _slice_half(low, width) != "low" \
                    or _slice_half(high, width) != "high":
                continue
            intermediates = ((plain, add), (rotated, add), (rot, mul_sin), (neg.outputs[0], concat),
                             (low.outputs[0], concat), (high.outputs[0], neg))
            if not all(rw.private(v, reader) for v, reader in intermediates):
                continue
            cos, sin = _unsqueezed_cache(cos4, q), _unsqueezed_cache(sin4, q)
            if cos is None or sin is None or q.dtype not in ROTARY_DTYPES:
                continue
            if not (_halves_equal(cos, width // 2) and _halves_equal(sin, width // 2)):
                continue
            return _RotaryMatch(q, cos, sin, add)
    return None


def _unsqueezed_cache(value: Value, q: Value) -> Value | None:
    """The (B, S, D) cache that ``value`` = Unsqueeze(cache, 1) broadcasts over q's heads; for a
    constant ``value`` of shape (B, 1, S, D) (a cos/sin of static positions, folded), a constant
    cache outside the graph (``FuseRotaryEmbedding`` writes its half as an initializer)."""
    tensor = value.const if value.is_const else None
    node = _op(value, "Unsqueeze")
    if isinstance(tensor, torch.Tensor) and tensor.dim() == 4 and tensor.shape[1] == 1:
        cache = Value("", tensor.dtype, (tensor.shape[0],) + tuple(tensor.shape[2:]), tensor.squeeze(1))
    elif node is not None:
        axes = node.attr("axes")
        if axes is None and len(node.inputs) > 1:
            axes = _ints(node.inputs[1])
        cache = node.inputs[0]
        if axes not in ([1], [-3]):
            return None
    else:
        return None
    if cache.rank != 3 or cache.dtype != q.dtype:
        return None
    batch, seq, width = cache.shape
    if width != q.shape[3]:
        return None
    # a dim of the cache must be 1, unknown or the query's (a bigger one would grow the output)
    if not all(dim is None or dim == 1 or _same_dim(dim, want) for dim, want in ((batch, q.shape[0]),
                                                                                 (seq, q.shape[2]))):
        return None
    return cache


class FuseRotaryEmbedding:
    def run(self, graph: Graph) -> bool:
        rw = _Rewriter(graph)
        self._halves: dict[int, Value] = {}
        self._constant_halves: list[tuple[torch.Tensor, Value]] = []
        self._sizes: dict[tuple, Value] = {}
        self._expanded: dict[tuple, Value] = {}
        for node in list(graph.nodes):
            match = _rotary(rw, node)
            if match is None:
                continue
            cos = self._cache(rw, match.cos, match.q, node)
            sin = self._cache(rw, match.sin, match.q, node)
            out = node.outputs[0]
            rw.new("RotaryEmbedding", [match.q, cos, sin], {"interleaved": ("i", 0)}, node, output=out)
            out.shape = match.q.shape
        return rw.finish()

    def _cache(self, rw: _Rewriter, cache: Value, q: Value, at: Node) -> Value:
        half = q.shape[3] // 2
        if not cache.in_graph:
            # A constant made by the match (it dies with the match: memoised by value, not id): its
            # half as an initializer, named as GraphContext.materialize names constants.
            table = cache.const[..., :half].contiguous()
            sliced = next((v for t, v in self._constant_halves if t.shape == table.shape and t.dtype == table.dtype
                           and torch.equal(t, table)), None)
            if sliced is None:
                sliced = rw.graph.add_initializer("onnx::Constant", table)
                self._constant_halves.append((table, sliced))
        else:
            sliced = self._halves.get(id(cache))
        if sliced is None:
            starts, ends, axes = (rw.constant(torch.tensor([v]), at) for v in (0, half, -1))
            sliced = self._halves[id(cache)] = rw.new("Slice", [cache, starts, ends, axes], {}, at).outputs[0]
        want = (q.shape[0], q.shape[2])
        if all(_same_dim(have, w) for have, w in zip(cache.shape[:2], want)):
            return sliced
        # onnxruntime wants the caches' batch and sequence to be the input's (torch broadcasts)
        target = self._target(rw, q, at)
        key = (id(sliced), id(target))
        if key not in self._expanded:
            self._expanded[key] = rw.new("Expand", [sliced, target], {}, at).outputs[0]
        return self._expanded[key]

    def _target(self, rw: _Rewriter, q: Value, at: Node) -> Value:
        """[batch, sequence, 1] of ``q``: read off a graph input with the same named dims when one
        has them (one shape for every layer), else off ``q``."""
        dims = (q.shape[0], q.shape[2])
        if dims in self._sizes:
            return self._sizes[dims]
        parts = [self._dim(rw, q, 0, at), self._dim(rw, q, 2, at), rw.constant(torch.tensor([1]), at)]
        target = rw.new("Concat", parts, {"axis": ("i", 0)}, at).outputs[0]
        if all(isinstance(d, (int, str)) for d in dims):
            self._sizes[dims] = target
        return target

    def _dim(self, rw: _Rewriter, q: Value, axis: int, at: Node) -> Value:
        dim = q.shape[axis]
        if isinstance(dim, int):
            return rw.constant(torch.tensor([dim]), at)
        source, index = q, axis
        if isinstance(dim, str):
            for value in rw.graph.inputs:
                if value.shape is not None and dim in value.shape:
                    source, index = value, value.shape.index(dim)
                    break
        return rw.new("Shape", [source], {"start": ("i", index), "end": ("i", index + 1)}, at).outputs[0]


# ---------------------------------------------------------------------------------------------
# Attention with grouped key/value heads


def _shape_entries(value: Value | None) -> list | None:
    """The entries of a 1-D shape value: ints, ``(source, axis)`` for a dim read off ``source``
    (Shape -> Gather -> Unsqueeze, or Shape with start/end), symbolic names, or None."""
    node = value.producer if value is not None else None
    if node is not None and node.domain:
        return None
    return shapes.shape_vector(value, _dims_read_off_shape)


def _dims_read_off_shape(value: Value) -> list | None:
    """``[(source, axis), ...]`` when ``value`` reads dims off ``source`` with a Shape node, else None."""
    node = value.producer
    if node is None or node.domain:
        return None
    if node.op_type == "Unsqueeze" and node.inputs[0].rank == 0:
        gather = _op(node.inputs[0], "Gather")
        if gather is not None and gather.attr("axis", 0) == 0:
            shape = _op(gather.inputs[0], "Shape")
            index = _ints(gather.inputs[1])
            if shape is not None and index is not None and len(index) == 1 and shape.inputs[0].rank is not None \
                    and shape.attr("start") is None and shape.attr("end") is None:
                return [(shape.inputs[0], index[0] % shape.inputs[0].rank)]
        return None
    if node.op_type == "Shape" and node.inputs[0].rank is not None:
        rank = node.inputs[0].rank
        start, end = node.attr("start", 0), node.attr("end", rank)
        start, end = start + rank if start < 0 else start, end + rank if end < 0 else end
        return [(node.inputs[0], axis) for axis in range(max(start, 0), min(end, rank))]
    return None


def _is_dim(entry, source: Value, axis: int) -> bool:
    """``entry`` provably equals dim ``axis`` of ``source``."""
    if isinstance(entry, tuple):
        return entry[0] is source and entry[1] == axis
    return _same_dim(entry, source.shape[axis])


def _repeated_kv(rw: _Rewriter, value: Value, attention: Node, q: Value) -> Value | None:
    """The (B, KV, S, D) tensor that ``value`` = repeat_kv(it, n_rep) repeats, when provable."""
    reshape = _op(value, "Reshape")
    if reshape is None or not rw.private(value, attention) or reshape.attr("allowzero", 0):
        return None
    expand = _op(reshape.inputs[0], "Expand")
    if expand is None or not rw.private(expand.outputs[0], reshape):
        return None
    unsqueeze = _op(expand.inputs[0], "Unsqueeze")
    if unsqueeze is None or not rw.private(unsqueeze.outputs[0], expand):
        return None
    axes = unsqueeze.attr("axes")
    if axes is None and len(unsqueeze.inputs) > 1:
        axes = _ints(unsqueeze.inputs[1])
    kv = unsqueeze.inputs[0]
    if axes not in ([2], [-3]) or kv.rank != 4 or q.rank != 4 or not isinstance(kv.shape[1], int):
        return None
    heads = kv.shape[1]
    repeated, target = _shape_entries(expand.inputs[1]), _shape_entries(reshape.inputs[1])
    if repeated is None or target is None or len(repeated) != 5 or len(target) != 4:
        return None
    n_rep = repeated[2]
    if not isinstance(n_rep, int) or n_rep < 1 or not isinstance(q.shape[1], int) or q.shape[1] != heads * n_rep:
        return None
    # the expansion repeats the new axis only: every other entry is 1 or the kv tensor's own dim
    if not all(repeated[axis] == 1 or _is_dim(repeated[axis], kv, kv_axis)
               for axis, kv_axis in ((0, 0), (1, 1), (3, 2), (4, 3))):
        return None
    # the reshape merges (KV, n_rep) and keeps the other dims
    if target[1] != heads * n_rep or not all(_is_dim(target[axis], kv, axis) for axis in (0, 2, 3)):
        return None
    return kv


class AttentionGroupedKV:
    def run(self, graph: Graph) -> bool:
        rw = _Rewriter(graph)
        changed = False
        for node in graph.nodes:
            if node.op_type != "Attention" or node.domain or len(node.inputs) < 3 or len(node.inputs) > 4:
                continue
            q, k, v = node.inputs[:3]
            if node.attr("q_num_heads") is not None or node.attr("kv_num_heads") is not None:
                continue
            new_k, new_v = _repeated_kv(rw, k, node, q), _repeated_kv(rw, v, node, q)
            if new_k is None or new_v is None or new_k.shape[1] != new_v.shape[1]:
                continue
            node.inputs[1], node.inputs[2] = new_k, new_v
            changed = True
        return changed
