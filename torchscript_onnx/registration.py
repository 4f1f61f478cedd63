"""Public access to the symbolic registry: custom symbolics and per-opset introspection."""

from __future__ import annotations

import numbers
from collections.abc import Callable

from .symbolic import registry

from .options import check_opset


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
