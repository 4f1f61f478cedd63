"""Export options: the public enums and one validation step that runs before any work.

``validate_options`` turns the keyword arguments of ``export`` into a frozen ``ExportOptions`` or
raises naming the argument and what it accepts. Checks that need the captured graph (how many
inputs exist, which names they have) happen in ``api.py`` right after capture, still before any
conversion or writing.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import numbers
import os
import sys
import warnings
from collections.abc import Mapping, Sequence

from .errors import OnnxExporterWarning

MIN_OPSET = 7
MAX_OPSET = 26
# The legacy exporter's default in torch 2.13 (its _constants.ONNX_DEFAULT_OPSET).
DEFAULT_OPSET = 20


class TrainingMode(enum.IntEnum):
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.IntEnum):
    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


@dataclasses.dataclass(frozen=True)
class ExportOptions:
    opset_version: int = DEFAULT_OPSET
    training: TrainingMode = TrainingMode.EVAL
    input_names: tuple[str, ...] = ()
    output_names: tuple[str, ...] = ()
    # {graph value name: {axis: dim name}}, already normalised from the legacy list form.
    dynamic_axes: Mapping[str, Mapping[int, str]] = dataclasses.field(default_factory=dict)
    export_params: bool = True
    keep_initializers_as_inputs: bool = False
    do_constant_folding: bool = True
    operator_export_type: OperatorExportTypes = OperatorExportTypes.ONNX
    custom_opsets: Mapping[str, int] = dataclasses.field(default_factory=dict)
    export_modules_as_functions: bool | frozenset = False
    autograd_inlining: bool = True
    verbose: bool = False
    optimize: bool = True  # run the graph optimisation passes (optimize/)
    strict: bool = False  # what the legacy exporter only warns about is an error


def warn_or_raise(message: str, strict: bool) -> None:
    """Warn where the legacy exporter warns; with ``strict=True`` raise instead."""
    if strict:
        raise ValueError(message + " (strict=True makes this an error)")
    warnings.warn(message, OnnxExporterWarning, stacklevel=_caller_stacklevel())


def _caller_stacklevel() -> int:
    """The stacklevel of the first frame outside this package: the warning points at the user's call."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # torchscript_onnx/, above builder/
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    return level


def _allowed(enum_cls) -> str:
    return ", ".join(f"{enum_cls.__name__}.{m}" for m in enum_cls.__members__)


def _enum_member(value, enum_cls, argument: str):
    """Accept our members and PyTorch's own members of the same name (its ``TrainingMode.EVAL``)."""
    if isinstance(value, enum_cls):
        return value
    name = getattr(value, "name", None)
    if type(value).__name__ == enum_cls.__name__ and isinstance(name, str) and name in enum_cls.__members__:
        return enum_cls[name]
    raise TypeError(f"{argument} must be one of {_allowed(enum_cls)}; got {value!r}")


def _check_bool(value, argument: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{argument} must be True or False; got {value!r}")
    return value


def _check_names(value, argument: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"{argument} must be a list of strings; got {value!r}")
    for name in value:
        if not isinstance(name, str) or not name:
            raise TypeError(f"{argument} must hold non-empty strings; got {name!r}")
    duplicates = sorted(n for n, count in collections.Counter(value).items() if count > 1)
    if duplicates:
        raise ValueError(f"{argument} has duplicate names: {duplicates}; every graph input and output needs its own")
    return tuple(value)


def check_opset(opset_version, argument: str = "opset_version") -> int:
    if opset_version is None:
        return DEFAULT_OPSET
    if isinstance(opset_version, bool) or not isinstance(opset_version, numbers.Integral):
        raise TypeError(f"{argument} must be an int from {MIN_OPSET} to {MAX_OPSET}; got {opset_version!r}")
    opset_version = int(opset_version)
    if not MIN_OPSET <= opset_version <= MAX_OPSET:
        raise ValueError(
            f"{argument}={opset_version} is not supported; choose an opset from "
            f"{MIN_OPSET} to {MAX_OPSET} (onnxruntime runs all of them)"
        )
    return opset_version


def _check_dynamic_axes(value, input_names, output_names, strict: bool,
                        named_later=None) -> dict[str, dict[int, str]]:
    """Normalise both legacy forms; generated names follow legacy: ``<name>_dynamic_axes_<k>``.

    As in legacy, a key that is in neither ``input_names`` nor ``output_names`` is a warning, not
    an error (it still applies if it is the default name of an input or output), and so are the
    list form (names are generated) and an axis given twice (the first wins). Keys for which
    ``named_later(key)`` is true name what capture names (a cache's tensors): their check waits
    for the graph (``unknown_dynamic_axes_warning``).
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"dynamic_axes must be a dict {{name: {{axis: dim_name}} or [axes]}}; got {value!r}")
    named = set(input_names) | set(output_names)
    normalised: dict[str, dict[int, str]] = {}
    for name, axes in value.items():
        if not isinstance(name, str):
            raise TypeError(f"dynamic_axes keys must be input or output names (str); got {name!r}")
        if name not in named and not (named_later is not None and named_later(name)):
            warn_or_raise(unknown_dynamic_axes_warning(name, named), strict)
        if isinstance(axes, Mapping):
            items = list(axes.items())
        elif isinstance(axes, Sequence) and not isinstance(axes, (str, bytes)):
            warn_or_raise(
                f"No names were found for specified dynamic axes of provided input. Automatically generated "
                f"names will be applied to each dynamic axes of input {name}", strict)
            items = [(axis, f"{name}_dynamic_axes_{k}") for k, axis in enumerate(axes, start=1)]
        else:
            raise TypeError(
                f"dynamic_axes[{name!r}] must be a dict {{axis: dim_name}} or a list of axes; got {axes!r}"
            )
        normalised[name] = {}
        for axis, dim_name in items:
            if isinstance(axis, bool) or not isinstance(axis, int):
                raise TypeError(f"dynamic_axes[{name!r}] axes must be ints; got {axis!r}")
            if not isinstance(dim_name, str) or not dim_name:
                raise TypeError(f"dynamic_axes[{name!r}][{axis}] must be a non-empty dim name (str); got {dim_name!r}")
            if axis in normalised[name]:
                warn_or_raise(f"Duplicate dynamic axis index {axis} was provided for input {name}.", strict)
                continue
            normalised[name][axis] = dim_name
    return normalised


def unknown_dynamic_axes_warning(name: str, named) -> str:
    known = ", ".join(repr(n) for n in sorted(named)) or "none given"
    return (f"Provided key {name} for dynamic axes is not a valid input/output name: it is in neither "
            f"input_names nor output_names (names given: {known})")


def _check_custom_opsets(value) -> dict[str, int]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"custom_opsets must be a dict {{domain: version}}; got {value!r}")
    for domain, version in value.items():
        if not isinstance(domain, str) or domain in ("", "ai.onnx", "onnx"):
            raise ValueError(
                f"custom_opsets keys must be custom domain names (str, not the default ONNX domain); got {domain!r}"
            )
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise ValueError(f"custom_opsets[{domain!r}] must be a positive int version; got {version!r}")
    return dict(value)


def _check_modules_as_functions(value, opset: int):
    if value is False:
        return False
    if value is not True:
        if not isinstance(value, (set, frozenset)):
            raise TypeError(
                f"export_modules_as_functions must be True, False or a set of nn.Module classes; got {value!r}"
            )
        import torch

        bad = [c for c in value if not (isinstance(c, type) and issubclass(c, torch.nn.Module))]
        if bad:
            raise TypeError(f"export_modules_as_functions must hold nn.Module classes; got {bad!r}")
    if opset < 15:
        raise ValueError(
            f"export_modules_as_functions needs ONNX local functions, available from opset 15; "
            f"opset_version is {opset}"
        )
    return True if value is True else frozenset(value)


def validate_options(
    *,
    opset_version,
    training,
    input_names,
    output_names,
    dynamic_axes,
    export_params,
    keep_initializers_as_inputs,
    do_constant_folding,
    operator_export_type,
    custom_opsets,
    export_modules_as_functions,
    autograd_inlining,
    verbose,
    optimize=True,
    strict=False,
    named_later=None,
) -> ExportOptions:
    """Check every export option (type, range, names) and return them normalised.

    ``named_later``: a predicate of the ``dynamic_axes`` keys that name what capture names, whose
    check waits for the graph.

    Raises TypeError/ValueError naming the argument and what it accepts, and NotImplementedError
    for options whose other values a later version implements.
    """
    opset = check_opset(opset_version)
    training = _enum_member(training, TrainingMode, "training")
    input_names = _check_names(input_names, "input_names")
    output_names = _check_names(output_names, "output_names")
    shared = sorted(set(input_names) & set(output_names))
    if shared:
        raise ValueError(
            f"input_names and output_names share {shared}; ONNX needs a distinct name for every graph "
            "input and output"
        )
    strict = _check_bool(strict, "strict")
    optimize = _check_bool(optimize, "optimize")
    dynamic_axes = _check_dynamic_axes(dynamic_axes, input_names, output_names, strict, named_later)
    export_params = _check_bool(export_params, "export_params")
    if keep_initializers_as_inputs is not None:
        _check_bool(keep_initializers_as_inputs, "keep_initializers_as_inputs")
    do_constant_folding = _check_bool(do_constant_folding, "do_constant_folding")
    operator_export_type = _enum_member(operator_export_type, OperatorExportTypes, "operator_export_type")
    custom_opsets = _check_custom_opsets(custom_opsets)
    autograd_inlining = _check_bool(autograd_inlining, "autograd_inlining")
    # None is the default of torch's public export signature and means False there.
    verbose = False if verbose is None else _check_bool(verbose, "verbose")
    export_modules_as_functions = _check_modules_as_functions(export_modules_as_functions, opset)
    # IR v3 (opsets 7-8) requires every initializer to be listed as a graph input; from opset 9
    # the legacy default (None) for OperatorExportTypes.ONNX is not to list them.
    keep_inits = True if opset < 9 else bool(keep_initializers_as_inputs)
    return ExportOptions(
        opset_version=opset,
        training=training,
        input_names=input_names,
        output_names=output_names,
        dynamic_axes=dynamic_axes,
        export_params=export_params,
        keep_initializers_as_inputs=keep_inits,
        do_constant_folding=do_constant_folding,
        operator_export_type=operator_export_type,
        custom_opsets=custom_opsets,
        export_modules_as_functions=export_modules_as_functions,
        autograd_inlining=autograd_inlining,
        verbose=verbose,
        optimize=optimize,
        strict=strict,
    )
