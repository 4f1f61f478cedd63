"""The legacy exporter's ``symbolic_helper`` names that our own conversions do not use: its dtype
tables and readers, its errors and decorators, and the quantization helpers. ``symbolic_helper``
re-exports them (and those of ``legacy_lowerings``) so custom symbolics written for the legacy
exporter find every name of its ``symbolic_helper.__all__``.

Each does what legacy's does, on this builder's values and ``g``. Where legacy reads its export
GLOBALS (the opset, the training mode), these ask the graph context the helper was called under
(``converting_context``). Where legacy's representation differs from ours, the nearest meaningful
equivalent: a quantized tensor is, here, the float ``DequantizeLinear(QuantizeLinear(x))`` gives
(symbolic/ops/quantized.py), not legacy's (values, scale, zero point) tuple; an omitted optional
input is None. ``tests/test_legacy_helper_facade.py`` lists each such judgement.
"""

from __future__ import annotations

import functools
import sys
import warnings

import torch

from torchscript_onnx.builder.context import GraphContext
from torchscript_onnx.builder.dtypes import JitScalarType, TensorProtoDataType
from torchscript_onnx.builder.errors import OnnxExporterWarning, SymbolicValueError, needs_opset
from torchscript_onnx.builder.ir import Value
from torchscript_onnx.builder.options import TrainingMode

from . import symbolic_helper as sh
from .registry import declare_opset_requirements

# The conditions legacy's helpers raise (in legacy's words) -> the lowest opset that meets each.
OPSET = declare_opset_requirements({}, unlisted={
    "QuantizeLinear": 10,
    "QuantizeLinear: Attribute axis is not supported": 13,
})

__all__ = [
    "_apply_params", "_as_list_type", "_block_list_in_opset", "_generate_wrapped_number", "_get_dim_for_cross",
    "_if_scalar_type_as", "_is_bool", "_is_fp", "_is_onnx_constant", "_is_split_static", "_maybe_cast_to_type",
    "_node_get", "_onnx_opset_unsupported", "_onnx_opset_unsupported_detailed", "_onnx_unsupported",
    "_op_with_optional_float_cast", "_optional_input_placeholder_tensor", "_overload_by_arg_count", "_scalar",
    "_try_get_scalar_type", "_type_promote_from_values", "_unpack_quantized_tensor", "_unpack_tuple",
    "args_have_same_dtype", "cast_pytorch_to_onnx", "check_training_mode", "dequantize_helper", "is_complex_value",
    "pytorch_name_to_type", "quantize_helper", "quantized_args", "requantize_bias_helper", "scalar_name_to_pytorch",
    "scalar_type_to_onnx", "scalar_type_to_pytorch_type",
]

# ---------------------------------------------------------------------------------------------
# The legacy dtype tables (deprecated in legacy already; kept for the symbolics that index them)

_J = JitScalarType
# the types these tables cover: c10's ScalarType up to BFloat16, without ComplexHalf
_TABLE_TYPES = (_J.UINT8, _J.INT8, _J.DOUBLE, _J.FLOAT, _J.HALF, _J.INT, _J.INT64, _J.INT16, _J.BOOL, _J.COMPLEX64,
                _J.COMPLEX128, _J.QINT8, _J.QUINT8, _J.QINT32, _J.BFLOAT16)
_QUANTIZED = (_J.QINT8, _J.QUINT8, _J.QINT32)

# scalar name ("Float") -> ONNX element type
cast_pytorch_to_onnx = {t.scalar_name(): t.onnx_type() for t in (*_TABLE_TYPES, _J.UNDEFINED) if t not in _QUANTIZED}
# C++ type name ("float") -> scalar name ("Float")
scalar_name_to_pytorch = {t.torch_name(): t.scalar_name() for t in _TABLE_TYPES}
# ScalarType index -> torch dtype / ONNX element type
scalar_type_to_pytorch_type = [_J(k).dtype() for k in range(_J.BFLOAT16 + 1)]
scalar_type_to_onnx = [_J(k).onnx_type() for k in range(_J.BFLOAT16 + 1)]
# scalar name -> torch dtype
pytorch_name_to_type = {t.scalar_name(): t.dtype() for t in _TABLE_TYPES}


# ---------------------------------------------------------------------------------------------
# Reading values and types


def _dtype_of(value) -> torch.dtype | None:
    """The element type legacy's ``JitScalarType.from_value`` finds: a tensor's or a value's dtype,
    or that of the onnx::Constant legacy makes of a constant (a Python float is a double, a list of
    numbers a 1-D tensor of their type); None when unknown, and for a list the graph builds."""
    if isinstance(value, torch.Tensor):
        return value.dtype
    if not isinstance(value, Value) or value.is_none or value.elements is not None:
        return None
    if value.dtype is not None:
        return value.dtype
    known = sh.const(value, None)
    if isinstance(known, (list, tuple)) and known:
        known = known[0]
    if isinstance(known, torch.Tensor):
        return known.dtype
    return {bool: torch.bool, int: torch.int64, float: torch.float64}.get(type(known))


def as_value(g, x) -> Value:
    """A graph value for ``x``: legacy's ``g.op`` took Python numbers and tensors as inputs, ours takes values."""
    return x if sh.is_value(x) else g.constant(torch.tensor(x))


def _try_get_scalar_type(*args) -> JitScalarType | None:
    """The scalar type of the first argument that has one."""
    for arg in args:
        dtype = _dtype_of(arg)
        if dtype is not None:
            return JitScalarType.from_dtype(dtype)
    return None


def _type_promote_from_values(*args) -> JitScalarType:
    """``torch.promote_types`` over the arguments' scalar types (those that have one)."""
    found = [dtype for dtype in map(_dtype_of, args) if dtype is not None]
    if not found:
        return JitScalarType.UNDEFINED
    return JitScalarType.from_dtype(functools.reduce(torch.promote_types, found))


def args_have_same_dtype(args) -> bool:
    if not args:
        raise SymbolicValueError("args_have_same_dtype: no arguments")
    first = _dtype_of(args[0])
    return all(_dtype_of(arg) == first for arg in args)


def _is_fp(value) -> bool:
    return _dtype_of(value) in (torch.float32, torch.float64, torch.float16, torch.bfloat16)


def _is_bool(value) -> bool:
    return _dtype_of(value) == torch.bool


def is_complex_value(x) -> bool:
    if not sh.is_value(x):
        raise SymbolicValueError(f"is_complex_value: expected a graph value, got {x!r}")
    return _dtype_of(x) in (torch.complex32, torch.complex64, torch.complex128)


def _jit_scalar_type(jit_type) -> JitScalarType:
    """Ours or torch's ``JitScalarType`` member (both number the types alike) as ours."""
    return JitScalarType(int(jit_type))


def _maybe_cast_to_type(g, value, jit_type):
    """``value`` cast to the scalar type ``jit_type`` unless it has it already."""
    target = _jit_scalar_type(jit_type)
    if _try_get_scalar_type(value) != target:
        return g.op("Cast", as_value(g, value), to_i=target.onnx_type())
    return value


def _scalar(x):
    """A 0-d tensor as a Python number; None for anything else."""
    return x.item() if isinstance(x, torch.Tensor) and x.shape == () else None


def _if_scalar_type_as(self, tensor):
    """A constant ``self`` (a tensor) converted to the scalar type of ``tensor``; a graph value as it is."""
    if sh.is_value(self):
        return self
    dtype = _dtype_of(tensor)
    return self.to(dtype) if dtype is not None and isinstance(self, torch.Tensor) else self


def _generate_wrapped_number(g, scalar):
    """A Python number as the 0-d tensor torch wraps it in: a float as double, anything else as is."""
    if isinstance(scalar, torch.Tensor):
        raise SymbolicValueError("_generate_wrapped_number takes a Python number, not a tensor")
    if isinstance(scalar, float):
        return g.constant(torch.tensor(scalar, dtype=torch.float64))
    return g.constant(torch.tensor(scalar))


def _as_list_type(jit_type):
    """``jit_type`` when it is a TorchScript list type, else None."""
    return jit_type if isinstance(jit_type, torch._C.ListType) else None


def _node_get(node, key: str):
    """An attribute of a node, whatever its kind: of a TorchScript node (``g.original_node``) or of
    the node view a value's ``node()`` gives."""
    kind_of = getattr(node, "kindOf", None)
    if isinstance(node, torch._C.Node) and kind_of is not None:
        return getattr(node, kind_of(key))(key)
    return node[key]


def _is_onnx_constant(value) -> bool:
    return value.node().kind() == "onnx::Constant"


def _is_split_static(split_size_or_sizes, _outputs) -> bool:
    if _outputs is None:
        return False
    return not (sh.is_value(split_size_or_sizes) and not _is_onnx_constant(split_size_or_sizes))


def _unpack_tuple(tuple_value) -> tuple:
    """The elements of a tuple (or, here, of any value built element by element)."""
    if not sh.is_value(tuple_value) or tuple_value.elements is None:
        raise SymbolicValueError("expected a tuple (prim::TupleConstruct)", tuple_value)
    return tuple(tuple_value.elements)


def _get_dim_for_cross(x, dim: int | None):
    if dim == -1:
        rank = sh._get_tensor_rank(x)
        if rank is None:
            raise SymbolicValueError("cross: the input rank must be known", x)
        return dim + rank
    if dim is None:  # the first dim of size 3
        dims = sh._get_tensor_sizes(x)
        if dims is None:
            raise SymbolicValueError("cross: the input sizes must be known to find a dim of size 3", x)
        for index, size in enumerate(dims):
            if size == 3:
                return index
    return dim


def _optional_input_placeholder_tensor(g):
    """An omitted optional input: ``g.op`` takes None for one (legacy makes a typed empty node)."""
    return None


# ---------------------------------------------------------------------------------------------
# Errors and warnings


def _onnx_unsupported(op_name: str, value=None):
    raise SymbolicValueError(f"Unsupported: ONNX export of operator {op_name}", value)


def _onnx_opset_unsupported(op_name: str, current_opset: int, supported_opset: int, value=None):
    needs_opset(supported_opset, op_name, value, message=_unsupported(op_name, current_opset, supported_opset))


def _onnx_opset_unsupported_detailed(op_name: str, current_opset: int, supported_opset: int, reason: str,
                                     value=None):
    needs_opset(supported_opset, f"{op_name}: {reason}", value,
                message=_unsupported(op_name, current_opset, supported_opset, reason))


def _unsupported(op_name: str, current_opset: int, supported_opset: int, reason: str | None = None) -> str:
    """Legacy's wording of an opset requirement."""
    return (f"Unsupported: ONNX export of {op_name} in opset {current_opset}. {f'{reason}. ' if reason else ''}"
            f"Please try opset version {supported_opset} (pass opset_version={supported_opset})")


def _block_list_in_opset(name: str):
    """A symbolic that refuses ``name`` at the opset it is called for."""

    def symbolic_fn(g=None, *args, **kwargs):
        opset = getattr(g, "opset", None)
        raise SymbolicValueError(f"ONNX export failed on {name}, which is not implemented for opset "
                                 f"{opset if opset is not None else '(unknown)'}. Try exporting with other opset "
                                 f"versions.")

    return symbolic_fn


def converting_context() -> GraphContext | None:
    """The graph context of the conversion this call is part of: the nearest one on the stack (the
    symbolic's ``g``, else the converter's). Legacy's helpers that take no ``g`` read the export's
    mode and opset from its GLOBALS; ours read them from here."""
    frame = sys._getframe(1)
    while frame is not None:
        for local in frame.f_locals.values():
            if isinstance(local, GraphContext):
                return local
        frame = frame.f_back
    return None


def check_training_mode(op_train_mode: int, op_name: str) -> None:
    """Warn when an op's own train flag disagrees with the export's training mode (not PRESERVE)."""
    ctx = converting_context()
    mode = ctx.options.training if ctx is not None else TrainingMode.PRESERVE
    if mode == TrainingMode.PRESERVE or (TrainingMode.TRAINING if op_train_mode else TrainingMode.EVAL) == mode:
        return
    op_mode = f"train={bool(op_train_mode)}"
    warn(ctx, f"operator '{op_name}' is set to {op_mode} while the export's training mode is TrainingMode."
              f"{mode.name}: it is exported with {op_mode}")


def warn(ctx: GraphContext | None, message: str) -> None:
    """Warn where the legacy exporter warns, from inside a conversion; an error under ``strict=True``."""
    if ctx is not None and ctx.options.strict:
        raise SymbolicValueError(message + " (strict=True makes this an error)")
    warnings.warn(message, OnnxExporterWarning, stacklevel=3)


# ---------------------------------------------------------------------------------------------
# Decorators


def _apply_params(*args, **kwargs):
    """A decorator that calls the decorated (higher-order) function with these arguments."""

    def _apply(fn):
        return fn(*args, **kwargs)

    return _apply


def _overload_by_arg_count(fn):
    """``fn(g, *args)`` returns ``parse_args``-decorated overloads; call the one taking as many arguments."""

    @functools.wraps(fn)
    def wrapper(g, *args):
        for overload in fn(g, *args):
            if len(overload._arg_descriptors) == len(args):
                return overload(g, *args)
        return sh._unimplemented(f"aten::{fn.__name__}", f"with {len(args)} arguments")

    return wrapper


def quantized_args(*arg_q_descriptors: bool, scale: float | None = None, zero_point: int | None = None,
                   quantize_output: bool = True):
    """Run the decorated symbolic on quantized inputs, quantizing its output as torch does.

    Inputs arrive dequantized here (a quantized tensor is its float, symbolic/ops/quantized.py):
    the flagged arguments whose traced input is a quantized tensor (or a list holding one) mark the
    call as quantized. Then the output is quantized with ``scale`` and ``zero_point``, or those of
    the first quantized input."""

    def decorator(fn):
        @functools.wraps(fn)
        def wrapper(g, *args, **kwargs):
            flags = arg_q_descriptors + (False,) * (len(args) - len(arg_q_descriptors))
            traced = _traced_inputs(g)
            quantized = [arg for k, (flag, arg) in enumerate(zip(flags, args))
                         if flag and k < len(traced) and _is_quantized(traced[k])]
            output = fn(g, *args, **kwargs)
            if not quantized or not quantize_output:
                return output
            _, input_scale, input_zero_point, _ = dequantize_helper(g, _first_quantized(quantized[0]))
            out_scale = input_scale if scale is None else g.constant(torch.tensor(scale))
            out_zero_point = input_zero_point if zero_point is None else g.constant(torch.tensor(zero_point))
            return quantize_helper(g, output, out_scale, out_zero_point)

        return wrapper

    return decorator


def _traced_inputs(g) -> list:
    node = getattr(g, "original_node", None)
    return [] if node is None else [node.inputsAt(k) for k in range(node.inputsSize())]


_QUANTIZED_SCALARS = frozenset({"QInt8", "QUInt8", "QInt32"})


def _is_quantized(jit_value) -> bool:
    jit_type = jit_value.type()
    if isinstance(jit_type, torch._C.TensorType):
        return jit_type.scalarType() in _QUANTIZED_SCALARS
    node = jit_value.node()
    return node.kind() == "prim::ListConstruct" and any(_is_quantized(v) for v in node.inputs())


def _first_quantized(arg):
    """A quantized argument, or the first quantized element of a quantized list."""
    if sh.is_value(arg) and arg.elements is not None:
        return next((e for e in arg.elements if _dequantize_node(e) is not None), arg)
    return arg


# ---------------------------------------------------------------------------------------------
# Quantization: a quantized tensor is the float DequantizeLinear(QuantizeLinear(x)) gives


def _dequantize_node(value):
    from .ops import quantized  # noqa: PLC0415 - the conversions import this module

    return quantized.dequantize_node(value)


def _axis_value(node) -> Value | None:
    axis = node.attr("axis")
    return None if axis is None else Value("", const=axis)


def _unpack_quantized_tensor(tuple_value) -> tuple:
    """(integer values, scale, zero point[, axis]) of a quantized tensor."""
    node = _dequantize_node(tuple_value)
    if node is None or len(node.inputs) < 3:
        raise SymbolicValueError("expected a quantized tensor (the output of a quantize op)", tuple_value)
    axis = _axis_value(node)
    values = node.inputs[0]
    if node.outputs[0] is not tuple_value:  # computed from one by an op that keeps its quantization
        g = converting_context()
        if g is None:
            raise SymbolicValueError("_unpack_quantized_tensor: call it from a symbolic", tuple_value)
        values = g.op("QuantizeLinear", tuple_value, node.inputs[1], node.inputs[2],
                      axis_i=None if axis is None else axis.const)
    return (values, node.inputs[1], node.inputs[2]) + (() if axis is None else (axis,))


def dequantize_helper(g, qtensor, qdtype=None):
    """(dequantized tensor, scale, zero point, axis or None) of a quantized tensor. Here the quantized
    tensor already is its dequantized float; ``qdtype`` (its integer type) is the zero point's."""
    node = _dequantize_node(qtensor)
    if node is None or len(node.inputs) < 3:
        raise SymbolicValueError("dequantize_helper expects a quantized tensor (the output of a quantize op)",
                                 qtensor)
    return qtensor, node.inputs[1], node.inputs[2], _axis_value(node)


def quantize_helper(g, tensor, scale, zero_point, axis=None):
    """``tensor`` quantized with ``scale`` and ``zero_point`` (per channel along ``axis``): the float
    DequantizeLinear(QuantizeLinear(tensor)) gives, this exporter's quantized tensor."""
    axis_i = None if axis is None or sh.is_none(axis) else sh._get_const(axis, "i", "axis")
    if axis_i is not None:
        per_axis = "QuantizeLinear: Attribute axis is not supported"
        OPSET.require(g, per_axis, tensor,
                      _unsupported("QuantizeLinear", g.opset, OPSET.opset(per_axis), "Attribute axis is not supported"))
    OPSET.require(g, "QuantizeLinear", tensor, _unsupported("QuantizeLinear", g.opset, OPSET.opset("QuantizeLinear")))
    if scale is None or zero_point is None:
        raise SymbolicValueError("quantize_helper needs a scale and a zero point", tensor)
    scale, zero_point = as_value(g, scale), as_value(g, zero_point)
    if _dtype_of(scale) != torch.float32:
        scale = g.op("Cast", scale, to_i=TensorProtoDataType.FLOAT)
    if _dtype_of(zero_point) not in (torch.uint8, torch.int8):
        zero_point = g.op("Cast", zero_point, to_i=TensorProtoDataType.UINT8)
    quantized = g.op("QuantizeLinear", tensor, scale, zero_point, axis_i=axis_i)
    return g.op("DequantizeLinear", quantized, scale, zero_point, axis_i=axis_i)


def requantize_bias_helper(g, bias, input_scale, weight_scale, axis=None):
    """A float bias as the int32 values a quantized kernel adds (scale input_scale * weight_scale,
    zero point 0; ``Cast`` truncates as legacy's does), dequantized again."""
    bias_scale = g.op("Mul", weight_scale, input_scale)
    zero_point = g.op("ConstantOfShape", g.op("Shape", bias_scale), value_t=torch.tensor([0], dtype=torch.int32))
    q_bias = g.op("Cast", g.op("Div", bias, bias_scale), to_i=TensorProtoDataType.INT32)
    axis_i = None if axis is None or sh.is_none(axis) else sh._get_const(axis, "i", "axis")
    return g.op("DequantizeLinear", q_bias, bias_scale, zero_point, axis_i=axis_i)


def _op_with_optional_float_cast(g, op_name: str, *args, **kwargs):
    """``op_name`` on non-float inputs through float: Cast<in>(Op<float>(Cast<float>(inputs))), for
    ops ONNX lacks integer kernels of before ``opset_before`` (a keyword; None: at every opset).
    ``target_float_t`` (a keyword, FLOAT by default) is the float type computed in."""
    opset_before = kwargs.pop("opset_before", None)
    target = _jit_scalar_type(kwargs.pop("target_float_t", JitScalarType.FLOAT))
    inputs = list(args)
    dtype_0 = _dtype_of(inputs[0])
    require_cast = not _is_fp(inputs[0]) and (opset_before is None or g.opset < opset_before)
    if require_cast and dtype_0 is None:
        raise SymbolicValueError(f"{op_name}: the dtype of its first input must be known to compute in float",
                                 inputs[0])
    if require_cast:
        complete = [x for x in inputs if sh.is_value(x) and x.isCompleteTensor()]
        for x in complete:
            if _dtype_of(x) != dtype_0:
                raise SymbolicValueError(f"Inputs of {op_name} must have same dtype. Got {dtype_0} and "
                                         f"{_dtype_of(x)}", x)
        inputs = [g.op("Cast", x, to_i=target.onnx_type()) if any(x is c for c in complete) and not _is_fp(x) else x
                  for x in inputs]
    out = g.op(op_name, *inputs, **kwargs)
    if require_cast:
        out = g.op("Cast", out, to_i=JitScalarType.from_dtype(dtype_0).onnx_type())
    return out
