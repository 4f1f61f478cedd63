"""Output dtype and shape of ONNX nodes: one table of rules keyed by op type.

``infer(node)`` fills in what the rules know and leaves the rest None. Dims are ints, symbolic
names (str) or None (unknown). Rules never guess: a dim they cannot derive is None, so a symbolic
asking ``is_static`` gets an honest answer. ``GraphContext.op`` applies them; the optimizer may too.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from . import dtypes
from .ir import Node, Value

Dim = int | str | None


def broadcast(*shapes) -> tuple | None:
    if any(s is None for s in shapes):
        return None
    rank = max(len(s) for s in shapes)
    out: list[Dim] = []
    for axis in range(rank):
        dims = [s[axis - rank + len(s)] for s in shapes if axis - rank + len(s) >= 0]
        out.append(_broadcast_dims(dims))
    return tuple(out)


def _broadcast_dims(dims) -> Dim:
    known = [d for d in dims if d != 1]
    if not known:
        return 1
    ints = {d for d in known if isinstance(d, int)}
    if ints:
        return ints.pop() if len(ints) == 1 else None
    if None in known:
        return None
    names = set(known)
    return names.pop() if len(names) == 1 else None


def _normalize_axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def _const_ints(value: Value | None):
    if value is None or not value.is_const:
        return None
    const = value.const
    if isinstance(const, torch.Tensor):
        return [int(v) for v in const.reshape(-1).tolist()]
    if isinstance(const, (list, tuple)):
        return [int(v) for v in const]
    return [int(const)]


def shape_vector(value: Value | None, read_dims: Callable[[Value], list | None] | None = None) -> list[Dim] | None:
    """The entries of a 1-D int64 shape value: ints, symbolic dim names, or None where unknown.

    Constants give ints; a Concat of pieces keeps what each piece knows, so a shape built from
    ``x.size(0)`` on a dynamic dim still names that dim. ``read_dims`` is asked first about the
    value and each piece that is not a constant: the entries it gives are taken as they are (the optimizer's LLM fusions
    give ``(source, axis)`` for a dim read off ``source``); None lets these rules answer.
    """
    if value is None:
        return None
    known = _const_ints(value)
    if known is not None:
        return list(known)
    if read_dims is not None:
        entries = read_dims(value)
        if entries is not None:
            return entries
    node = value.producer
    if node is not None and node.op_type == "Concat" and node.domain == "":
        entries: list[Dim] = []
        for part in node.inputs:
            piece = shape_vector(part, read_dims)
            if piece is None:
                return None
            entries.extend(piece)
        return entries
    if node is not None and node.op_type == "Unsqueeze" and node.inputs[0].rank == 0:
        scalar = node.inputs[0]
        return [scalar.sym] if scalar.sym is not None else [None]
    if node is not None and node.op_type == "Shape" and node.inputs[0].shape is not None \
            and node.attr("start") is None and node.attr("end") is None:
        return list(node.inputs[0].shape)
    if value.shape is not None and len(value.shape) == 1 and isinstance(value.shape[0], int):
        return [None] * value.shape[0]
    return None


def _set(node: Node, k: int, dtype, shape) -> None:
    out = node.outputs[k]
    if out.dtype is None:
        out.dtype = dtype
    if out.shape is None and shape is not None:
        out.shape = tuple(shape)


def _input(node: Node, k: int) -> Value | None:
    return node.inputs[k] if k < len(node.inputs) else None


def _same_as_input(node: Node) -> None:
    x = node.inputs[0]
    _set(node, 0, x.dtype, x.shape)


def _quantize_linear(node: Node) -> None:
    zero_point = _input(node, 2)
    _set(node, 0, zero_point.dtype if zero_point is not None else torch.uint8, node.inputs[0].shape)


def _dequantize_linear(node: Node) -> None:
    _set(node, 0, node.inputs[1].dtype, node.inputs[0].shape)


def _dft(node: Node) -> None:
    x, shape = node.inputs[0], None
    if x.shape is not None:
        axis = node.attr("axis") if len(node.inputs) < 3 else (_const_ints(node.inputs[2]) or [None])[0]
        axis = 1 if axis is None and len(node.inputs) < 3 else axis
        length = _const_ints(_input(node, 1))
        shape = list(x.shape[:-1]) + [2]
        if axis is None:
            shape = [None] * (len(shape) - 1) + [2]
        else:
            axis = _normalize_axis(axis, len(shape))
            n = length[0] if length else shape[axis]
            if node.attr("onesided") and node.attr("inverse"):  # DFT-20 IRFFT: a real signal of length n
                shape[-1] = 1
            elif node.attr("onesided"):
                n = n // 2 + 1 if isinstance(n, int) else None
            shape[axis] = n
    _set(node, 0, x.dtype, shape)


def _stft(node: Node) -> None:
    x = node.inputs[0]
    _set(node, 0, x.dtype, (x.shape[0], None, None, 2) if x.shape is not None else None)


def _elementwise(node: Node) -> None:
    values = [v for v in node.inputs if v is not None]
    _set(node, 0, values[0].dtype, broadcast(*(v.shape for v in values)))


def _comparison(node: Node) -> None:
    _set(node, 0, torch.bool, broadcast(node.inputs[0].shape, node.inputs[1].shape))


def _where(node: Node) -> None:
    _set(node, 0, node.inputs[1].dtype, broadcast(*(v.shape for v in node.inputs)))


def _cast(node: Node) -> None:
    _set(node, 0, dtypes.ONNX_TO_TORCH.get(node.attr("to")), node.inputs[0].shape)


def _cast_like(node: Node) -> None:
    _set(node, 0, node.inputs[1].dtype, node.inputs[0].shape)


def _constant(node: Node) -> None:
    tensor = node.attr("value")
    if isinstance(tensor, torch.Tensor):
        _set(node, 0, tensor.dtype, tuple(tensor.shape))


def _shape(node: Node) -> None:
    x = node.inputs[0]
    if x.shape is None:
        _set(node, 0, torch.int64, None)
        return
    rank = len(x.shape)
    start = _normalize_axis(node.attr("start", 0), rank)
    end = node.attr("end")
    end = rank if end is None else _normalize_axis(end, rank)
    _set(node, 0, torch.int64, (max(0, min(end, rank) - max(start, 0)),))


def _size(node: Node) -> None:
    _set(node, 0, torch.int64, ())


def _reshape(node: Node) -> None:
    x, target = node.inputs[0], shape_vector(node.inputs[1])
    if target is None:
        _set(node, 0, x.dtype, None)
        return
    allowzero = node.attr("allowzero", 0)
    dims: list[Dim] = []
    for i, d in enumerate(target):
        if d == 0 and not allowzero:
            dims.append(x.shape[i] if x.shape is not None and i < len(x.shape) else None)
        else:
            dims.append(d)
    if -1 in dims:
        dims[dims.index(-1)] = _inferred_dim(x.shape, [d for d in dims if d != -1])
    _set(node, 0, x.dtype, dims)


def _inferred_dim(source, known) -> Dim:
    """The -1 entry of a reshape: the element count divided by the known entries; symbolic dims
    that appear on both sides cancel."""
    if source is None or None in known:
        return None
    rest = [d for d in source]
    for d in known:
        if isinstance(d, str) and d in rest:
            rest.remove(d)
        elif isinstance(d, str):
            return None
    total = _numel(rest)
    divisor = _numel([d for d in known if isinstance(d, int)])
    return total // divisor if isinstance(total, int) and divisor else None


def _numel(shape):
    if shape is None or any(not isinstance(d, int) for d in shape):
        return None
    return math.prod(shape)


def _transpose(node: Node) -> None:
    x = node.inputs[0]
    if x.shape is None:
        _set(node, 0, x.dtype, None)
        return
    perm = node.attr("perm") or list(reversed(range(len(x.shape))))
    _set(node, 0, x.dtype, [x.shape[p] for p in perm])


def _flatten(node: Node) -> None:
    x = node.inputs[0]
    if x.shape is None:
        _set(node, 0, x.dtype, None)
        return
    axis = _normalize_axis(node.attr("axis", 1), len(x.shape))
    _set(node, 0, x.dtype, (_numel(x.shape[:axis]), _numel(x.shape[axis:])))


def _axes(node: Node, attr_opset_limit: int):
    """Axes from the attribute (older opsets) or the second input (newer ones)."""
    axes = node.attr("axes")
    if axes is None and len(node.inputs) > 1:
        axes = _const_ints(node.inputs[1])
    return axes


def _unsqueeze(node: Node) -> None:
    x, axes = node.inputs[0], _axes(node, 13)
    if x.shape is None or axes is None:
        _set(node, 0, x.dtype, None)
        return
    rank = len(x.shape) + len(axes)
    axes = sorted(_normalize_axis(a, rank) for a in axes)
    dims = list(x.shape)
    for a in axes:
        dims.insert(a, 1)
    _set(node, 0, x.dtype, dims)


def _squeeze(node: Node) -> None:
    x, axes = node.inputs[0], _axes(node, 13)
    if x.shape is None:
        _set(node, 0, x.dtype, None)
        return
    if axes is None:
        if any(not isinstance(d, int) for d in x.shape):
            _set(node, 0, x.dtype, None)
            return
        _set(node, 0, x.dtype, [d for d in x.shape if d != 1])
        return
    drop = {_normalize_axis(a, len(x.shape)) for a in axes}
    _set(node, 0, x.dtype, [d for i, d in enumerate(x.shape) if i not in drop])


def _concat(node: Node) -> None:
    values = [v for v in node.inputs if v is not None]
    shapes = [v.shape for v in values]
    if any(s is None for s in shapes):
        _set(node, 0, values[0].dtype, None)
        return
    axis = _normalize_axis(node.attr("axis"), len(shapes[0]))
    dims = list(shapes[0])
    sizes = [s[axis] for s in shapes]
    dims[axis] = sum(sizes) if all(isinstance(d, int) for d in sizes) else None
    for i in range(len(dims)):
        if i != axis:
            dims[i] = _broadcast_dims([s[i] for s in shapes]) if all(s[i] is not None for s in shapes) else dims[i]
    _set(node, 0, values[0].dtype, dims)


def _gather(node: Node) -> None:
    x, indices = node.inputs
    if x.shape is None or indices.shape is None:
        _set(node, 0, x.dtype, None)
        return
    axis = _normalize_axis(node.attr("axis", 0), len(x.shape))
    _set(node, 0, x.dtype, list(x.shape[:axis]) + list(indices.shape) + list(x.shape[axis + 1:]))


def _matmul(node: Node) -> None:
    a, b = node.inputs[:2]
    if a.shape is None or b.shape is None:
        _set(node, 0, a.dtype, None)
        return
    sa, sb = list(a.shape), list(b.shape)
    if len(sa) == 1 and len(sb) == 1:
        _set(node, 0, a.dtype, ())
        return
    squeeze_front = len(sa) == 1
    squeeze_back = len(sb) == 1
    if squeeze_front:
        sa = [1] + sa
    if squeeze_back:
        sb = sb + [1]
    batch = broadcast(tuple(sa[:-2]), tuple(sb[:-2]))
    dims = list(batch) + [sa[-2], sb[-1]]
    if squeeze_front:
        dims.pop(-2)
    if squeeze_back:
        dims.pop(-1)
    _set(node, 0, a.dtype, dims)


def _gemm(node: Node) -> None:
    a, b = node.inputs[:2]
    if a.shape is None or b.shape is None:
        _set(node, 0, a.dtype, None)
        return
    rows = a.shape[1] if node.attr("transA", 0) else a.shape[0]
    cols = b.shape[0] if node.attr("transB", 0) else b.shape[1]
    _set(node, 0, a.dtype, (rows, cols))


def _window_dims(node: Node, spatial, kernel, out_channels=None) -> list[Dim]:
    strides = node.attr("strides") or [1] * len(kernel)
    dilations = node.attr("dilations") or [1] * len(kernel)
    pads = node.attr("pads") or [0] * (2 * len(kernel))
    ceil = node.attr("ceil_mode", 0)
    auto_pad = node.attr("auto_pad", "NOTSET")
    dims: list[Dim] = []
    for i, size in enumerate(spatial):
        if not isinstance(size, int):
            dims.append(None)
            continue
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            dims.append(-(-size // strides[i]))
            continue
        effective = dilations[i] * (kernel[i] - 1) + 1
        span = size + pads[i] + pads[i + len(kernel)] - effective
        out = (-(-span // strides[i]) if ceil else span // strides[i]) + 1
        if ceil and (out - 1) * strides[i] >= size + pads[i]:
            out -= 1
        dims.append(out)
    return dims


def _conv(node: Node) -> None:
    x, w = node.inputs[:2]
    if x.shape is None or w.shape is None:
        _set(node, 0, x.dtype, None)
        return
    kernel = node.attr("kernel_shape") or list(w.shape[2:])
    _set(node, 0, x.dtype, [x.shape[0], w.shape[0]] + _window_dims(node, x.shape[2:], kernel))


def _conv_transpose(node: Node) -> None:
    x, w = node.inputs[:2]
    if x.shape is None or w.shape is None:
        _set(node, 0, x.dtype, None)
        return
    kernel = node.attr("kernel_shape") or list(w.shape[2:])
    n = len(kernel)
    strides = node.attr("strides") or [1] * n
    dilations = node.attr("dilations") or [1] * n
    pads = node.attr("pads") or [0] * (2 * n)
    extra = node.attr("output_padding") or [0] * n
    output_shape = node.attr("output_shape")
    group = node.attr("group", 1)
    channels = w.shape[1] * group if isinstance(w.shape[1], int) else None
    dims: list[Dim] = []
    for i, size in enumerate(x.shape[2:]):
        if output_shape is not None:
            dims.append(output_shape[i])
        elif isinstance(size, int):
            dims.append(strides[i] * (size - 1) + extra[i] + (kernel[i] - 1) * dilations[i] + 1 - pads[i] - pads[i + n])
        else:
            dims.append(None)
    _set(node, 0, x.dtype, [x.shape[0], channels] + dims)


def _pool(node: Node) -> None:
    x = node.inputs[0]
    if x.shape is None:
        _set(node, 0, x.dtype, None)
        return
    shape = list(x.shape[:2]) + _window_dims(node, x.shape[2:], node.attr("kernel_shape"))
    _set(node, 0, x.dtype, shape)
    if len(node.outputs) > 1:
        _set(node, 1, torch.int64, shape)


def _global_pool(node: Node) -> None:
    x = node.inputs[0]
    _set(node, 0, x.dtype, None if x.shape is None else list(x.shape[:2]) + [1] * (len(x.shape) - 2))


def _reduce(node: Node) -> None:
    x = node.inputs[0]
    axes = _axes(node, 18)
    keepdims = node.attr("keepdims", 1)
    if x.shape is None:
        _set(node, 0, x.dtype, None)
        return
    if axes is None:
        if len(node.inputs) > 1 and node.inputs[1] is not None:  # runtime axes
            _set(node, 0, x.dtype, None)
            return
        if node.attr("noop_with_empty_axes", 0):
            _set(node, 0, x.dtype, x.shape)
            return
        axes = list(range(len(x.shape)))
    drop = {_normalize_axis(a, len(x.shape)) for a in axes}
    if keepdims:
        dims = [1 if i in drop else d for i, d in enumerate(x.shape)]
    else:
        dims = [d for i, d in enumerate(x.shape) if i not in drop]
    _set(node, 0, x.dtype, dims)


def _arg_reduce(node: Node) -> None:
    x = node.inputs[0]
    if x.shape is None:
        _set(node, 0, torch.int64, None)
        return
    axis = _normalize_axis(node.attr("axis", 0), len(x.shape))
    keepdims = node.attr("keepdims", 1)
    dims = [1 if i == axis else d for i, d in enumerate(x.shape)] if keepdims else \
        [d for i, d in enumerate(x.shape) if i != axis]
    _set(node, 0, torch.int64, dims)


def _batch_norm(node: Node) -> None:
    _same_as_input(node)
    for k in range(1, len(node.outputs)):
        scale = node.inputs[1]
        _set(node, k, scale.dtype, scale.shape)


def _depth_to_space(node: Node) -> None:
    x, b = node.inputs[0], node.attr("blocksize")
    if x.shape is None or len(x.shape) != 4:
        _set(node, 0, x.dtype, None)
        return
    n, c, h, w = x.shape
    scale = lambda d, f: d * f if isinstance(d, int) else None  # noqa: E731
    channels = c // (b * b) if isinstance(c, int) else None
    _set(node, 0, x.dtype, (n, channels, scale(h, b), scale(w, b)))


def _space_to_depth(node: Node) -> None:
    x, b = node.inputs[0], node.attr("blocksize")
    if x.shape is None or len(x.shape) != 4:
        _set(node, 0, x.dtype, None)
        return
    n, c, h, w = x.shape
    shrink = lambda d: d // b if isinstance(d, int) else None  # noqa: E731
    _set(node, 0, x.dtype, (n, c * b * b if isinstance(c, int) else None, shrink(h), shrink(w)))


def _slice(node: Node) -> None:
    x = node.inputs[0]
    if x.shape is None:
        _set(node, 0, x.dtype, None)
        return
    if node.attr("starts") is not None:  # opset < 10: attributes
        starts, ends, axes, steps = node.attr("starts"), node.attr("ends"), node.attr("axes"), None
    else:
        starts, ends = _const_ints(_input(node, 1)), _const_ints(_input(node, 2))
        axes, steps = _const_ints(_input(node, 3)), _const_ints(_input(node, 4))
    has_axes, has_steps = (len(node.inputs) > k and node.inputs[k] is not None for k in (3, 4))
    bounds_known = starts is not None and ends is not None
    if (has_axes and axes is None) or (has_steps and steps is None) or (not bounds_known and axes is None):
        _set(node, 0, x.dtype, (None,) * len(x.shape))
        return
    if not bounds_known:  # runtime bounds on known axes: the other axes keep their sizes
        sliced = {_normalize_axis(a, len(x.shape)) for a in axes}
        _set(node, 0, x.dtype, tuple(None if k in sliced else d for k, d in enumerate(x.shape)))
        return
    axes = axes if axes is not None else list(range(len(starts)))
    steps = steps if steps is not None else [1] * len(starts)
    dims = list(x.shape)
    for start, end, axis, step in zip(starts, ends, axes, steps):
        axis = _normalize_axis(axis, len(dims))
        size = dims[axis]
        if not isinstance(size, int):
            dims[axis] = None
            continue
        dims[axis] = len(slice_range(start, end, step, size))
    _set(node, 0, x.dtype, dims)


def slice_range(start: int, end: int, step: int, size: int) -> range:
    """The positions ONNX Slice takes along an axis of ``size``. Not Python's for negative steps: a
    start that lands before the first element is clamped to it (``x[-2:-2:-1]`` of 1 element keeps
    it; Python keeps nothing)."""
    start, end = start + size if start < 0 else start, end + size if end < 0 else end
    if step > 0:
        return range(min(max(start, 0), size), min(max(end, 0), size), step)
    if size == 0:
        return range(0)
    return range(min(max(start, 0), size - 1), min(max(end, -1), size - 1), step)


def _split(node: Node) -> None:
    x = node.inputs[0]
    if x.shape is None:
        return
    axis = _normalize_axis(node.attr("axis", 0), len(x.shape))
    sizes = node.attr("split")
    if sizes is None and len(node.inputs) > 1:
        sizes = _const_ints(node.inputs[1])
    if sizes is None and isinstance(x.shape[axis], int):
        n = len(node.outputs)
        chunk = -(-x.shape[axis] // n)
        sizes = [min(chunk, x.shape[axis] - k * chunk) for k in range(n)]
    for k, out in enumerate(node.outputs):
        dims = list(x.shape)
        dims[axis] = sizes[k] if sizes is not None else None
        _set(node, k, x.dtype, dims)


def _expand(node: Node) -> None:
    x, target = node.inputs[0], shape_vector(node.inputs[1])
    if x.shape is None or target is None:
        _set(node, 0, x.dtype, None)
        return
    _set(node, 0, x.dtype, broadcast(x.shape, tuple(target)))


def _tile(node: Node) -> None:
    x, repeats = node.inputs[0], _const_ints(node.inputs[1])
    if x.shape is None or repeats is None:
        _set(node, 0, x.dtype, None if x.shape is None else (None,) * len(x.shape))
        return
    _set(node, 0, x.dtype, [d * r if isinstance(d, int) else None for d, r in zip(x.shape, repeats)])


def _constant_of_shape(node: Node) -> None:
    value = node.attr("value")
    dtype = value.dtype if isinstance(value, torch.Tensor) else torch.float32
    _set(node, 0, dtype, shape_vector(node.inputs[0]))


def _range(node: Node) -> None:
    _set(node, 0, node.inputs[0].dtype, (None,))


def _topk(node: Node) -> None:
    x = node.inputs[0]
    k = _const_ints(node.inputs[1]) if len(node.inputs) > 1 else [node.attr("k")]
    if x.shape is None:
        return
    axis = _normalize_axis(node.attr("axis", -1), len(x.shape))
    dims = list(x.shape)
    dims[axis] = k[0] if k else None
    _set(node, 0, x.dtype, dims)
    _set(node, 1, torch.int64, dims)


def _recurrent(node: Node) -> None:
    """RNN, GRU, LSTM (layout 0): Y (seq, dirs, batch, hidden); Y_h, Y_c (dirs, batch, hidden)."""
    x = node.inputs[0]
    dirs = 2 if node.attr("direction") == "bidirectional" else 1
    hidden = node.attr("hidden_size")
    seq, batch = (x.shape[0], x.shape[1]) if x.shape is not None and len(x.shape) == 3 else (None, None)
    _set(node, 0, x.dtype, (seq, dirs, batch, hidden))
    for k in range(1, len(node.outputs)):
        _set(node, k, x.dtype, (dirs, batch, hidden))


def _non_zero(node: Node) -> None:
    x = node.inputs[0]
    _set(node, 0, torch.int64, None if x.shape is None else (len(x.shape), None))


def _unique(node: Node) -> None:
    x, axis = node.inputs[0], node.attr("axis")
    shape = None
    if axis is None:
        shape = (None,)
    elif x.shape is not None:
        shape = tuple(None if i == _normalize_axis(axis, len(x.shape)) else d for i, d in enumerate(x.shape))
    _set(node, 0, x.dtype, shape)
    for k in range(1, len(node.outputs)):
        _set(node, k, torch.int64, (None,))


def _compress(node: Node) -> None:
    """The kept count depends on the data: that dim is unknown even when the input is static."""
    x, axis = node.inputs[0], node.attr("axis")
    if axis is None or x.shape is None:
        _set(node, 0, x.dtype, (None,) if axis is None else None)
        return
    axis = _normalize_axis(axis, len(x.shape))
    _set(node, 0, x.dtype, tuple(None if i == axis else d for i, d in enumerate(x.shape)))


def _one_hot(node: Node) -> None:
    indices, depth, values = node.inputs
    if indices.shape is None:
        _set(node, 0, values.dtype, None)
        return
    dims = list(indices.shape)
    count = _const_ints(depth)
    dims.insert(_normalize_axis(node.attr("axis", -1), len(dims) + 1), count[0] if count else None)
    _set(node, 0, values.dtype, dims)


def _pad(node: Node) -> None:
    x = node.inputs[0]
    pads = node.attr("pads")
    if pads is None and len(node.inputs) > 1:
        pads = _const_ints(node.inputs[1])
    if x.shape is None or pads is None or (len(node.inputs) > 3 and node.inputs[3] is not None):
        _set(node, 0, x.dtype, None if x.shape is None else (None,) * len(x.shape))
        return
    n = len(x.shape)
    _set(node, 0, x.dtype, [d + pads[i] + pads[i + n] if isinstance(d, int) else None for i, d in enumerate(x.shape)])


def _det(node: Node) -> None:
    x = node.inputs[0]
    _set(node, 0, x.dtype, None if x.shape is None else x.shape[:-2])


def _fixed(dtype):
    return lambda node: _set(node, 0, dtype, node.inputs[0].shape)


UNARY_SAME = (
    "Abs Neg Reciprocal Sqrt Exp Log Sin Cos Tan Asin Acos Atan Sinh Cosh Asinh Acosh Atanh Erf Sigmoid "
    "Tanh Relu LeakyRelu Elu Selu Celu Softplus Softsign HardSigmoid HardSwish ThresholdedRelu Floor Ceil "
    "Round Sign Identity Dropout Softmax LogSoftmax Hardmax Clip PRelu Gelu Mish Not BitwiseNot "
    "LRN InstanceNormalization LayerNormalization GroupNormalization MeanVarianceNormalization CumSum "
    "Trilu LpNormalization Shrink"
).split()
BINARY_BROADCAST = "Add Sub Mul Div Pow Max Min Mean Sum Mod BitShift And Or Xor BitwiseAnd BitwiseOr BitwiseXor".split()
COMPARISONS = "Equal Less LessOrEqual Greater GreaterOrEqual".split()
REDUCTIONS = (
    "ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceL1 ReduceL2 ReduceLogSum ReduceLogSumExp "
    "ReduceSumSquare"
).split()

def _resize(node: Node) -> None:
    """Resize/Upsample: sizes when constant, else floor(dim * scale) for static dims."""
    x = node.inputs[0]
    if x.shape is None:
        _set(node, 0, x.dtype, None)
        return
    scales = node.attr("scales")
    if node.op_type == "Resize":
        sizes = _const_ints(_input(node, 3))
        if sizes is not None and node.attr("axes") is None:
            _set(node, 0, x.dtype, sizes)
            return
        scale_value = _input(node, 2) if len(node.inputs) > 2 else _input(node, 1)
    else:
        scale_value = _input(node, 1)
    if scales is None and scale_value is not None and scale_value.is_const:
        const = scale_value.const
        scales = const.reshape(-1).tolist() if isinstance(const, torch.Tensor) else list(const)
    if scales is None or len(scales) != len(x.shape) or node.attr("axes") is not None:
        _set(node, 0, x.dtype, (None,) * len(x.shape))
        return
    # float32 arithmetic, as onnxruntime computes the output size
    _set(node, 0, x.dtype, [int(torch.tensor(s, dtype=torch.float32).mul(d).item()) if isinstance(d, int) else None
                            for d, s in zip(x.shape, scales)])


def _col2im(node: Node) -> None:
    x, image, block = node.inputs[0], _const_ints(node.inputs[1]), _const_ints(node.inputs[2])
    if x.shape is None or image is None or block is None:
        _set(node, 0, x.dtype, None)
        return
    channels = x.shape[1] // math.prod(block) if isinstance(x.shape[1], int) else None
    _set(node, 0, x.dtype, [x.shape[0], channels, *image])


def _grid_sample(node: Node) -> None:
    x, grid = node.inputs[0], node.inputs[1]
    if x.shape is None or grid.shape is None:
        _set(node, 0, x.dtype, None)
        return
    _set(node, 0, x.dtype, [x.shape[0], x.shape[1], *grid.shape[1:-1]])


def _affine_grid(node: Node) -> None:
    theta, size = node.inputs[0], _const_ints(node.inputs[1])
    _set(node, 0, theta.dtype, None if size is None else [size[0], *size[2:], len(size) - 2])


SHAPE_RULES: dict[str, Callable[[Node], None]] = {
    **{op: _same_as_input for op in UNARY_SAME},
    **{op: _elementwise for op in BINARY_BROADCAST},
    **{op: _comparison for op in COMPARISONS},
    **{op: _reduce for op in REDUCTIONS},
    "Det": _det,
    "IsNaN": _fixed(torch.bool),
    "IsInf": _fixed(torch.bool),
    "Where": _where,
    "Cast": _cast,
    "CastLike": _cast_like,
    "Constant": _constant,
    "Shape": _shape,
    "Size": _size,
    "Reshape": _reshape,
    "Transpose": _transpose,
    "Flatten": _flatten,
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Concat": _concat,
    "Gather": _gather,
    "MatMul": _matmul,
    "Gemm": _gemm,
    "Conv": _conv,
    "ConvTranspose": _conv_transpose,
    "MaxPool": _pool,
    "AveragePool": _pool,
    "LpPool": _pool,
    "GlobalAveragePool": _global_pool,
    "GlobalMaxPool": _global_pool,
    "ArgMax": _arg_reduce,
    "ArgMin": _arg_reduce,
    "BatchNormalization": _batch_norm,
    "DepthToSpace": _depth_to_space,
    "SpaceToDepth": _space_to_depth,
    "Slice": _slice,
    "Split": _split,
    "Expand": _expand,
    "Tile": _tile,
    "ConstantOfShape": _constant_of_shape,
    "Range": _range,
    "TopK": _topk,
    "Pad": _pad,
    "RNN": _recurrent,
    "GRU": _recurrent,
    "LSTM": _recurrent,
    "NonZero": _non_zero,
    "Unique": _unique,
    "Compress": _compress,
    "OneHot": _one_hot,
    "QuantizeLinear": _quantize_linear,
    "DFT": _dft,
    "STFT": _stft,
    "DequantizeLinear": _dequantize_linear,
    "Scatter": _same_as_input,
    "ScatterElements": _same_as_input,
    "ScatterND": _same_as_input,
    "GatherElements": lambda node: _set(node, 0, node.inputs[0].dtype, node.inputs[1].shape),
    "Resize": _resize,
    "Upsample": _resize,
    "Col2Im": _col2im,
    "GridSample": _grid_sample,
    "AffineGrid": _affine_grid,
}


def infer(node: Node) -> None:
    rule = SHAPE_RULES.get(node.op_type) if node.domain == "" else None
    if rule is None:
        return
    if any(v is not None and v.shape is None and v.dtype is None for v in node.inputs[:1]):
        return
    rule(node)
