"""Public access to the symbolic registry: custom symbolics and per-opset introspection."""

from __future__ import annotations

import dataclasses
import inspect
import numbers
import typing
from collections.abc import Callable

from .symbolic import registry

from .builder.options import check_opset


def register_custom_op_symbolic(symbolic_name: str, symbolic_fn: Callable, opset_version: int) -> None:
    """Use ``symbolic_fn`` for ``symbolic_name`` ("ns::op"; "::op" means "aten::op") from
    ``opset_version`` on; it wins over the built-in conversion.

    As in legacy, any opset from 1 is accepted: the symbolic serves every target opset from 9 that is
    at least ``opset_version``, and targets 7 and 8 only when registered at 7..9 (legacy's rule for the
    opsets below its base, 9)."""
    if isinstance(symbolic_name, str) and symbolic_name.startswith("::"):
        symbolic_name = "aten" + symbolic_name
    registry.check_name(symbolic_name)
    if symbolic_name.split("::", 1)[0] == "onnx":
        raise ValueError(f"symbolic_name {symbolic_name!r}: the 'onnx' namespace is reserved; use your own domain")
    if not callable(symbolic_fn):
        raise TypeError(f"symbolic_fn must be callable; got {type(symbolic_fn).__name__}")
    if _takes_symbolic_context(symbolic_fn):
        symbolic_fn = _with_symbolic_context(symbolic_fn)
    if symbolic_name == "prim::PythonOp":  # Functions with their own symbolic keep it, as in legacy
        from .symbolic.ops.autograd import custom_python_op

        symbolic_fn = custom_python_op(symbolic_fn)
    registry.register_custom(symbolic_name, symbolic_fn, _registration_opset(opset_version))


def unregister_custom_op_symbolic(symbolic_name: str, opset_version: int) -> None:
    if isinstance(symbolic_name, str) and symbolic_name.startswith("::"):
        symbolic_name = "aten" + symbolic_name
    registry.check_name(symbolic_name)
    registry.unregister_custom(symbolic_name, _registration_opset(opset_version))


def _registration_opset(opset_version) -> int:
    """A registration's opset: any int from 1, as legacy takes (a symbolic for "opset 1 and up")."""
    if isinstance(opset_version, bool) or not isinstance(opset_version, numbers.Integral):
        raise TypeError(f"opset_version must be an int (the lowest opset the symbolic serves); got {opset_version!r}")
    if opset_version < 1:
        raise ValueError(f"opset_version={opset_version}: ONNX opsets start at 1")
    return int(opset_version)


def supported_ops(opset_version: int) -> list[str]:
    """Every ``ns::op`` that converts at ``opset_version`` ("aten::conv2d", ...)."""
    return registry.registered_names(check_opset(opset_version))


@dataclasses.dataclass
class SymbolicContext:
    """What torch <= 2.0 passed before ``g`` to a symbolic whose first parameter is annotated
    ``SymbolicContext``: the node being converted (``cur_node``, a ``torch._C.Node``), and legacy's
    parameter dict, value map and ONNX block, which this exporter does not have (empty, None)."""

    params_dict: dict = dataclasses.field(default_factory=dict)
    env: dict = dataclasses.field(default_factory=dict)
    cur_node: object = None
    onnx_block: object = None


def _takes_symbolic_context(symbolic_fn: Callable) -> bool:
    """Whether the first parameter is annotated ``SymbolicContext`` (torch's old class, ours, or a
    stand-in of that name), as legacy decided whether to pass one."""
    try:
        first = next(iter(inspect.signature(symbolic_fn).parameters.values()), None)
    except (TypeError, ValueError):
        return False
    if first is None or first.annotation is inspect.Parameter.empty:
        return False
    annotation = first.annotation
    if isinstance(annotation, str):
        try:
            annotation = typing.get_type_hints(symbolic_fn).get(first.name, annotation)
        except Exception:  # noqa: BLE001 - an annotation naming what no longer exists: read its text
            pass
    name = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    return name.rsplit(".", 1)[-1] == "SymbolicContext"


def _with_symbolic_context(symbolic_fn: Callable) -> Callable:
    def symbolic(g, *inputs, **attrs):
        return symbolic_fn(SymbolicContext(cur_node=g.original_node), g, *inputs, **attrs)

    symbolic.__name__, symbolic.__qualname__ = symbolic_fn.__name__, symbolic_fn.__qualname__
    symbolic.__doc__ = symbolic_fn.__doc__
    return symbolic
