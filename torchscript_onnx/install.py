"""Opt-in: torch's legacy ONNX entry points served by this exporter, on any torch.

For code users cannot edit (HF optimum, ultralytics, scripts written for the legacy exporter),
``install()`` makes ``torch.onnx`` answer as the legacy exporter did, with this exporter behind it:

- ``torch.onnx.export`` exports with ``torchscript_onnx.export`` when the call passes
  ``dynamo=False`` or does not pass ``dynamo`` at all (programs written for torch <= 2.8, where
  that was the legacy exporter); ``dynamo=True`` and ``torch.export.ExportedProgram`` models still
  go to torch. ``install(dynamo_default=True)`` keeps torch 2.9's routing of calls without ``dynamo``.
  The options after ``f`` may be passed positionally, in torch 2.0's order.
  ``torch.onnx.is_in_onnx_export()`` answers True inside our exports too, whichever flag this
  torch's own answer reads.
- torch.onnx's legacy modules are ours: ``utils``, ``symbolic_helper`` and ``symbolic_opset7`` ...
  ``symbolic_opset20`` under torch.onnx (as attributes and in ``sys.modules``, so later imports get
  ours), with ``register_custom_op_symbolic`` / ``unregister_custom_op_symbolic`` (which fill our
  registry), ``utils.unconvertible_ops`` (which asks it) and ``select_model_mode_for_export``. A
  function of torch's legacy modules that a program bound before ``install()`` is routed to ours
  of the same name, wherever it is held; so is the helper a legacy decorator calls (``parse_args``
  calls ``_parse_arg``), so symbolics decorated earlier read our values.
- On a torch without the legacy exporter, its other names are put back, served by ours:
  ``JitScalarType``, ``TrainingMode``, ``OperatorExportTypes``, ``TensorProtoDataType``, the
  functions above, and torch 2.0's ``SymbolicContext`` (a symbolic whose first parameter is
  annotated with it receives one, as in torch 2.0); and the legacy exporter's ``GLOBALS``
  (``legacy_globals.py``), which the tracer, ``torch.onnx.is_in_onnx_export`` and libraries read.

This module is the one place the package touches ``torch.onnx``'s namespace, and only when the
user calls ``install()``: the opt-in the project's stand-alone rule allows. The routed calls run our
exporter; nothing of torch's produces or checks their result.

Functions are replaced wherever a loaded module holds them (``from torch.onnx import export`` in a
library imported before ``install()`` is routed too). ``uninstall()`` undoes every change, putting
torch's objects back and removing what was added, except where the program has since replaced
our object with its own.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterator

import torch

from . import api, registration, utils
from .builder import dtypes, options

# The legacy modules of torch.onnx this exporter can stand in for: name under torch.onnx -> ours.
LEGACY_MODULES = {
    "utils": "torchscript_onnx.utils",
    "symbolic_helper": "torchscript_onnx.symbolic.symbolic_helper",
    **{f"symbolic_opset{n}": f"torchscript_onnx.symbolic.symbolic_opset{n}" for n in range(7, 21)},
}
# Legacy modules others still import, put back under their names where torch no longer has them.
LEGACY_INTERNAL_MODULES = {
    "torch.onnx._internal.torchscript_exporter._globals": "torchscript_onnx.legacy_globals",
}
# The other legacy names of torch.onnx -> ours, put there where torch no longer has them (where it does,
# its functions are routed to ours and its enums stay: ours accept their members).
LEGACY_NAMES = {
    "register_custom_op_symbolic": utils.register_custom_op_symbolic,
    "unregister_custom_op_symbolic": utils.unregister_custom_op_symbolic,
    "select_model_mode_for_export": utils.select_model_mode_for_export,
    "SymbolicContext": registration.SymbolicContext,  # gone since torch 2.1; custom symbolics annotate with it
    "JitScalarType": dtypes.JitScalarType,
    "TensorProtoDataType": dtypes.TensorProtoDataType,
    "OperatorExportTypes": options.OperatorExportTypes,
    "TrainingMode": options.TrainingMode,
}

_ABSENT = object()
# Every change install() made, in order: (namespace, key, what was there or _ABSENT, what we put).
_changes: list[tuple[dict, str, object, object]] = []
_dynamo_default: bool | None = None


def is_installed() -> bool:
    return _dynamo_default is not None


def install(*, dynamo_default: bool = False) -> None:
    """Serve torch's legacy ONNX entry points with this exporter (see the module docstring).

    ``dynamo_default``: what ``torch.onnx.export`` does with a call that does not pass ``dynamo``.
    False (default): this exporter, as in torch <= 2.8. True: torch's dynamo exporter, as in torch 2.9+.
    Idempotent; ``uninstall()`` undoes it.
    """
    global _dynamo_default
    if not isinstance(dynamo_default, bool):
        raise TypeError(f"dynamo_default must be True or False; got {dynamo_default!r}")
    if is_installed():
        if dynamo_default != _dynamo_default:
            raise ValueError(f"already installed with dynamo_default={_dynamo_default}; call "
                             "torchscript_onnx.uninstall() first to change it")
        return
    _dynamo_default = dynamo_default
    try:
        routes = _routes(dynamo_default)  # read torch's functions before its modules are replaced
        _provide_legacy_modules()
        _provide_missing_legacy_names()
        _route(routes)
    except BaseException:
        uninstall()
        raise


def uninstall() -> None:
    """Undo ``install()``: torch's objects go back, what it added goes away."""
    global _dynamo_default
    for namespace, key, previous, ours in reversed(_changes):
        if namespace.get(key, _ABSENT) is not ours:
            continue  # the program put its own object there since: leave it
        if previous is _ABSENT:
            del namespace[key]
        else:
            namespace[key] = previous
    _changes.clear()
    _dynamo_default = None


@contextlib.contextmanager
def installed(*, dynamo_default: bool = False) -> Iterator[None]:
    """``with torchscript_onnx.installed(): ...``: installed inside the block, as before after it."""
    was_installed = is_installed()
    install(dynamo_default=dynamo_default)
    try:
        yield
    finally:
        if not was_installed:
            uninstall()


def _set(namespace: dict, key: str, value) -> None:
    _changes.append((namespace, key, namespace.get(key, _ABSENT), value))
    namespace[key] = value


# -- torch's legacy modules and names, served by ours -------------------------------------------------


def _torch_has_module(name: str) -> bool:
    if name in sys.modules:
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:  # a parent that is gone, or an import hook that refuses the name
        return False


def _provide_legacy_modules() -> None:
    """Our modules under torch.onnx's legacy names, as attributes and in ``sys.modules``, so later
    imports (``import torch.onnx.symbolic_helper``, ``from torch.onnx import utils``) get ours."""
    onnx_namespace = vars(torch.onnx)
    for name, ours in LEGACY_MODULES.items():
        module = importlib.import_module(ours)
        _set(sys.modules, f"torch.onnx.{name}", module)
        _set(onnx_namespace, name, module)


def _provide_missing_legacy_names() -> None:
    for name, ours in LEGACY_INTERNAL_MODULES.items():
        if not _torch_has_module(name):
            _set(sys.modules, name, importlib.import_module(ours))
    if "torch.onnx.__init__" not in sys.modules:
        # The tracer imports torch.onnx by this name for each autograd.Function it records, which
        # runs torch/onnx/__init__.py a second time, and on a torch without the legacy exporter
        # that second run can import what is gone: let it find the loaded torch.onnx.
        _set(sys.modules, "torch.onnx.__init__", torch.onnx)
    onnx_namespace = vars(torch.onnx)
    for name, ours in LEGACY_NAMES.items():
        if name not in onnx_namespace:
            _set(onnx_namespace, name, ours)


# -- routing torch's functions to ours ---------------------------------------------------------------


def _routes(dynamo_default: bool) -> dict[int, tuple[Callable, Callable]]:
    """id(torch's function) -> (torch's function, ours): ``torch.onnx.export``, the legacy entry points
    of ``torch.onnx``, and every function of torch's legacy modules that ours have by the same name."""
    onnx = torch.onnx
    routes = [(onnx.export, _routed_export(onnx.export, dynamo_default)),
              (onnx.is_in_onnx_export, _routed_is_in_onnx_export(onnx.is_in_onnx_export))]
    for name, ours in LEGACY_MODULES.items():
        routes += _module_routes(name, importlib.import_module(ours))
    return {id(original): (original, ours) for original, ours in routes if original is not None and original is not ours}


def _module_routes(name: str, ours) -> list[tuple[Callable, Callable]]:
    """(torch's function, ours) for each function torch's legacy module ``name`` defines and ours has:
    a program that imported it by name, or a legacy decorator that calls it (``parse_args`` calls
    ``_parse_arg``), reaches ours. Each function is taken from the module that defines it."""
    routes = []
    for torch_module in _torch_legacy_modules(name):
        for attribute, value in vars(torch_module).items():
            if (callable(value) and getattr(value, "__module__", None) == torch_module.__name__
                    and not attribute.startswith("__") and hasattr(ours, attribute)):
                routes.append((value, getattr(ours, attribute)))
    return routes


def _torch_legacy_modules(name: str) -> list:
    """torch's loaded modules that hold its legacy ``name`` (its ``torch.onnx.<name>`` re-exports
    ``torch.onnx._internal.torchscript_exporter.<name>`` in torch 2.9+)."""
    candidates = (vars(torch.onnx).get(name), sys.modules.get(f"torch.onnx.{name}"),
                  sys.modules.get(f"torch.onnx._internal.torchscript_exporter.{name}"))
    found = {id(m): m for m in candidates if m is not None and not m.__name__.startswith("torchscript_onnx")}
    return list(found.values())


def _route(routes: dict[int, tuple[Callable, Callable]]) -> None:
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for key, value in list(namespace.items()):
            route = routes.get(id(value))
            if route is not None and value is route[0]:
                _set(namespace, key, route[1])


def _routed_is_in_onnx_export(torch_is_in_onnx_export: Callable) -> Callable:
    def is_in_onnx_export() -> bool:
        """``torch.onnx.is_in_onnx_export`` after ``torchscript_onnx.install()``: True inside an
        export by torchscript_onnx too, also on a torch whose own answer reads only its dynamo
        exporter's flag."""
        return utils.is_in_onnx_export() or torch_is_in_onnx_export()

    is_in_onnx_export.__module__ = torch_is_in_onnx_export.__module__
    return is_in_onnx_export


_NOT_GIVEN = object()


def _routed_export(torch_export: Callable, dynamo_default: bool) -> Callable:
    def export(model, args=(), f=None, *positional_options, dynamo=_NOT_GIVEN, **options):
        """``torch.onnx.export`` after ``torchscript_onnx.install()``: ``dynamo=False`` (or, by
        default, no ``dynamo``) exports with torchscript_onnx; ``dynamo=True`` with torch's exporter."""
        if dynamo is _NOT_GIVEN:
            dynamo = dynamo_default
        if dynamo or isinstance(model, _dynamo_only_models()):
            return torch_export(model, args, f, *positional_options, dynamo=True, **options)
        result = api.export(model, args, f, **utils.with_positional_options(positional_options, options))
        return result if f is None else None

    export.__name__ = export.__qualname__ = "export"
    export.__module__ = torch_export.__module__
    return export


def _dynamo_only_models() -> tuple[type, ...]:
    """Model types torch sends to its dynamo exporter whatever ``dynamo`` says."""
    types = [torch.export.ExportedProgram]
    exportable = getattr(torch.onnx, "ExportableModule", None)
    if isinstance(exportable, type):
        types.append(exportable)
    return tuple(types)
