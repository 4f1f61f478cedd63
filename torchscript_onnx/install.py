"""Opt-in routing of PyTorch's legacy export entry points to this exporter.

For code users cannot edit (HF optimum, ultralytics, scripts written for the legacy exporter):
after ``install()``, ``torch.onnx.export(..., dynamo=False)`` and ``torch.onnx.utils.export(...)``
export with ``torchscript_onnx.export``, and ``torch.onnx.register_custom_op_symbolic`` /
``unregister_custom_op_symbolic`` fill our registry, so such code's custom symbolics apply.
``torch.onnx.export`` calls without ``dynamo=False`` still go to torch's dynamo exporter.

This module is the one place the package touches ``torch.onnx``'s entry points, and only when the
user calls ``install()``: an opt-in routing the project's stand-alone rule names as allowed. The
routed calls run our exporter; nothing of torch's produces or checks their result.

Modules that imported one of these functions by name before ``install()`` (``from torch.onnx
import export``) are routed too: every loaded module attribute that is torch's function is
replaced, and ``uninstall()`` puts torch's function back in each place.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Iterator

import torch

from . import api, registration

# (module, attribute) -> torch's original function, while installed.
_replaced: dict[tuple[str, str], object] = {}


def _routed_export(original):
    @functools.wraps(original)
    def export(model, args=(), f=None, *, dynamo: bool = True, **options):
        if dynamo is False:
            result = api.export(model, args, f, dynamo=False, **options)
            return result if f is None else None
        return original(model, args, f, dynamo=dynamo, **options)

    export.__torchscript_onnx__ = True
    return export


def _routed_legacy_export(original):
    @functools.wraps(original)
    def export(model, args, f, **options):
        api.export(model, args, f, dynamo=False, **options)

    export.__torchscript_onnx__ = True
    return export


def _routed_register(original):
    @functools.wraps(original)
    def register_custom_op_symbolic(symbolic_name, symbolic_fn, opset_version):
        registration.register_custom_op_symbolic(symbolic_name, symbolic_fn, opset_version)

    register_custom_op_symbolic.__torchscript_onnx__ = True
    return register_custom_op_symbolic


def _routed_unregister(original):
    @functools.wraps(original)
    def unregister_custom_op_symbolic(symbolic_name, opset_version):
        registration.unregister_custom_op_symbolic(symbolic_name, opset_version)

    unregister_custom_op_symbolic.__torchscript_onnx__ = True
    return unregister_custom_op_symbolic


def _targets() -> list[tuple[object, object]]:
    """(torch's function, its replacement) for each routed entry point."""
    onnx = torch.onnx
    return [
        (onnx.export, _routed_export(onnx.export)),
        (onnx.utils.export, _routed_legacy_export(onnx.utils.export)),
        (onnx.register_custom_op_symbolic, _routed_register(onnx.register_custom_op_symbolic)),
        (onnx.unregister_custom_op_symbolic, _routed_unregister(onnx.unregister_custom_op_symbolic)),
    ]


def is_installed() -> bool:
    return bool(_replaced)


def install() -> None:
    """Route torch's legacy export entry points to this exporter (see the module docstring).

    Idempotent; ``uninstall()`` undoes it.
    """
    if _replaced:
        return
    replacements = {id(original): (original, new) for original, new in _targets()}
    for module_name, module in list(sys.modules.items()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for attribute, value in list(namespace.items()):
            entry = replacements.get(id(value))
            if entry is not None and value is entry[0]:
                _replaced[(module_name, attribute)] = value
                namespace[attribute] = entry[1]


def uninstall() -> None:
    """Put torch's own functions back wherever ``install()`` replaced them."""
    for (module_name, attribute), original in _replaced.items():
        module = sys.modules.get(module_name)
        if module is not None and getattr(getattr(module, attribute, None), "__torchscript_onnx__", False):
            setattr(module, attribute, original)
    _replaced.clear()


@contextlib.contextmanager
def installed() -> Iterator[None]:
    """``with torchscript_onnx.installed(): ...``: routed inside the block, restored after."""
    was_installed = is_installed()
    install()
    try:
        yield
    finally:
        if not was_installed:
            uninstall()
