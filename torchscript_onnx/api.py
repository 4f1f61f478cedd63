"""The public entry points: ``export`` and ``export_to_pretty_string``.

Every argument is checked before any work; what can only be checked against the captured graph
(how many inputs and outputs there are) is checked right after capture and conversion, still
before a byte is written.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

import onnx
import torch

from . import capture as capture_mod
from . import serialize
from .context import GraphContext
from .convert import convert
from .ir import Graph
from .optimize import optimize
from .prepare import prepare
from .options import ExportOptions, OperatorExportTypes, TrainingMode, validate_options
from .printer import graph_text

__version__ = "0.1.0"


@dataclasses.dataclass
class Exported:
    """A converted model: the graph (weights still in the tensors) and its proto without weights."""

    graph: Graph
    model: onnx.ModelProto
    options: ExportOptions

    def to_bytes(self) -> bytes:
        return serialize.to_bytes(self.model, self.graph)

    def to_model_proto(self) -> onnx.ModelProto:
        return onnx.load_from_string(self.to_bytes())

    def save(self, f) -> None:
        serialize.save(self.model, self.graph, f)


def _check_model(model) -> None:
    if isinstance(model, (torch.nn.Module, torch.jit.ScriptFunction)):
        return
    if callable(model) and not isinstance(model, type):
        return
    raise TypeError(
        f"model must be a torch.nn.Module, a torch.jit.ScriptModule/ScriptFunction or a function; "
        f"got {type(model).__name__}"
    )


def _check_f(f) -> None:
    if f is None:
        return
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        if not path:
            raise ValueError("f must be a file path or a binary file-like object; got an empty path")
        if os.path.isdir(path):
            raise IsADirectoryError(f"f={path!r} is a directory; give a file path such as {os.path.join(path, 'model.onnx')!r}")
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise FileNotFoundError(f"f={path!r}: the folder {folder!r} does not exist")
        return
    if callable(getattr(f, "write", None)):
        if isinstance(f, (onnx.ModelProto,)) or "b" not in getattr(f, "mode", "b"):
            raise TypeError("f must be opened in binary mode ('wb'), e.g. io.BytesIO()")
        return
    raise TypeError(f"f must be a str or os.PathLike path, or a binary file-like object; got {type(f).__name__}")


def _check_args(args, kwargs) -> None:
    if kwargs is not None and not isinstance(kwargs, Mapping):
        raise TypeError(f"kwargs must be a dict of keyword arguments; got {type(kwargs).__name__}")
    if kwargs:
        bad = [k for k in kwargs if not isinstance(k, str)]
        if bad:
            raise TypeError(f"kwargs keys must be argument names (str); got {bad!r}")
    if not isinstance(args, (tuple, list, torch.Tensor, int, float, bool, dict)):
        raise TypeError(
            f"args must be a tensor or a tuple of arguments (tensors, numbers, lists, tuples, dicts); "
            f"got {type(args).__name__}"
        )


def _check_against_graph(captured, options: ExportOptions) -> None:
    n_inputs = len(captured.user_inputs)
    if len(options.input_names) > n_inputs:
        raise ValueError(
            f"input_names has {len(options.input_names)} names but the model has {n_inputs} inputs "
            f"(after flattening args)"
        )


def _check_dynamic_axes(graph: Graph, options: ExportOptions) -> None:
    values = {v.name: v for v in graph.inputs + graph.outputs}
    for name, axes in options.dynamic_axes.items():
        value = values.get(name)
        if value is None:
            known = ", ".join(sorted(values)) or "none"
            raise ValueError(
                f"dynamic_axes names {name!r}, which is neither an input nor an output; "
                f"name inputs and outputs with input_names/output_names (current names: {known})"
            )
        rank = value.rank
        for axis in axes:
            if rank is not None and not -rank <= axis < rank:
                raise ValueError(f"dynamic_axes[{name!r}] has axis {axis}, but {name!r} has rank {rank}")


def build(model, args=(), *, kwargs=None, **option_kwargs) -> Exported:
    """Capture and convert ``model`` without writing anything; ``export`` saves the result."""
    options = validate_options(**option_kwargs)
    _check_model(model)
    _check_args(args, kwargs)
    args = capture_mod.normalize_args(model, args, kwargs)
    captured = capture_mod.capture(model, args, options.training)
    prepare(captured.graph)
    _check_against_graph(captured, options)
    graph, ctx = convert(captured, options)
    _check_dynamic_axes(graph, options)
    optimize(graph, training=_exports_training(model, options.training),
             initializers_are_inputs=options.keep_initializers_as_inputs or not options.export_params)
    model_proto = _model_proto(graph, ctx, options)
    return Exported(graph, model_proto, options)


def _exports_training(model, mode: TrainingMode) -> bool:
    if mode == TrainingMode.PRESERVE:
        return isinstance(model, torch.nn.Module) and model.training
    return mode == TrainingMode.TRAINING


def _model_proto(graph: Graph, ctx: GraphContext, options: ExportOptions) -> onnx.ModelProto:
    return serialize.model_proto_without_weights(
        graph,
        options.opset_version,
        ctx.custom_domains,
        options.keep_initializers_as_inputs or not options.export_params,
        __version__,
    )


def export(
    model,
    args=(),
    f=None,
    *,
    kwargs=None,
    export_params: bool = True,
    verbose: bool = False,
    training: TrainingMode = TrainingMode.EVAL,
    input_names=None,
    output_names=None,
    operator_export_type: OperatorExportTypes = OperatorExportTypes.ONNX,
    opset_version: int | None = None,
    do_constant_folding: bool = True,
    dynamic_axes=None,
    keep_initializers_as_inputs: bool | None = None,
    custom_opsets=None,
    export_modules_as_functions=False,
    autograd_inlining: bool = True,
):
    """Export ``model`` to ONNX, like ``torch.onnx.export(..., dynamo=False)``.

    ``f`` is a path (written atomically) or a binary file-like object. With ``f=None`` nothing is
    written and the ``onnx.ModelProto`` is returned instead.
    """
    _check_f(f)
    exported = build(
        model, args, kwargs=kwargs,
        opset_version=opset_version, training=training, input_names=input_names,
        output_names=output_names, dynamic_axes=dynamic_axes, export_params=export_params,
        keep_initializers_as_inputs=keep_initializers_as_inputs, do_constant_folding=do_constant_folding,
        operator_export_type=operator_export_type, custom_opsets=custom_opsets,
        export_modules_as_functions=export_modules_as_functions, autograd_inlining=autograd_inlining,
        verbose=verbose,
    )
    if verbose:
        print(graph_text(exported.graph, exported.options.opset_version))
    if f is None:
        return exported.to_model_proto()
    exported.save(f)
    return None


def export_to_pretty_string(model, args=(), *, kwargs=None, **options) -> str:
    """The exported graph as readable text with module scopes (weights listed, not printed)."""
    options.setdefault("opset_version", None)
    defaults = dict(
        training=TrainingMode.EVAL, input_names=None, output_names=None, dynamic_axes=None,
        export_params=True, keep_initializers_as_inputs=None, do_constant_folding=True,
        operator_export_type=OperatorExportTypes.ONNX, custom_opsets=None,
        export_modules_as_functions=False, autograd_inlining=True, verbose=False,
    )
    unknown = set(options) - set(defaults) - {"opset_version"}
    if unknown:
        raise TypeError(f"export_to_pretty_string got unexpected option(s): {sorted(unknown)}")
    exported = build(model, args, kwargs=kwargs, **{**defaults, **options})
    return graph_text(exported.graph, exported.options.opset_version)
