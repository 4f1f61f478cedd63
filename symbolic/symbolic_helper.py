"""What symbolic functions use to read their arguments, plus the legacy helper names.

The named API: ``rank(v)``, ``sizes(v)``, ``is_static(v, i)``, ``const(v)``, ``dtype(v)``.
The legacy names (``_get_tensor_rank``, ``_maybe_get_const``, ``_is_none``, ...) are one-line
aliases so custom symbolics written for the legacy exporter run unchanged.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence

import torch

from torchscript_onnx.errors import SymbolicValueError, needs_opset  # noqa: F401 - needs_opset: sh.needs_opset
from torchscript_onnx.ir import UNKNOWN, Value

# ---------------------------------------------------------------------------------------------
# Reading values


def is_value(x) -> bool:
    return isinstance(x, Value)


def is_none(x) -> bool:
    return x is None or (isinstance(x, Value) and x.is_none)


def is_const(x) -> bool:
    return not isinstance(x, Value) or x.is_const


def const(x, default=UNKNOWN):
    """The export-time value of ``x`` (a Python object), or ``default`` when known only at runtime."""
    if not isinstance(x, Value):
        return x
    if x.is_const:
        return x.const
    if x.elements is not None and all(e.is_const for e in x.elements):
        return [e.const for e in x.elements]
    return default


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


def _parse_arg(value, desc: str, arg_name: str, fn_name: str):
    if desc == "none" or desc == "v":
        return value
    if is_none(value):
        return None
    raw = const(value)
    if raw is UNKNOWN:
        raise SymbolicValueError(
            f"{fn_name}: argument '{arg_name}' must be known at export time ({desc}), but it is "
            f"computed at runtime: {value!r}"
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

        return wrapper

    return decorator


def quantized_args(*flags, **kwargs):
    """Legacy decorator kept so imports work; quantized inputs arrive already dequantized here."""

    def decorator(fn):
        return fn

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
# Legacy names, one line each


_is_value = is_value
_is_none = is_none
_is_constant = is_const
_get_tensor_rank = rank
_get_tensor_sizes = sizes
_unpack_list = unpack_list
_is_packed_list = is_packed_list
_unimplemented = unimplemented


def _maybe_get_const(value, desc: str):
    return _parse_arg(value, desc, "value", "_maybe_get_const") if is_const(value) and not is_none(value) else value


def _get_const(value, desc: str, arg_name: str):
    return _parse_arg(value, desc, arg_name, "_get_const")


def _maybe_get_scalar(value):
    raw = const(value, None)
    return raw if isinstance(raw, torch.Tensor) and raw.numel() == 1 else value


def _get_tensor_dim_size(v, axis: int):
    dims = sizes(v)
    return dims[axis] if dims is not None and isinstance(dims[axis], int) else None


def _is_tensor_list(v) -> bool:
    return isinstance(v, Value) and v.elements is not None


def _is_scalar_list(v) -> bool:
    return isinstance(v, Value) and v.is_const and isinstance(v.const, (list, tuple))


def _sequence(x) -> bool:
    return isinstance(x, Sequence) and not isinstance(x, str)
