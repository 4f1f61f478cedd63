"""The legacy exporter's ``symbolic_helper`` names that emit ops: its schema-move helpers (Slice,
Squeeze/Unsqueeze, ReduceSum, Reshape), its shared lowerings (sort, topk, reductions, var_mean,
batch norm, interpolation scales, ...) and the symbolic factories (``_reduce_op_symbolic_helper``,
``_interpolate_helper``). ``symbolic_helper`` re-exports them for custom symbolics written for the
legacy exporter.

Each does what legacy's does, on this builder's values and ``g``, in the ONNX the target opset
has: schema moves go through ``onnx_ops`` (the builder's one place for them), and where legacy
calls its own conversion of an aten op (``symbolic_opset9.select``), ours calls our built-in
conversion of that op at ``g.opset``.
"""

from __future__ import annotations

import torch

from torchscript_onnx.builder import dtypes, onnx_ops
from torchscript_onnx.builder.dtypes import JitScalarType, TensorProtoDataType
from torchscript_onnx.builder.errors import SymbolicValueError, needs_opset
from torchscript_onnx.builder.ir import Value

from . import registry
from . import symbolic_helper as sh
from .legacy_helpers import (_dtype_of, _is_fp, _onnx_opset_unsupported, _overload_by_arg_count,
                             _try_get_scalar_type, as_value, converting_context, quantized_args, warn)

__all__ = [
    "_arange_cast_helper", "_arange_helper", "_argmin_argmax_helper", "_avgpool_helper", "_batchnorm_helper",
    "_embedding_bag_helper", "_flatten_helper", "_get_interpolate_attributes", "_handle_reduce_dim_none",
    "_index_fill_reshape_helper", "_interpolate_get_scales", "_interpolate_get_scales_and_mode",
    "_interpolate_get_scales_if_available", "_interpolate_helper", "_interpolate_size_to_scales",
    "_interpolate_warning", "_linalg_vector_norm_helper", "_lt_helper", "_max_helper",
    "_maybe_cast_reduce_op_input", "_min_helper", "_numel_helper", "_reduce_op_symbolic_helper",
    "_reduce_with_dtype_helper", "_reducesum_helper", "_repeat_interleave_single_value_repeat_helper",
    "_repeat_interleave_split_helper", "_reshape_helper", "_scatter_helper", "_select_helper", "_size_helper",
    "_slice_helper", "_sort_helper", "_squeeze_helper", "_topk_helper", "_unbind_helper", "_unsqueeze_helper",
    "_var_mean_helper",
]

INT64_MAX = onnx_ops.INT64_MAX

# The conditions legacy's helpers raise -> the lowest opset that meets each.
OPSET = registry.declare_opset_requirements({}, unlisted={"Slice with bounds known only at runtime": 10})


def _builtin(g, op: str):
    """Our built-in conversion of ``op`` at ``g.opset`` (where legacy calls its own)."""
    fn = registry.builtin_lookup(op, g.opset)
    if fn is not None:
        return fn
    lowest = registry.lowest_supporting_opset(op)
    if lowest is not None and lowest > g.opset:
        needs_opset(lowest, op)
    raise SymbolicValueError(f"{op} has no conversion at opset {g.opset}")


def _int(value) -> int:
    return int(sh.const(value))


# ---------------------------------------------------------------------------------------------
# Schema moves: Slice (bounds as inputs at 10), Squeeze/Unsqueeze/ReduceSum (axes as inputs at 13),
# Reshape (allowzero at 14)


def _known_ints(bounds) -> list[int] | Value | None:
    """Slice bounds as a list of ints when known (a list, a tensor, a constant), else the value."""
    if bounds is None or (sh.is_value(bounds) and bounds.is_none):
        return None
    known = sh._maybe_get_const(bounds, "is") if sh.is_value(bounds) else bounds
    if isinstance(known, torch.Tensor):
        known = known.reshape(-1).tolist()
    if isinstance(known, (list, tuple)) and all(isinstance(sh.const(b, None), int) for b in known):
        return [_int(b) for b in known]
    return bounds


def _slice_input(g, bounds, default: int) -> Value:
    """One Slice input (1-D int64) from ints, a 0-d or 1-D value, or None (``default``)."""
    if bounds is None:
        return g.constant([default], torch.int64)
    if isinstance(bounds, list):
        return g.constant(bounds, torch.int64)
    if bounds.rank == 0:
        return onnx_ops.unsqueeze(g, bounds, [0])
    if bounds.rank == 1:
        return bounds
    raise SymbolicValueError(f"Slice bounds must be 0-d or 1-D, not of rank {bounds.rank}", bounds)


def _slice_helper(g, input, axes, starts, ends, steps=None):
    """``input[starts:ends:steps]`` along ``axes``; bounds are ints, tensors or (from opset 10) values."""
    axes, starts, ends = _known_ints(axes), _known_ints(starts), _known_ints(ends)
    steps = _known_ints(steps)
    if starts == [0] and ends == [INT64_MAX] and steps in (None, [1]):
        return input
    if all(isinstance(b, list) for b in (axes, starts, ends)) and (steps is None or isinstance(steps, list)):
        if len(starts) != len(ends):
            raise SymbolicValueError(f"Slice: {len(starts)} starts but {len(ends)} ends", input)
        return onnx_ops.slice(g, input, axes, starts, ends, steps)
    OPSET.require(g, "Slice with bounds known only at runtime", input)
    inputs = [_slice_input(g, starts, 0), _slice_input(g, ends, INT64_MAX), _slice_input(g, axes, 0)]
    if steps is not None:
        inputs.append(_slice_input(g, steps, 1))
    return g.op("Slice", input, *inputs)


def _unsqueeze_helper(g, input, axes_i):
    """Unsqueeze at ``axes_i`` (ints, or one 1-D value of axes known only at runtime: opset 13)."""
    if len(axes_i) == 0:
        return input
    if sh._is_constant(axes_i[0]):
        return onnx_ops.unsqueeze(g, input, [_int(a) for a in axes_i])
    return onnx_ops.unsqueeze(g, input, axes_i[0])


def _squeeze_helper(g, input, axes_i):
    """Squeeze at ``axes_i`` (ints, or one 0-d or 1-D value of axes known only at runtime: opset 13)."""
    if len(axes_i) == 0:
        raise SymbolicValueError("_squeeze_helper: no axes given", input)
    if sh._is_constant(axes_i[0]):
        return onnx_ops.squeeze(g, input, [_int(a) for a in axes_i])
    axes = axes_i[0]
    if axes.rank is None or axes.rank > 1:
        raise SymbolicValueError("Squeeze takes its axes as a 0-d or 1-D value", axes)
    return onnx_ops.squeeze(g, input, axes)


def _reducesum_helper(g, input, axes_i=None, keepdims_i=1, noop_with_empty_axes_i=0):
    """ReduceSum over ``axes_i`` (ints or, from opset 13, a value); none: all axes, or none at all
    with ``noop_with_empty_axes_i=1`` (opset 13)."""
    keepdims = sh._maybe_get_const(keepdims_i, "i")
    axes = _known_ints(axes_i)
    if not axes and noop_with_empty_axes_i and onnx_ops.has_attribute(g, "ReduceSum", "noop_with_empty_axes"):
        return g.op("ReduceSum", input, keepdims_i=keepdims, noop_with_empty_axes_i=noop_with_empty_axes_i)
    return onnx_ops.reduce(g, "ReduceSum", input, axes or None, bool(keepdims))


def _reshape_helper(g, input, shape, allowzero=0):
    """Reshape to ``shape`` (ints or a value); ``allowzero=1`` (a 0 is a 0, not "keep": opset 14)."""
    shape = sh._maybe_get_const(shape, "is")
    if not sh.is_value(shape):
        shape = g.constant(list(shape), torch.int64)
    if not onnx_ops.has_attribute(g, "Reshape", "allowzero"):
        if allowzero == 1:
            _onnx_opset_unsupported("Reshape with allowzero=1", g.opset, 14, input)
        return g.op("Reshape", input, shape)
    return g.op("Reshape", input, shape, allowzero_i=allowzero)


# ---------------------------------------------------------------------------------------------
# Sizes, selection, scatter, splits


def _size_helper(g, self, dim):
    """``self.size(dim)`` as a 0-d int64 (a constant where the dim is static)."""
    axis = sh._maybe_get_const(dim, "i")
    if not sh.is_value(axis):
        return onnx_ops.size(g, self, axis)
    return g.op("Gather", g.op("Shape", self), dim, axis_i=0)


def _numel_helper(g, self):
    dims = sh.static_sizes(self)
    if dims is not None:
        return g.constant(int(torch.tensor(dims, dtype=torch.int64).prod()), torch.int64)
    return onnx_ops.reduce(g, "ReduceProd", g.op("Shape", self), None, False)


def _select_helper(g, self, dim, index, apply_reshape=True):
    """Gather along ``dim`` keeping it: a number or 0-d ``index`` selects a slice of size 1."""
    index_const = sh._maybe_get_scalar(index)
    if not sh.is_value(index_const):
        index = g.constant([int(index_const)], torch.int64)
    elif apply_reshape and sh._get_tensor_rank(index) == 0:
        index = _reshape_helper(g, index, [1])
    if _dtype_of(index) not in (torch.int64, torch.int32):
        index = g.op("Cast", index, to_i=TensorProtoDataType.INT64)
    return g.op("Gather", self, index, axis_i=sh._maybe_get_const(dim, "i"))


def _index_fill_reshape_helper(g, self, dim, index):
    """(shape, index) for index_fill/index_copy: the 1-D ``index`` along ``dim``, expanded to
    ``self``'s shape with ``len(index)`` at ``dim``."""
    rank = sh._get_tensor_rank(self)
    if rank is None:
        return sh._unimplemented("index_fill", "input rank not accessible")
    axis = sh._parse_arg(dim, "i")
    axis = axis + rank if axis < 0 else axis
    unsqueezed = _unsqueeze_helper(g, index, [k for k in range(rank) if k != axis])
    shape = g.op("Shape", self)
    expanded_shape = g.op("Concat", onnx_ops.slice(g, shape, [0], [0], [axis]), g.op("Shape", index),
                          onnx_ops.slice(g, shape, [0], [axis + 1], [INT64_MAX]), axis_i=0)
    return expanded_shape, g.op("Expand", unsqueezed, expanded_shape)


def _scatter_helper(g, self, dim, index, src):
    return _builtin(g, "aten::scatter")(g, self, dim, index, src)


def _unbind_helper(g, self, dim, _outputs):
    return _builtin(g, "aten::unbind")(g, self, dim)


def _repeat_interleave_split_helper(g, self, reps, dim):
    """``self`` split along ``dim`` into ``reps`` pieces of size 1 (a list)."""
    return list(onnx_ops.split(g, self, [1] * reps, sh._maybe_get_const(dim, "i")))


def _repeat_interleave_single_value_repeat_helper(g, self, repeats, dim):
    return _builtin(g, "aten::repeat_interleave")(g, self, repeats, dim)


def _flatten_helper(g, input, start_dim, end_dim, dim):
    """``input.flatten(start_dim, end_dim)``; ``dim`` (legacy passes the rank) is not needed here."""
    return _builtin(g, "aten::flatten")(g, input, start_dim, end_dim)


def _arange_helper(g, *args):
    return _builtin(g, "aten::arange")(g, *args)


def _arange_cast_helper(g, end, start=None, step=None, dtype=None):
    """(scalar type, end, start, step) of an arange: ``dtype`` (a ScalarType index) if given, else
    int64 when every bound is, else torch's default dtype; the given bounds cast to it."""
    if dtype is None or (sh.is_value(dtype) and dtype.is_none):
        integral = all(_try_get_scalar_type(b) in (None, JitScalarType.INT64) for b in (start, end, step))
        scalar_type = JitScalarType.INT64 if integral else JitScalarType.from_dtype(torch.get_default_dtype())
    else:
        scalar_type = JitScalarType.from_dtype(dtypes.from_scalar_type(sh._get_const(dtype, "i", "dtype")))

    def cast(bound):
        return g.op("Cast", as_value(g, bound), to_i=scalar_type.onnx_type()) if bound else None

    return scalar_type, cast(end), cast(start), cast(step)


def _lt_helper(g, input, other):
    return _builtin(g, "aten::lt")(g, input, other)


def _sort_helper(g, input, dim, descending=True, out=None):
    if out is not None:
        sh._unimplemented("Sort", "Out parameter is not supported")
    return _builtin(g, "aten::sort")(g, input, dim, descending)


def _topk_helper(g, input, k, dim, largest=True, sorted=False, out=None):  # noqa: A002 - legacy's name
    if out is not None:
        sh._unimplemented("TopK", "Out parameter is not supported")
    return _builtin(g, "aten::topk")(g, input, k, dim, largest, sorted)


def _embedding_bag_helper(g, embedding_matrix, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
                          include_last_offset, padding_idx):
    return _builtin(g, "aten::embedding_bag")(g, embedding_matrix, indices, offsets, scale_grad_by_freq, mode, sparse,
                                              per_sample_weights, include_last_offset, padding_idx)


def _avgpool_helper(tuple_fn, padding, kernel_size, stride, divisor_override, name) -> tuple[int, ...]:
    """The padding as a tuple (``tuple_fn``: torch's ``_pair`` etc.); a divisor_override is refused."""
    if divisor_override is not None and not sh.is_none(divisor_override):
        sh._unimplemented(name, "divisor_override")
    return tuple(tuple_fn(padding))


def _batchnorm_helper(g, input, weight, bias, running_mean, running_var):
    """(weight, bias, running_mean, running_var) for BatchNormalization: a missing weight is ones, a
    missing bias zeros, missing running statistics those of this batch (what torch uses then)."""
    batch_size, channels = sh._get_tensor_dim_size(input, 0), sh._get_tensor_dim_size(input, 1)
    for name, param, fill in (("weight", weight, 1.0), ("bias", bias, 0.0)):
        if param is None or sh.is_none(param):
            if channels is None:
                raise SymbolicValueError("Unsupported: ONNX export of batch_norm for unknown channel size.", input)
            filled = g.constant(torch.full((channels,), fill, dtype=input.dtype))
            weight, bias = (filled, bias) if name == "weight" else (weight, filled)
    if any(stat is None or sh.is_none(stat) for stat in (running_mean, running_var)):
        if batch_size is None or channels is None:
            raise SymbolicValueError("batch_norm without running statistics needs static batch and channel sizes",
                                     input)
        per_channel = g.op("Transpose", _reshape_helper(g, input, [batch_size, channels, -1]), perm_i=[0, 2, 1])
        running_var, running_mean = _builtin(g, "aten::var_mean")(g, per_channel, [0, 1], 0, False)
    return weight, bias, running_mean, running_var


# ---------------------------------------------------------------------------------------------
# Reductions


def _maybe_cast_reduce_op_input(g, self):
    """Integer inputs other than int64 as int64 (torch's reductions accumulate integers in int64)."""
    dtype = _dtype_of(self)
    if dtype is not None and not _is_fp(self) and dtype != torch.int64:
        return g.op("Cast", self, to_i=TensorProtoDataType.INT64)
    return self


def _handle_reduce_dim_none(g, self, op_name):
    """``op_name`` over every axis; an input with a 0-sized dim keeps its rank (keepdims=1)."""
    rank = sh._get_tensor_rank(self)
    empty = rank is not None and any(sh._get_tensor_dim_size(self, k) == 0 for k in range(rank))
    return g.op(op_name, self, keepdims_i=int(empty))


def _reduce_op_symbolic_helper(onnx_op_name, allow_multi_dim_support=True):
    """A symbolic ``(g, self, dim=None, keepdim=None)`` reducing with ``onnx_op_name``."""

    def symbolic(g, self, dim=None, keepdim=None):
        self = _maybe_cast_reduce_op_input(g, self)
        if dim is None or (isinstance(dim, tuple) and not dim):
            return _handle_reduce_dim_none(g, self, onnx_op_name)
        keepdim = sh._get_const(keepdim, "i", "keepdim")
        keepdim = 1 if keepdim is None else keepdim
        axes = sh._maybe_get_const(dim, "is" if allow_multi_dim_support else "i")
        if not sh.is_value(axes):
            axes = list(axes) if isinstance(axes, (list, tuple)) else [axes]
        return onnx_ops.reduce(g, onnx_op_name, self, axes, bool(keepdim))

    return symbolic


def _reduce_with_dtype_helper(onnx_op: str, name: str, allow_multi_dim_support: bool = True):
    """The symbolic of aten::sum-like ops: ``(self, dtype)`` or ``(self, dim, keepdim, dtype)``,
    computing in ``dtype`` when one is given."""
    symbolic = _reduce_op_symbolic_helper(onnx_op, allow_multi_dim_support=allow_multi_dim_support)

    @_overload_by_arg_count
    def reduce(g, *args, **kwargs):
        @quantized_args(True)
        @sh.parse_args("v", "none")
        def reduce_nodim(g, self, dtype):
            return _in_dtype(g, name, self, dtype, lambda x: symbolic(g, x))

        @quantized_args(True)
        @sh.parse_args("v", "is" if allow_multi_dim_support else "i", "i", "none")
        def reduce_dim(g, self, dim, keepdim, dtype):
            return _in_dtype(g, name, self, dtype, lambda x: symbolic(g, x, dim, keepdim))

        return reduce_nodim, reduce_dim

    return reduce


def _in_dtype(g, name: str, self, dtype, reduce_fn):
    if sh.is_none(dtype):
        return reduce_fn(self)
    if not sh._is_constant(dtype):
        return sh._unimplemented(name, "dtype", dtype)
    onnx_type = JitScalarType.from_dtype(dtypes.from_scalar_type(sh._get_const(dtype, "i", "dtype"))).onnx_type()
    result = reduce_fn(g.op("Cast", self, to_i=onnx_type))
    result_type = _try_get_scalar_type(result)
    if result_type is None or result_type.onnx_type() != onnx_type:
        result = g.op("Cast", result, to_i=onnx_type)
    return result


def _max_helper(g, self, dim_or_y=None, keepdim=None):
    return _builtin(g, "aten::max")(g, self, dim_or_y, keepdim)


def _min_helper(g, self, dim_or_y=None, keepdim=None):
    return _builtin(g, "aten::min")(g, self, dim_or_y, keepdim)


def _argmin_argmax_helper(g, input, dim, keepdim, op_name: str):
    ops = {"ArgMax": "aten::argmax", "ArgMin": "aten::argmin"}
    if op_name not in ops:
        raise SymbolicValueError(f"_argmin_argmax_helper: op_name must be ArgMax or ArgMin, not {op_name!r}", input)
    return _builtin(g, ops[op_name])(g, input, dim, keepdim)


@sh.parse_args("v", "is", "i", "i")
def _var_mean_helper(g, input, dim, correction, keepdim):
    """(var, mean) of ``input`` over ``dim`` (None: all) with ``correction`` (None: 1)."""
    return _builtin(g, "aten::var_mean")(g, input, dim, 1 if correction is None else correction, keepdim)


def _linalg_vector_norm_helper(g, self, ord, dim, keepdim, dtype):  # noqa: A002 - legacy's parameter name
    return _builtin(g, "aten::linalg_vector_norm")(g, self, ord, dim, keepdim, dtype)


# ---------------------------------------------------------------------------------------------
# Interpolation: legacy's opset 9/10 helpers build Upsample scales [1, 1, *spatial scales]


def _interpolate_warning(interpolate_mode):
    ctx = converting_context()
    opset = ctx.opset if ctx is not None else None
    op = "Upsample" if ctx is not None and not onnx_ops.has_op(ctx, "Resize") else "Resize"
    message = (f"{interpolate_mode} interpolation exported as ONNX {op} at opset {opset}: before opset 11, "
               "Upsample/Resize cannot say how torch maps output to input coordinates, so results may differ "
               "from PyTorch's. Export with opset_version=11 or higher to match it.")
    warn(ctx, message)


def _float_vector(g, values) -> Value:
    """A 1-D float32 value from a constant list, a list of runtime numbers or a tensor value."""
    known = sh.const(values, None)
    if isinstance(known, (list, tuple)) and all(isinstance(v, (int, float)) for v in known):
        return g.constant([float(v) for v in known], torch.float32)
    if values.elements is not None:
        parts = [onnx_ops.cast(g, e, torch.float32) for e in values.elements]
        return g.op("Concat", *[onnx_ops.unsqueeze(g, p, [0]) if p.rank == 0 else p for p in parts], axis_i=0)
    return onnx_ops.cast(g, values, torch.float32)


_UNIT_SCALES = [1.0, 1.0]  # batch and channel dims keep their size


def _interpolate_size_to_scales(g, input, output_size, dim):
    """Scales from an output size: constant when the size and the input's sizes are known."""
    output_size = sh._maybe_get_const(output_size, "is")
    if sh.is_value(output_size):
        spatial = _slice_helper(g, g.op("Shape", input), axes=[0], starts=[2], ends=[INT64_MAX])
        ratios = g.op("Div", onnx_ops.cast(g, output_size, torch.float32),
                      onnx_ops.cast(g, spatial, torch.float32))
        return g.op("Concat", g.constant(_UNIT_SCALES, torch.float32), ratios, axis_i=0)
    dims = sh._get_tensor_sizes(input)
    if dims is None or any(d is None for d in dims[2:]):
        raise SymbolicValueError("interpolate: the input's spatial sizes must be known to turn an output size into "
                                 "scales", input)
    scales = [1.0 if k < 2 else float(output_size[k - dim]) / float(dims[k - dim]) for k in range(dim)]
    return g.constant(scales, torch.float32)


def _interpolate_get_scales_if_available(g, scales):
    """[1, 1, *scales] from the first of ``scales`` (an interpolate's trailing arguments) when given."""
    first = scales[0]
    if sh._is_none(first) or sh._maybe_get_const(first, "fs") == -1:
        return None
    return g.op("Concat", g.constant(_UNIT_SCALES, torch.float32), _float_vector(g, first), axis_i=0)


def _get_interpolate_attributes(g, mode, args):
    """(scales or None, align_corners) from an upsample's trailing arguments."""
    if mode == "nearest":
        align_corners, scales = None, args[0:]
    else:
        align_corners, scales = args[0], args[1:]
    return _interpolate_get_scales_if_available(g, scales), align_corners


def _interpolate_get_scales(g, scale_factor, dim):
    """[1, 1, *scales] from a list of scales or one scale for every spatial dim."""
    offsets = g.constant(_UNIT_SCALES, torch.float32)
    rank = sh._get_tensor_rank(scale_factor)
    if sh._is_list(scale_factor) or (rank is not None and rank > 0):
        return g.op("Concat", offsets, _float_vector(g, scale_factor), axis_i=0)
    scale = onnx_ops.cast(g, _unsqueeze_helper(g, scale_factor, [0]), torch.float32)
    return g.op("Concat", offsets, *[scale] * (dim - 2), axis_i=0)


def _interpolate_get_scales_and_mode(g, input, size, scale_factor, mode, align_corners):
    """(scales, mode) of an interpolate for opsets 9 and 10 (Upsample, Resize-10); mode is nearest,
    linear or cubic. Warns that results may differ from torch's there."""
    mode = sh._maybe_get_const(mode, "s")
    mode = "linear" if "linear" in mode else "cubic" if "cubic" in mode else mode
    _interpolate_warning(mode)
    align_corners = sh._maybe_get_const(align_corners, "b")
    if isinstance(align_corners, bool) and align_corners:
        return sh._unimplemented("interpolate", "align_corners == True")
    dim = sh._get_tensor_rank(input)
    if not dim:
        return sh._unimplemented("interpolate", "missing input shape")
    if not sh._is_none(scale_factor):
        return _interpolate_get_scales(g, scale_factor, dim), mode
    if sh._is_none(size):
        return sh._unimplemented("interpolate", "Both size and scales are None in __interpolate")
    if not sh._is_packed_list(size) and sh._get_tensor_rank(size) == 0:  # one size for every spatial dim
        size = g.op("Concat", *[_unsqueeze_helper(g, size, [0])] * (dim - 2), axis_i=0)
    return _interpolate_size_to_scales(g, input, size, dim), mode


def _interpolate_helper(name, dim, interpolate_mode):
    """The symbolic of ``aten::<name>`` (upsample_nearest2d, ...): our conversion of it at ``g.opset``."""

    def symbolic_fn(g, input, output_size, *args):
        return _builtin(g, f"aten::{name}")(g, input, output_size, *args)

    return symbolic_fn
