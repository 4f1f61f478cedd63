"""Export options: the public enums and ``ExportOptions``, where every option is defined once.

``ExportOptions`` holds each option's name, its default (the one ``export``, ``build``, ``audit``
and the CLI show) and its check: making one checks every field once and stores it normalised
(``opset_version=None`` -> ``DEFAULT_OPSET``, names as tuples, ``dynamic_axes`` in the dict form),
or raises naming the argument and what it accepts, before any work. Checks that need the captured
graph (how many inputs exist, which names they have) happen in ``api.py`` right after capture,
still before any conversion or writing.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import numbers
import os
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence

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


def warn_or_raise(message: str, strict: bool) -> None:
    """Warn where the legacy exporter warns; with ``strict=True`` raise instead."""
    if strict:
        raise ValueError(message + " (strict=True makes this an error)")
    warnings.warn(message, OnnxExporterWarning, stacklevel=_caller_stacklevel())


def _caller_stacklevel() -> int:
    """The stacklevel of the first frame outside this package: the warning points at the user's call."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # torchscript_onnx/, above builder/
    frame, level = sys._getframe(1), 1
    while frame is not None and (os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep)
                                 or frame.f_code is ExportOptions.__init__.__code__):  # made by dataclasses
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


def _check_optional_bool(value, argument: str) -> bool | None:
    return None if value is None else _check_bool(value, argument)


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


def _check_metadata_props(value) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"metadata_props must be a dict of str to str; got {type(value).__name__}")
    bad = [(k, v) for k, v in value.items() if not isinstance(k, str) or not isinstance(v, str)]
    if bad:
        raise TypeError(f"metadata_props must map str keys to str values; got {bad[0][0]!r}: {bad[0][1]!r}")
    return dict(value)


@dataclasses.dataclass(frozen=True)
class ExportOptions:
    """The options that decide the exported model, in the legacy positional order, each with the
    default ``export`` shows (its signature reads them from here).

    Constructing one checks every field (type, range, names), once, and stores the normalised
    value: ``opset_version`` an int, ``input_names``/``output_names`` tuples, ``dynamic_axes``
    ``{name: {axis: dim_name}}``, ``keep_initializers_as_inputs`` and ``verbose`` bools,
    ``custom_opsets``/``metadata_props`` dicts. ``named_later``: a predicate of the ``dynamic_axes``
    keys that name what capture names (a transformers cache's tensors), whose check waits for the
    graph. Raises TypeError/ValueError naming the argument and what it accepts.
    """

    export_params: bool = True
    verbose: bool | None = None  # None: torch's public default, meaning False
    training: TrainingMode = TrainingMode.EVAL
    input_names: Sequence[str] | None = None
    output_names: Sequence[str] | None = None
    operator_export_type: OperatorExportTypes = OperatorExportTypes.ONNX
    opset_version: int | None = None  # None: DEFAULT_OPSET
    do_constant_folding: bool = True
    # {graph value name: {axis: dim name}} or {name: [axes]} (names generated, as legacy)
    dynamic_axes: Mapping | None = None
    # None: False, except at opsets 7 and 8 (IR version 3), which list every initializer as an input
    keep_initializers_as_inputs: bool | None = None
    custom_opsets: Mapping[str, int] | None = None
    export_modules_as_functions: bool | frozenset = False
    autograd_inlining: bool = True
    # not legacy options
    optimize: bool = True  # run the graph optimisation passes (optimize/)
    strict: bool = False  # what the legacy exporter only warns about is an error
    value_info: bool = True  # write each intermediate value's dtype and shape
    provenance: bool = True  # write each node's module scope and source lines
    metadata_props: Mapping[str, str] | None = None  # the model's own metadata_props
    named_later: dataclasses.InitVar[Callable[[str], bool] | None] = None

    def __post_init__(self, named_later) -> None:
        # in the order the checks always ran, so a call with two bad arguments names the same one
        opset = check_opset(self.opset_version)
        training = _enum_member(self.training, TrainingMode, "training")
        input_names = _check_names(self.input_names, "input_names")
        output_names = _check_names(self.output_names, "output_names")
        shared = sorted(set(input_names) & set(output_names))
        if shared:
            raise ValueError(
                f"input_names and output_names share {shared}; ONNX needs a distinct name for every graph "
                "input and output"
            )
        strict = _check_bool(self.strict, "strict")
        checked = dict(
            opset_version=opset,
            training=training,
            input_names=input_names,
            output_names=output_names,
            strict=strict,
            optimize=_check_bool(self.optimize, "optimize"),
            dynamic_axes=_check_dynamic_axes(self.dynamic_axes, input_names, output_names, strict, named_later),
            export_params=_check_bool(self.export_params, "export_params"),
            # IR v3 (opsets 7-8) requires every initializer to be listed as a graph input; from
            # opset 9 the legacy default (None) for OperatorExportTypes.ONNX is not to list them.
            keep_initializers_as_inputs=bool(
                _check_optional_bool(self.keep_initializers_as_inputs, "keep_initializers_as_inputs")) or opset < 9,
            do_constant_folding=_check_bool(self.do_constant_folding, "do_constant_folding"),
            operator_export_type=_enum_member(self.operator_export_type, OperatorExportTypes,
                                              "operator_export_type"),
            custom_opsets=_check_custom_opsets(self.custom_opsets),
            autograd_inlining=_check_bool(self.autograd_inlining, "autograd_inlining"),
            # None is the default of torch's public export signature and means False there.
            verbose=bool(_check_optional_bool(self.verbose, "verbose")),
            export_modules_as_functions=_check_modules_as_functions(self.export_modules_as_functions, opset),
            value_info=_check_bool(self.value_info, "value_info"),
            provenance=_check_bool(self.provenance, "provenance"),
            metadata_props=_check_metadata_props(self.metadata_props),
        )
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    @classmethod
    def from_keywords(cls, given: Mapping, function: str = "export", named_later=None) -> ExportOptions:
        """The options a function took by keyword (``build(model, args, opset_version=17)``); an
        unknown name is a TypeError listing the options."""
        unknown = sorted(set(given) - set(OPTION_NAMES))
        if unknown:
            raise TypeError(f"{function}() got unexpected option(s) {unknown}; the options are: "
                            f"{sorted(OPTION_NAMES)}")
        return cls(**given, named_later=named_later)

    @classmethod
    def from_arguments(cls, arguments: Mapping, named_later=None) -> ExportOptions:
        """The options among a function's arguments (``locals()`` of ``export``, whose parameters
        carry the options' names and defaults)."""
        return cls(**{name: arguments[name] for name in OPTION_NAMES}, named_later=named_later)

    def with_training(self, training: TrainingMode) -> ExportOptions:
        """A copy converting in ``training`` mode (the fields are checked already: not again, so
        no warning is repeated)."""
        copy = object.__new__(type(self))
        copy.__dict__.update(self.__dict__)
        object.__setattr__(copy, "training", _enum_member(training, TrainingMode, "training"))
        return copy


# The options' names, in ExportOptions' order (the legacy positional order first).
OPTION_NAMES = tuple(field.name for field in dataclasses.fields(ExportOptions))
