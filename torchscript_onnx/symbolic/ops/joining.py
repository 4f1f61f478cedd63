"""Joining and splitting at opset 9: atleast_Nd, hstack/vstack/dstack, meshgrid, split and its
variants, chunk, tensor_split, unbind (cat and stack live with the views in ``tensor.py``)."""

from __future__ import annotations

import torch

from torchscript_onnx.builder import onnx_ops
from torchscript_onnx.builder.ir import Value

from .. import symbolic_helper as sh
from ..registry import declare_opset_requirements, symbolic
from .tensor import require_rank, static_dim, axis_of, cat, concat_shape, reshape_to, shape_parts


# When an op here needs a higher opset than it is registered at: the condition (the reason its
# conversion states with OPSET.require) -> the lowest opset that converts it (docs/supported_ops.md).
OPSET = declare_opset_requirements({
    ("aten::split", "aten::unbind"): {"a runtime number of pieces (ONNX sequences)": 11},
    "aten::chunk": {"a runtime number of pieces (ONNX sequences)": 11, "a dynamic dim (runtime Slice bounds)": 10},
    "aten::split_with_sizes": {"sizes known only at runtime": 13},
}, unlisted={
    "ONNX Expand": 8,
})


# ---------------------------------------------------------------------------------------------
# Joining


@symbolic("aten::atleast_1d")
def atleast_1d(g, self):
    """atleast_1d(Tensor self) -> Tensor; atleast_1d.Sequence(Tensor[] tensors) -> Tensor[]"""
    return _atleast(g, self, 1)


@symbolic("aten::atleast_2d")
def atleast_2d(g, self):
    """atleast_2d(Tensor self) -> Tensor; atleast_2d.Sequence(Tensor[] tensors) -> Tensor[]"""
    return _atleast(g, self, 2)


@symbolic("aten::atleast_3d")
def atleast_3d(g, self):
    """atleast_3d(Tensor self) -> Tensor; atleast_3d.Sequence(Tensor[] tensors) -> Tensor[]"""
    return _atleast(g, self, 3)


# rank -> unsqueeze axes, per target rank (numpy's rules: 1-D becomes a row, 2-D gains a last axis)
_ATLEAST_AXES = {1: {0: [0]}, 2: {0: [0, 1], 1: [0]}, 3: {0: [0, 1, 2], 1: [0, 2], 2: [2]}}


def _atleast(g, self, n: int):
    if sh.is_packed_list(self) or (self.is_const and isinstance(self.const, (list, tuple))):
        return [_atleast(g, v, n) for v in sh.unpack_list(self)]
    axes = _ATLEAST_AXES[n].get(require_rank(f"atleast_{n}d", self))
    return onnx_ops.unsqueeze(g, self, axes) if axes else self


@symbolic("aten::hstack")
def hstack(g, tensors):
    """hstack(Tensor[] tensors) -> Tensor"""
    values = [_atleast(g, v, 1) for v in sh.unpack_list(tensors)]
    dim = 0 if all(v.rank == 1 for v in values) else 1
    return cat(g, Value("", elements=values), Value("", const=dim))


@symbolic("aten::vstack")
def vstack(g, tensors):
    """vstack(Tensor[] tensors) -> Tensor"""
    values = [_atleast(g, v, 2) for v in sh.unpack_list(tensors)]
    return cat(g, Value("", elements=values), Value("", const=0))


@symbolic("aten::dstack")
def dstack(g, tensors):
    """dstack(Tensor[] tensors) -> Tensor"""
    values = [_atleast(g, v, 3) for v in sh.unpack_list(tensors)]
    return cat(g, Value("", elements=values), Value("", const=2))


@symbolic("aten::meshgrid")
def meshgrid(g, tensors, indexing=None):
    """meshgrid.indexing(Tensor[] tensors, *, str indexing) -> Tensor[]"""
    OPSET.require(g, "ONNX Expand")
    mode = sh.const(indexing, None) if indexing is not None else None
    values = [reshape_to(g, v, [-1]) if v.rank == 0 else v for v in sh.unpack_list(tensors)]
    swap = mode == "xy" and len(values) >= 2
    if swap:
        values[0], values[1] = values[1], values[0]
    n = len(values)
    shape = concat_shape(g, [shape_parts(g, v, 0) for v in values])
    outs = []
    for k, v in enumerate(values):
        dims = [1] * n
        dims[k] = -1
        outs.append(g.op("Expand", g.op("Reshape", v, g.constant(dims, torch.int64)), shape))
    if swap:  # the ij grids of (y, x) are the xy grids of (x, y), in the other order
        outs[0], outs[1] = outs[1], outs[0]
    return outs


# ---------------------------------------------------------------------------------------------
# Splitting


def _pieces(g, self: Value, sizes: list[int], dim: int) -> list[Value]:
    """``self`` cut along ``dim`` into ``sizes`` (which may contain zeros)."""
    if all(s > 0 for s in sizes):
        return list(onnx_ops.split(g, self, sizes, dim))
    outs, start = [], 0
    for s in sizes:
        outs.append(onnx_ops.slice(g, self, [dim], [start], [start + s]))
        start += s
    return outs


def _list_length_from_trace(g) -> int | None:
    """How many pieces the traced list output holds, read from the ListUnpack that consumes it."""
    node = g.original_node
    if node is None:
        return None
    for use in node.output().uses():
        if use.user.kind() == "prim::ListUnpack":
            return use.user.outputsSize()
    return None


def _runtime_pieces(g, self, dim: int, what: str, split: Value | None = None, keepdims: bool = True) -> Value:
    """The pieces of a split whose count is known only at runtime (a dynamic dim in a scripted graph,
    where no trace recorded a count): a sequence, cut ``split`` long (the last one shorter) or 1 long."""
    OPSET.require(g, "a runtime number of pieces (ONNX sequences)", self)
    out = g.op("SplitToSequence", self, *([split] if split is not None else []), axis_i=dim, keepdims_i=int(keepdims))
    out.dtype, out.sequence = self.dtype, True
    if self.shape is not None:
        out.shape = tuple(None if k == dim else d for k, d in enumerate(self.shape) if keepdims or k != dim)
    return out


def _split_by_size(g, self, split_size: int, dim: int) -> list[Value]:
    rank = require_rank("split", self)
    dim = axis_of(dim, rank)
    if sh.is_static(self, dim):
        size = sh.sizes(self)[dim]
        sizes = [min(split_size, size - k) for k in range(0, size, split_size)] or [0]
        return _pieces(g, self, sizes, dim)
    count = _list_length_from_trace(g)
    if count is None:
        return _runtime_pieces(g, self, dim, "split", g.constant(split_size, torch.int64))
    # The graph holds as many pieces as the trace made; the last one takes the rest.
    return [onnx_ops.slice(g, self, [dim], [k * split_size],
                           [(k + 1) * split_size if k + 1 < count else onnx_ops.INT64_MAX])
            for k in range(count)]


@symbolic("aten::split")
def split(g, self, split_size_or_sizes, dim=None):
    """split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[];
    split.sizes(Tensor(a -> *) self, SymInt[] split_size, int dim=0) -> Tensor(a)[]"""
    dim = 0 if dim is None else sh._get_const(dim, "i", "dim")
    sizes = sh.const(split_size_or_sizes)
    if isinstance(sizes, (list, tuple)) or sh.is_packed_list(split_size_or_sizes):  # sizes, maybe runtime ones
        return split_with_sizes(g, self, split_size_or_sizes, Value("", const=dim))
    return _split_by_size(g, self, int(sizes), dim)


@symbolic("aten::unsafe_split")
def unsafe_split(g, self, split_size, dim=None):
    """unsafe_split.Tensor(Tensor self, SymInt split_size, int dim=0) -> Tensor[]"""
    return split(g, self, split_size, dim)


@symbolic("aten::split_with_sizes")
def split_with_sizes(g, self, split_sizes, dim=None):
    """split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]"""
    dim = 0 if dim is None else sh._get_const(dim, "i", "dim")
    axis = axis_of(dim, require_rank("split_with_sizes", self))
    if sh.const(split_sizes) is sh.UNKNOWN:  # sizes computed from runtime dims
        pieces = sh.unpack_list(split_sizes)
        OPSET.require(g, "sizes known only at runtime", self)
        sizes = onnx_ops.cast(g, g.materialize(split_sizes), torch.int64)
        return list(g.op("Split", self, sizes, axis_i=axis, outputs=len(pieces)))
    sizes = sh._get_const(split_sizes, "is", "split_sizes")
    return _pieces(g, self, sizes, axis)


@symbolic("aten::unsafe_split_with_sizes")
def unsafe_split_with_sizes(g, self, split_sizes, dim=None):
    """unsafe_split_with_sizes(Tensor self, SymInt[] split_sizes, int dim=0) -> Tensor[]"""
    return split_with_sizes(g, self, split_sizes, dim)


@symbolic("aten::chunk")
@sh.parse_args("v", "v", "i")
def chunk(g, self, chunks, dim=0):
    """chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]"""
    rank = require_rank("chunk", self)
    dim = axis_of(dim, rank)
    if sh.const(chunks) is not sh.UNKNOWN:
        chunks = sh._get_const(chunks, "i", "chunks")
    if not isinstance(chunks, int) or not sh.is_static(self, dim):
        # A runtime size along dim or a runtime number of chunks (x.chunk(x.size(0), 1)): the
        # chunk length is computed at runtime; the trace tells how many pieces come out.
        count = _list_length_from_trace(g)
        if count is None:
            return _runtime_pieces(g, self, dim, "chunk", _chunk_step(g, self, chunks, dim))
        OPSET.require(g, "a dynamic dim (runtime Slice bounds)", self)
        return _chunk_runtime(g, self, chunks, dim, count)
    size = sh.sizes(self)[dim]
    step = -(-size // chunks) if size else 1
    return _split_by_size(g, self, step, dim)


def _chunk_step(g, self, chunks, dim: int) -> Value:
    """ceil(size / chunks): the length of each chunk but the last; ``chunks`` an int or a runtime value."""
    size = onnx_ops.size(g, self, dim)
    if isinstance(chunks, int):
        return g.op("Div", g.op("Add", size, g.constant(chunks - 1, torch.int64)), g.constant(chunks, torch.int64))
    chunks = onnx_ops.cast(g, chunks, torch.int64)
    chunks = reshape_to(g, chunks, []) if chunks.rank else chunks
    less_one = g.op("Sub", chunks, g.constant(1, torch.int64))
    return g.op("Div", g.op("Add", size, less_one), chunks)


def _chunk_runtime(g, self, chunks, dim: int, count: int) -> list[Value]:
    step = _chunk_step(g, self, chunks, dim)
    outs = []
    for k in range(count):
        start = g.op("Mul", step, g.constant(k, torch.int64))
        end = g.op("Mul", step, g.constant(k + 1, torch.int64)) if k + 1 < count else onnx_ops.INT64_MAX
        outs.append(onnx_ops.slice(g, self, [dim], [start], [end]))
    return outs


@symbolic("aten::unsafe_chunk")
def unsafe_chunk(g, self, chunks, dim=None):
    """unsafe_chunk(Tensor self, int chunks, int dim=0) -> Tensor[]"""
    return chunk(g, self, chunks, Value("", const=0) if dim is None else dim)


@symbolic("prim::ConstantChunk")
def prim_constant_chunk(g, self, chunks_i=None, dim_i=None):
    """prim::ConstantChunk[chunks=n, dim=d](Tensor self) -> Tensor..."""
    pieces = chunk(g, self, Value("", const=chunks_i), Value("", const=dim_i))
    return tuple(pieces)


@symbolic("aten::tensor_split")
def tensor_split(g, self, indices_or_sections, dim=None):
    """tensor_split.sections(Tensor(a -> *) self, SymInt sections, int dim=0) -> Tensor(a)[];
    tensor_split.indices(Tensor(a -> *) self, SymInt[] indices, int dim=0) -> Tensor(a)[]"""
    rank = require_rank("tensor_split", self)
    dim = axis_of(0 if dim is None else sh._get_const(dim, "i", "dim"), rank)
    size = static_dim("tensor_split", self, dim)
    spec = sh.const(indices_or_sections)
    if spec is sh.UNKNOWN:
        sh.value_error("tensor_split: the sections or indices must be known at export time", indices_or_sections)
    if isinstance(spec, torch.Tensor):
        spec = spec.tolist()
    if isinstance(spec, int):
        base, extra = divmod(size, spec)
        sizes = [base + 1 if k < extra else base for k in range(spec)]
    else:
        bounds = [min(max(b + size if b < 0 else b, 0), size) for b in spec]
        edges = [0] + bounds + [size]
        return [onnx_ops.slice(g, self, [dim], [edges[k]], [max(edges[k], edges[k + 1])])
                for k in range(len(edges) - 1)]
    return _pieces(g, self, sizes, dim)


@symbolic("aten::unbind")
@sh.parse_args("v", "i")
def unbind(g, self, dim=0):
    """unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]"""
    rank = require_rank("unbind", self)
    dim = axis_of(dim, rank)
    if sh.is_static(self, dim):
        count = sh.sizes(self)[dim]
        if count == 1:
            return [onnx_ops.squeeze(g, self, [dim])]
        return [onnx_ops.squeeze(g, piece, [dim]) for piece in onnx_ops.split(g, self, [1] * count, dim)]
    count = _list_length_from_trace(g)
    if count is None:
        return _runtime_pieces(g, self, dim, "unbind", keepdims=False)
    return [g.op("Gather", self, g.constant(k, torch.int64), axis_i=dim) for k in range(count)]


@symbolic("aten::narrow")
def narrow(g, self, dim, start, length):
    """narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a);
    narrow.Tensor(Tensor(a) self, int dim, Tensor start, SymInt length) -> Tensor(a)"""
    rank = require_rank("narrow", self)
    dim = axis_of(sh._get_const(dim, "i", "dim"), rank)
    begin, count = sh.const(start), sh.const(length)
    if isinstance(begin, torch.Tensor):
        begin = int(begin.item())
    if isinstance(begin, int) and isinstance(count, int):
        if begin < 0:
            begin += static_dim("narrow", self, dim)
        return onnx_ops.slice(g, self, [dim], [begin], [begin + count])
    begin_v = onnx_ops.cast(g, start, torch.int64) if not isinstance(begin, int) else g.constant(begin, torch.int64)
    count_v = onnx_ops.cast(g, length, torch.int64) if not isinstance(count, int) else g.constant(count, torch.int64)
    return onnx_ops.slice(g, self, [dim], [begin_v], [g.op("Add", begin_v, count_v)])


@symbolic("prim::ConstantSplit")
def prim_constant_split(g, self, split_size_i=None, dim_i=None):
    """prim::ConstantSplit[split_size=s, dim=d](Tensor self) -> Tensor..."""
    return tuple(_split_by_size(g, self, split_size_i, dim_i))


@symbolic("aten::diff")
@sh.parse_args("v", "i", "i", "v", "v")
def diff(g, self, n=1, dim=-1, prepend=None, append=None):
    """diff(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None) -> Tensor"""
    rank = require_rank("aten::diff", self)
    axis = dim + rank if dim < 0 else dim
    parts = [p for p in (prepend, self, append) if not sh.is_none(p)]
    x = g.op("Concat", *parts, axis_i=axis) if len(parts) > 1 else self
    big = 2 ** 62
    for _ in range(n):
        later = onnx_ops.slice(g, x, [axis], [1], [big])
        earlier = onnx_ops.slice(g, x, [axis], [0], [-1])
        # torch takes the difference of bools as their exclusive or
        x = g.op("Xor", later, earlier) if x.dtype == torch.bool else g.op("Sub", later, earlier)
    return x
