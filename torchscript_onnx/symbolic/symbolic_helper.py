"""What symbolic functions use to read their arguments, plus the legacy helper names.

The named API: ``rank(v)``, ``sizes(v)``, ``is_static(v, i)``, ``const(v)``, ``dtype(v)``.
Every name of the legacy exporter's ``symbolic_helper.__all__`` is here too, so custom symbolics
written for it run unchanged: the readers (``_get_tensor_rank``, ``_maybe_get_const``, ``_is_none``,
...) below, answering as legacy's do, and the rest re-exported from ``legacy_helpers`` (dtype tables
and readers, errors, decorators, quantization) and ``legacy_lowerings`` (the helpers that emit ops).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

import torch

from torchscript_onnx.builder.errors import SymbolicValueError, needs_opset  # noqa: F401 - needs_opset: sh.needs_opset
from torchscript_onnx.builder.ir import UNKNOWN, Value

# ---------------------------------------------------------------------------------------------
# Reading values


def is_value(x) -> bool:
    return isinstance(x, Value)


def is_none(x) -> bool:
    return x is None or (isinstance(x, Value) and x.is_none)


def is_const(x) -> bool:
    return not isinstance(x, Value) or _known(x) is not UNKNOWN


def const(x, default=UNKNOWN):
    """The export-time value of ``x`` (a Python object), or ``default`` when known only at runtime."""
    if not isinstance(x, Value):
        return x
    known = _known(x)
    if known is not UNKNOWN:
        return known
    if x.elements is not None and all(_known(e) is not UNKNOWN for e in x.elements):
        return [_known(e) for e in x.elements]
    return default


def _known(x: Value):
    """The constant ``x`` holds, or the tensor of the ONNX Constant node that made it (a legacy
    symbolic's ``g.op("Constant", value_t=...)``, which the legacy helpers read as known); UNKNOWN."""
    if x.is_const:
        return x.const
    node = x.producer
    if node is not None and node.op_type == "Constant" and not node.domain:
        tensor = node.attr("value")
        if isinstance(tensor, torch.Tensor):
            return tensor
    return UNKNOWN


def rank(v) -> int | None:
    return v.rank if isinstance(v, Value) else None


def sizes(v) -> list | None:
    """Dims as ints, symbolic names (str) or None; None when the rank is unknown."""
    return None if not isinstance(v, Value) or v.shape is None else list(v.shape)


def is_static(v, axis: int) -> bool:
    dims = sizes(v)
    return dims is not None and -len(dims) <= axis < len(dims) and isinstance(dims[axis], int)


def static_sizes(v) -> list[int] | None:
    dims = sizes(v)
    return dims if dims is not None and all(isinstance(d, int) for d in dims) else None


def dtype(v) -> torch.dtype | None:
    return v.dtype if isinstance(v, Value) else None


def unpack_list(v) -> list:
    """The elements of a list value: Values for runtime elements, Python values for constants."""
    if isinstance(v, Value):
        if v.elements is not None:
            return list(v.elements)
        if v.is_const and isinstance(v.const, (list, tuple)):
            return [_as_value(e) for e in v.const]
    if isinstance(v, (list, tuple)):
        return list(v)
    raise SymbolicValueError(f"expected a list, got {v!r}")


def _as_value(e):
    if isinstance(e, Value):
        return e
    if isinstance(e, torch.Tensor):
        return Value("", e.dtype, tuple(e.shape), e)
    return Value("", None, None, e)


def is_packed_list(v) -> bool:
    return isinstance(v, Value) and v.elements is not None


# ---------------------------------------------------------------------------------------------
# parse_args


def _parse_arg(value, desc: str, arg_name: str | None = None, node_name: str | None = None):
    if desc == "none" or desc == "v":
        return value
    if is_none(value):
        return None
    raw = const(value)
    if raw is UNKNOWN:
        raise SymbolicValueError(
            f"{node_name or 'a symbolic'}: argument '{arg_name or 'value'}' must be known at export time ({desc}), "
            f"but it is computed at runtime: {value!r}"
        )
    if isinstance(raw, torch.Tensor) and desc != "t":
        raw = raw.tolist()
    if desc == "i":
        return int(raw[0] if isinstance(raw, list) else raw)
    if desc == "f":
        return float(raw[0] if isinstance(raw, list) else raw)
    if desc == "b":
        return bool(raw[0] if isinstance(raw, list) else raw)
    if desc == "s":
        return str(raw)
    if desc == "t":
        return raw if isinstance(raw, torch.Tensor) else torch.tensor(raw)
    if desc in ("is", "fs"):
        items = raw if isinstance(raw, (list, tuple)) else [raw]
        items = [e.const if isinstance(e, Value) else e for e in items]
        if desc == "is":
            return [int(e.item() if isinstance(e, torch.Tensor) else e) for e in items]
        return [float(e.item() if isinstance(e, torch.Tensor) else e) for e in items]
    raise ValueError(f"unknown parse_args descriptor {desc!r}")


def parse_args(*arg_descriptors: str):
    """Decorator: convert positional arguments by descriptor (v i f b s t is fs none)."""

    def decorator(fn: Callable) -> Callable:
        names = [p for p in inspect.signature(fn).parameters][1:]

        @functools.wraps(fn)
        def wrapper(g, *args, **kwargs):
            if len(arg_descriptors) < len(args):
                extra = len(args) - len(arg_descriptors)
                raise SymbolicValueError(f"{fn.__name__} takes {len(arg_descriptors)} inputs, got {len(args)} ({extra} too many)")
            parsed = [
                _parse_arg(arg, desc, names[k] if k < len(names) else str(k), fn.__name__)
                for k, (arg, desc) in enumerate(zip(args, arg_descriptors))
            ]
            return fn(g, *parsed, **kwargs)

        wrapper._arg_descriptors = arg_descriptors  # what legacy's _overload_by_arg_count dispatches on
        return wrapper

    return decorator


# ---------------------------------------------------------------------------------------------
# Scalars and dtypes

def scalar_type_of(v) -> torch.dtype | None:
    """The dtype torch would use for ``v``: its tensor dtype, or that of a Python number."""
    if isinstance(v, Value) and v.dtype is not None:
        return v.dtype
    raw = const(v, None)
    if isinstance(raw, bool):
        return torch.bool
    if isinstance(raw, int):
        return torch.int64
    if isinstance(raw, float):
        return torch.float32
    if isinstance(raw, torch.Tensor):
        return raw.dtype
    return None


def is_wrapped_number(v) -> bool:
    """A Python number (or a 0-d tensor constant made from one by the tracer)."""
    if not isinstance(v, Value):
        return True
    raw = v.const if v.is_const else UNKNOWN
    if isinstance(raw, (bool, int, float)):
        return True
    return v.rank == 0 and v.producer is None and not v.is_param and isinstance(raw, torch.Tensor) \
        and not raw.requires_grad


@functools.lru_cache(maxsize=None)
def _result_type(key) -> torch.dtype:
    operands = []
    for kind, dt in key:
        if kind == "number":
            operands.append({torch.bool: True, torch.int64: 1, torch.float32: 1.0}.get(dt, 1.0))
        elif kind == "scalar":
            operands.append(torch.empty((), dtype=dt))
        else:
            operands.append(torch.empty((1,), dtype=dt))
    return _promote_all(operands)


def _promote_all(operands) -> torch.dtype:
    if len(operands) == 1:
        x = operands[0]
        return x.dtype if isinstance(x, torch.Tensor) else torch.tensor(x).dtype
    # torch.result_type takes two operands; fold pairwise over stand-in tensors of the right category.
    acc = operands[0]
    for op in operands[1:]:
        dt = torch.result_type(acc, op)
        both_numbers = not isinstance(acc, torch.Tensor) and not isinstance(op, torch.Tensor)
        if both_numbers:
            acc = torch.tensor(0, dtype=dt).item() if dt != torch.bool else True
        else:
            dims = max(a.dim() if isinstance(a, torch.Tensor) else 0 for a in (acc, op))
            acc = torch.empty((1,) * dims, dtype=dt)
    return acc.dtype if isinstance(acc, torch.Tensor) else torch.tensor(acc).dtype


def promote_types(*values) -> torch.dtype | None:
    """torch's type promotion over values: tensors, 0-d tensors and wrapped Python numbers."""
    key = []
    for v in values:
        if is_none(v):
            continue
        dt = scalar_type_of(v)
        if dt is None:
            return None
        if is_wrapped_number(v):
            kind = "number"
            dt = torch.bool if dt == torch.bool else (torch.float32 if dt.is_floating_point else torch.int64)
        elif rank(v) == 0:
            kind = "scalar"
        else:
            kind = "tensor"
        key.append((kind, dt))
    return _result_type(tuple(key)) if key else None


# ---------------------------------------------------------------------------------------------
# Errors


def unimplemented(op: str, detail: str, value=None):
    raise SymbolicValueError(f"{op}: {detail} is not supported", value)


def value_error(message: str, value=None):
    raise SymbolicValueError(message, value)


# ---------------------------------------------------------------------------------------------
# Legacy names that read values. Each answers what the legacy exporter's helper of that name answers
# for the same value: there, a Python number argument is a 0-d onnx::Constant tensor, a parameter is
# a graph input (not a constant), and a list is a prim::ListConstruct (``value.node().kind()``,
# compat.py, tells lists from tuples).


_is_value = is_value
_is_none = is_none


def _unpack_list(list_value) -> list:
    return unpack_list(list_value)


def _unimplemented(op: str, msg: str, value=None):
    unimplemented(op, msg, value)


def _is_constant(value) -> bool:
    return not is_value(value) or value.is_none or (is_const(value) and not value.is_param)


def _maybe_get_const(value, descriptor: str):
    if is_value(value) and not value.is_none and _is_constant(value):
        return _parse_arg(value, descriptor)
    return value


def _get_const(value, desc: str, arg_name: str):
    return _parse_arg(value, desc, arg_name, "_get_const")


def _maybe_get_scalar(value):
    """A 0-d constant as a tensor; anything else as it is."""
    known = _maybe_get_const(value, "t")
    return known if isinstance(known, torch.Tensor) and known.shape == () else value


def _is_packed_list(list_value) -> bool:
    return is_value(list_value) and list_value.node().kind() == "prim::ListConstruct"


def _is_tuple_construct(x) -> bool:
    return x.node().kind() == "prim::TupleConstruct"


def _is_list(x) -> bool:
    """A list built by the graph (ListConstruct, an ONNX sequence); a constant list is a 1-D tensor."""
    return is_value(x) and (x.sequence or _is_packed_list(x))


def _is_scalar_list(x) -> bool:
    """A list of numbers (int[], float[], bool[]), some maybe known only at runtime."""
    if not _is_list(x) or x.sequence:
        return False
    items = x.elements if x.elements is not None else x.const
    return all(isinstance(e, (bool, int, float)) or (is_value(e) and _is_number(e)) for e in items)


def _is_number(value: Value) -> bool:
    known = _known(value)
    return isinstance(known, (bool, int, float)) or (known is UNKNOWN and value.rank == 0)


def _is_tensor_list(x) -> bool:
    return _is_list(x) and (x.sequence or not _is_scalar_list(x))


def _is_tensor(x) -> bool:
    if not is_value(x) or x.is_none or x.sequence or x.optional or x.elements is not None or _is_list(x):
        return False
    return not x.is_const or isinstance(x.const, (torch.Tensor, bool, int, float, str, list, tuple))


def _legacy_shape(value) -> tuple | None:
    """The shape legacy's tensor type has: a number constant is 0-d, a constant list 1-D."""
    if value.shape is not None or not value.is_const:
        return value.shape
    if isinstance(value.const, torch.Tensor):
        return tuple(value.const.shape)
    return (len(value.const),) if isinstance(value.const, (list, tuple)) else ()


def _get_tensor_rank(x) -> int | None:
    shape = _legacy_shape(x) if _is_tensor(x) else None
    return None if shape is None else len(shape)


def _get_tensor_sizes(x, allow_nonstatic: bool = True) -> list | None:
    """The dims as ints, None for a dim known only at runtime (``allow_nonstatic=False``: None then)."""
    shape = _legacy_shape(x) if _is_tensor(x) else None
    if shape is None:
        return None
    if allow_nonstatic:
        return [d if isinstance(d, int) else None for d in shape]
    return list(shape) if all(isinstance(d, int) for d in shape) else None


def _get_tensor_dim_size(x, dim: int) -> int | None:
    dims = _get_tensor_sizes(x)
    return dims[dim] if dims else None


# The rest of the legacy exporter's helper names: legacy_helpers.py and legacy_lowerings.py (imported
# last: they use the above; symbolic/__init__.py imports this module first, so they never run before it).
from .legacy_helpers import *  # noqa: E402, F401, F403
from .legacy_helpers import __all__ as _LEGACY_HELPERS  # noqa: E402
from .legacy_lowerings import *  # noqa: E402, F401, F403
from .legacy_lowerings import __all__ as _LEGACY_LOWERINGS  # noqa: E402

# The named API, then every name of the legacy exporter's ``symbolic_helper.__all__``.
__all__ = [
    "UNKNOWN", "SymbolicValueError", "const", "dtype", "is_const", "is_none", "is_packed_list", "is_static",
    "is_value", "is_wrapped_number", "needs_opset", "parse_args", "promote_types", "rank", "scalar_type_of",
    "sizes", "static_sizes", "unimplemented", "unpack_list", "value_error",
    "_get_const", "_get_tensor_dim_size", "_get_tensor_rank", "_get_tensor_sizes", "_is_constant", "_is_list",
    "_is_none", "_is_packed_list", "_is_scalar_list", "_is_tensor", "_is_tensor_list", "_is_tuple_construct",
    "_is_value", "_maybe_get_const", "_maybe_get_scalar", "_parse_arg", "_unimplemented", "_unpack_list",
    *_LEGACY_HELPERS, *_LEGACY_LOWERINGS,
]
