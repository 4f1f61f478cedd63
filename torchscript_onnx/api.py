"""The public entry points: ``export`` and ``export_to_pretty_string``.

Every argument is checked before any work; what can only be checked against the captured graph
(how many inputs and outputs there are) is checked right after capture and conversion, still
before a byte is written.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import os
import tempfile
from collections.abc import Callable, Mapping

import numpy as np

import onnx
import torch

from .symbolic import registry

from .pipeline import capture as capture_mod
from .pipeline import hf_cache, progress, serialize
from .artifacts import Artifacts
from .pipeline.convert import convert
from .pipeline.inputs_kept import OPTIONAL_INPUTS_OPSET, drop_unused_inputs, legacy_reads
from .builder.heap import release_free_memory
from .builder.ir import Graph
from .pipeline.legacy_names import name_folded_weights
from .pipeline.optimize import optimize
from .pipeline.prepare import prepare
from .builder.options import (OPTION_NAMES, ExportOptions, OperatorExportTypes, TrainingMode, unknown_dynamic_axes_warning,
                      warn_or_raise)
from .pipeline.printer import graph_text
from .pipeline.provenance import NodeMetadata, _module_class

__version__ = "0.1.0"


@dataclasses.dataclass
class Exported:
    """A converted model: the graph (weights still in the tensors) and its proto without weights.

    Used like dynamo's ``torch.onnx.ONNXProgram``: ``exported(*args, **kwargs)`` runs it in
    onnxruntime on the CPU, ``optimize()`` runs the graph optimisations if the export skipped them,
    ``save(path, external_data=True)`` writes the weights to a data file beside the model.
    """

    graph: Graph
    model: onnx.ModelProto
    options: ExportOptions
    # Positions, among the flattened user inputs, of those that stayed graph inputs (legacy
    # drops inputs the graph does not read): feed ``[flat[k] for k in input_indices]``.
    input_indices: list[int] = dataclasses.field(default_factory=list)
    # The export's stage clock (progress.py): ``save`` logs the write as its last stage.
    clock: progress.Progress | None = dataclasses.field(default=None, repr=False, compare=False)
    # Set by build(): binds a call's arguments as the export bound its example ones (the model's
    # forward signature and defaults); runs the export's optimisation passes on a graph; makes the
    # proto anew from the graph, with the export's settings.
    bind_args: Callable | None = dataclasses.field(default=None, repr=False, compare=False)
    run_passes: Callable[[Graph], None] | None = dataclasses.field(default=None, repr=False, compare=False)
    make_proto: Callable[[Graph], onnx.ModelProto] | None = dataclasses.field(default=None, repr=False,
                                                                               compare=False)
    optimized: bool = False  # whether the optimisation passes have run on the graph
    _session: object = dataclasses.field(default=None, init=False, repr=False, compare=False)
    _session_dir: tempfile.TemporaryDirectory | None = dataclasses.field(default=None, init=False, repr=False,
                                                                         compare=False)

    def to_bytes(self) -> bytes:
        return serialize.to_bytes(self.model, self.graph)

    def to_model_proto(self) -> onnx.ModelProto:
        return onnx.load_from_string(self.to_bytes())

    @property
    def model_proto(self) -> onnx.ModelProto:
        """The model with its weights (``ONNXProgram.model_proto``)."""
        return self.to_model_proto()

    def save(self, f, external_data: bool | None = None) -> None:
        """Write to a path or binary file object; ``external_data``: None = only past protobuf's 2 GiB,
        True = the weights go to ``<file name>.data`` beside ``f`` (a path)."""
        serialize.save(self.model, self.graph, f, external_data=external_data, stage=self.clock)

    def __call__(self, *args, **kwargs) -> tuple:
        """Run the model in onnxruntime (CPU) on the arguments the PyTorch model takes; returns its
        outputs as tensors, flattened as the export flattened them. The session is made on the
        first call and kept (``release()`` frees it)."""
        if not self.options.export_params:
            raise ValueError("this model was exported with export_params=False: it has no weights to run; "
                             "export with export_params=True to call it")
        from .pipeline.comparison import flatten_inputs, run_onnxruntime  # noqa: PLC0415 - loads onnxruntime

        bound = self.bind_args(tuple(args) + (dict(kwargs),), None) if self.bind_args else tuple(args)
        flat = flatten_inputs(tuple(bound))
        if self.input_indices and max(self.input_indices) >= len(flat):
            raise TypeError(f"the exported model takes {len(flat)} flattened input(s) fewer than it was exported "
                            f"with; call it with arguments of the same structure as the export's")
        inputs = [flat[k] for k in self.input_indices]
        outputs = run_onnxruntime(self._inference_session(), inputs)
        return tuple(_as_torch(out) for out in outputs)

    def _inference_session(self):
        if self._session is None:
            try:
                import onnxruntime  # noqa: F401, PLC0415 - an optional dependency
            except ImportError as error:
                raise ImportError("calling an exported model runs it in onnxruntime, which is not installed: "
                                  "pip install onnxruntime (or torchscript-onnx[verify])") from error
            from .pipeline.comparison import session  # noqa: PLC0415

            if serialize.model_size(self.model, self.graph) < serialize.PROTOBUF_LIMIT:
                self._session = session(self.to_bytes())
            else:  # past protobuf's limit: through a file with its weights beside it
                self._session_dir = tempfile.TemporaryDirectory(prefix="torchscript-onnx-")
                path = os.path.join(self._session_dir.name, "model.onnx")
                serialize.save(self.model, self.graph, path, external_data=True)
                self._session = session(path)
        return self._session

    def release(self) -> None:
        """Free the onnxruntime session ``__call__`` made (and its temporary files)."""
        self._session = None
        if self._session_dir is not None:
            self._session_dir.cleanup()
            self._session_dir = None

    def optimize(self) -> None:
        """Run this exporter's graph optimisations (conv + batch norm and weight-transpose
        folding, dead code, CSE, initializer deduplication, ...; optimize/__init__.py), in place.

        export() and build() run them already unless given ``optimize=False``; then this does
        nothing, as the passes are not meant to run twice. (``ONNXProgram.optimize`` runs
        onnxscript's optimizer; onnxruntime applies its own graph optimisations when it loads
        the model.)"""
        if self.optimized or self.run_passes is None:
            return
        self.run_passes(self.graph)
        name_folded_weights(self.graph)
        self.model = self.make_proto(self.graph)
        self.optimized = True
        self.release()


def _as_torch(output):
    """An onnxruntime output as torch: a tensor, or a list of tensors (a sequence output)."""
    if isinstance(output, list):
        return [_as_torch(item) for item in output]
    array = np.asarray(output)
    return torch.from_numpy(array) if array.dtype != object else array


def _check_model(model) -> None:
    if isinstance(model, torch.nn.DataParallel):
        # legacy's words, which programs written for it may look for
        raise ValueError(
            "torch.nn.DataParallel is not supported by ONNX exporter, please use 'attribute' module to "
            "unwrap model from torch.nn.DataParallel. Try torch.onnx.export(model.module, ...)"
        )
    if isinstance(model, (torch.nn.Module, torch.jit.ScriptFunction)):
        return
    if isinstance(model, torch.export.ExportedProgram):
        raise TypeError(
            "model is a torch.export.ExportedProgram; this exporter traces modules: pass model.module() "
            "or the original nn.Module"
        )
    if callable(model) and not isinstance(model, type):
        return
    raise TypeError(
        "model must be a torch.nn.Module, a torch.jit.ScriptModule (e.g. from torch.jit.trace), a "
        f"torch.jit.ScriptFunction or a plain function; got {type(model).__name__}"
        + (" (a class: pass an instance)" if isinstance(model, type) else "")
    )


def _check_f(f) -> None:
    if f is None:
        return
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not path:
            raise ValueError("f must be a file path or a binary file-like object; got an empty path")
        if os.path.isdir(path):
            raise IsADirectoryError(
                f"f={path!r} is a directory; give a file path such as {os.path.join(path, 'model.onnx')!r}"
            )
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise FileNotFoundError(f"f={path!r}: the folder {folder!r} does not exist")
        return
    if callable(getattr(f, "write", None)):
        if isinstance(f, io.TextIOBase) or "b" not in getattr(f, "mode", "b"):
            raise TypeError(
                "f must be a binary file-like object (opened with 'wb', or io.BytesIO()); got a text stream"
            )
        writable = getattr(f, "writable", None)
        if callable(writable) and not writable():
            raise ValueError("f is a file object that is not writable; open it with 'wb'")
        return
    raise TypeError(
        f"f must be None, a str or os.PathLike path, or a binary file-like object; got {type(f).__name__}"
    )


_LEAF_TYPES = (torch.Tensor, bool, int, float, str, type(None), torch.device, torch.dtype)


def _check_arg_tree(value, where: str, argument: bool = False) -> None:
    """Every leaf of ``args``/``kwargs`` must be something tracing accepts; a transformers cache
    only as an ``argument`` of its own, and one that can become tensors (hf_cache)."""
    if hf_cache.is_cache(value):
        if not argument:
            raise TypeError(f"{where} is a {type(value).__name__} inside a list, tuple or dict; pass a "
                            "transformers cache as an argument of its own (past_key_values=cache)")
        hf_cache.layout_of(value, where)
        return
    if isinstance(value, _LEAF_TYPES):
        return
    if isinstance(value, (tuple, list)):
        for k, item in enumerate(value):
            _check_arg_tree(item, f"{where}[{k}]")
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            _check_arg_tree(item, f"{where}[{key!r}]")
        return
    raise TypeError(
        f"{where} is a {type(value).__name__}; args may hold tensors, Python numbers and bools, None, "
        "strings, and tuples, lists and dicts of these (and transformers' DynamicCache or EncoderDecoderCache "
        "as an argument of its own)"
    )


def _check_args(args, kwargs) -> None:
    if kwargs is not None and not isinstance(kwargs, Mapping):
        raise TypeError(f"kwargs must be a dict of keyword arguments; got {type(kwargs).__name__}")
    if kwargs:
        bad = [k for k in kwargs if not isinstance(k, str)]
        if bad:
            raise TypeError(f"kwargs keys must be argument names (str); got {bad!r}")
        for key, item in kwargs.items():
            _check_arg_tree(item, f"kwargs[{key!r}]", argument=True)
    if not isinstance(args, (tuple, list, Mapping, torch.Tensor, int, float, bool)):
        raise TypeError(
            f"args must be a tensor or a tuple of arguments (tensors, numbers, lists, tuples, dicts; "
            f"a trailing dict holds keyword arguments); got {type(args).__name__}"
        )
    if not isinstance(args, tuple):
        _check_arg_tree(args, "args")
        return
    for k, item in enumerate(args):
        if k == len(args) - 1 and isinstance(item, Mapping):  # the trailing dict: keyword arguments
            for key, value in item.items():
                _check_arg_tree(value, f"args[{k}][{key!r}]", argument=True)
        else:
            _check_arg_tree(item, f"args[{k}]", argument=True)


def check_against_graph(captured, options: ExportOptions) -> None:
    n_inputs = len(captured.user_inputs)
    if len(options.input_names) > n_inputs:
        raise ValueError(
            f"input_names has {len(options.input_names)} names but the model has {n_inputs} inputs "
            f"(after flattening args)"
        )


def checked_args(model, args, kwargs) -> tuple:
    """``model``, ``args`` and ``kwargs`` checked (once) and bound as capture takes them."""
    _check_model(model)
    _check_args(args, kwargs)
    return capture_mod.normalize_args(model, args, kwargs)


def options_given(given: Mapping, function: str) -> ExportOptions:
    """The options a function took by keyword, checked; ``dynamic_axes`` keys of a transformers
    cache's names (``past_key_values.0.key``) are checked against the graph (_check_cache_names)."""
    return ExportOptions.from_keywords(given, function, named_later=hf_cache.is_cache_name)


def build(model, args=(), *, kwargs=None, options: ExportOptions | None = None, **option_kwargs) -> Exported:
    """Capture and convert ``model`` without writing anything; ``export`` saves the result.

    ``option_kwargs`` are ``export``'s options by keyword (``ExportOptions``' fields: the legacy
    ones and ``optimize``, ``strict``, ``value_info``, ``provenance``, ``metadata_props``); those
    not given take their defaults. ``options``: the same, already checked (then give no others).
    """
    if options is None:
        options = options_given(option_kwargs, "build")
    elif option_kwargs:
        raise TypeError(f"build() got options= and option keywords {sorted(option_kwargs)}; give one or the other")
    return convert_model(model, checked_args(model, args, kwargs), options)


def convert_model(model, args: tuple, options: ExportOptions, artifacts: Artifacts | None = None) -> Exported:
    """``build`` once the options and arguments are checked: ``args`` as ``checked_args`` bound
    them. ``artifacts`` records the steps for ``export(report=True)`` and dumps the captured graph."""
    artifacts = artifacts or Artifacts(report=False, profile=False, dump_graph=False, artifacts_dir=".")
    clock = progress.Progress()
    artifacts.begin("capture (TorchScript graph)")
    # as legacy, a prim::PythonOp symbolic the user registered takes every Function call: none is inlined
    inlining = options.autograd_inlining and not registry.has_custom("prim::PythonOp", options.opset_version)
    captured = capture_mod.capture(model, args, options.training, inlining,
                                   optional_inputs=options.opset_version >= OPTIONAL_INPUTS_OPSET)
    release_free_memory()  # what the traced forward pass freed
    clock.lap("capture", lambda: progress.jit_counts(captured))
    kept_for_legacy = legacy_reads(captured.graph, captured.user_inputs, options.opset_version)
    prepare(captured.graph)
    clock.lap("prepare", lambda: {"nodes": progress.jit_counts(captured)["nodes"]})
    artifacts.dump(captured.graph)
    check_against_graph(captured, options)
    artifacts.begin(f"conversion to ONNX opset {options.opset_version}")
    graph, ctx = convert(captured, conversion_options(model, options))
    _check_cache_names(graph, options)
    clock.lap("convert", lambda: progress.graph_counts(graph))
    n_user_inputs, scripted = len(captured.user_inputs), captured.scripted
    # Nothing reads the TorchScript graph after conversion: free it (each traced node holds the
    # text of its Python stack, about 2 KB) before optimisation and the proto need memory. Its
    # inputs (user_inputs, params) hold it too: a Value from graph.inputs() keeps its graph alive.
    del captured
    release_free_memory()
    run_passes = functools.partial(
        optimize, training=_exports_training(model, options.training),
        initializers_are_inputs=options.keep_initializers_as_inputs or not options.export_params,
        constant_folding=options.do_constant_folding, opset=options.opset_version)
    if options.optimize:
        artifacts.begin("optimisation")
        run_passes(graph)
        clock.lap("optimize", lambda: progress.graph_counts(graph))
    name_folded_weights(graph)
    artifacts.begin("ONNX model (inputs kept, local functions, metadata)")
    input_indices = drop_unused_inputs(graph, n_user_inputs, kept_for_legacy)
    functions = []
    if options.export_modules_as_functions:
        from .pipeline.functions import extract

        functions = extract(graph, model, options.export_modules_as_functions, options.opset_version,
                            ctx.custom_domains)
    functions += list(ctx.onnxscript_functions.values())
    make_proto = functools.partial(
        _model_proto, custom_domains=ctx.custom_domains, options=options,
        node_metadata=NodeMetadata(model) if options.provenance else None,
        doc_string=_doc_string(model, scripted, options.opset_version), functions=functions)
    return Exported(graph, make_proto(graph), options, input_indices, clock,
                    bind_args=functools.partial(capture_mod.normalize_args, model), run_passes=run_passes,
                    make_proto=make_proto, optimized=options.optimize)


def _check_cache_names(graph: Graph, options: ExportOptions) -> None:
    """The dynamic_axes keys of a cache tensor's name form (``past_key_values.0.key``), whose
    check ``ExportOptions`` left for the graph: each must name an input or output."""
    named = set(options.input_names) | set(options.output_names)
    present = {v.name for v in graph.inputs} | {v.name for v in graph.outputs}
    for name in options.dynamic_axes:
        if name not in named and hf_cache.is_cache_name(name) and name not in present:
            warn_or_raise(unknown_dynamic_axes_warning(name, named), options.strict)


def conversion_options(model, options: ExportOptions) -> ExportOptions:
    """PRESERVE converts as TRAINING when the model is in training mode, else as EVAL (legacy)."""
    if options.training != TrainingMode.PRESERVE:
        return options
    return options.with_training(TrainingMode.TRAINING if getattr(model, "training", False) else TrainingMode.EVAL)


def _exports_training(model, mode: TrainingMode) -> bool:
    if mode == TrainingMode.PRESERVE:
        return isinstance(model, torch.nn.Module) and getattr(model, "training", False)
    return mode == TrainingMode.TRAINING


def _model_proto(graph: Graph, custom_domains: dict[str, int], options: ExportOptions, node_metadata=None,
                 doc_string: str = "", functions=()) -> onnx.ModelProto:
    proto = serialize.model_proto_without_weights(
        graph,
        options.opset_version,
        custom_domains,
        options.keep_initializers_as_inputs or not options.export_params,
        __version__,
        metadata=options.metadata_props,
        value_info=options.value_info,
        node_metadata=node_metadata,
        doc_string=doc_string,
    )
    proto.functions.extend(functions)
    return proto


def _doc_string(model, scripted: bool, opset: int) -> str:
    """The model's description: what was exported, how, and by what."""
    if isinstance(model, torch.nn.Module):
        what = _module_class(model)
    else:
        what = getattr(model, "__qualname__", None) or getattr(model, "name", None) or type(model).__name__
    how = "scripted" if scripted else "traced"
    return f"{what} ({how}), exported to ONNX opset {opset} by torchscript-onnx {__version__}"


def export(
    model,
    args=(),
    f=None,
    *,
    kwargs=None,
    # torch's order; an option's default (and check) is ExportOptions' field of its name
    export_params: bool = ExportOptions.export_params,
    verbose: bool | None = ExportOptions.verbose,
    training: TrainingMode = ExportOptions.training,
    input_names=ExportOptions.input_names,
    output_names=ExportOptions.output_names,
    operator_export_type: OperatorExportTypes = ExportOptions.operator_export_type,
    opset_version: int | None = ExportOptions.opset_version,
    do_constant_folding: bool = ExportOptions.do_constant_folding,
    dynamic_axes=ExportOptions.dynamic_axes,
    keep_initializers_as_inputs: bool | None = ExportOptions.keep_initializers_as_inputs,
    custom_opsets=ExportOptions.custom_opsets,
    export_modules_as_functions=ExportOptions.export_modules_as_functions,
    autograd_inlining: bool = ExportOptions.autograd_inlining,
    dynamo: bool = False,
    external_data: bool | None = None,
    dynamic_shapes=None,
    custom_translation_table=None,
    report: bool = False,
    optimize: bool = ExportOptions.optimize,
    verify: bool = False,
    profile: bool = False,
    dump_exported_program: bool = False,
    artifacts_dir: str | os.PathLike = ".",
    fallback: bool = False,
    strict: bool = ExportOptions.strict,
    value_info: bool = ExportOptions.value_info,
    provenance: bool = ExportOptions.provenance,
    metadata_props: Mapping[str, str] | None = ExportOptions.metadata_props,
):
    """Export ``model`` to ONNX, like the legacy TorchScript exporter (``dynamo=False``).

    Takes every argument of ``torch.onnx.export``; each does what its name says.

    Args:
        model: an ``nn.Module`` or a plain function (traced), or a ``torch.jit.ScriptModule`` /
            ``ScriptFunction`` (from ``torch.jit.script``, ``torch.jit.trace`` or ``torch.jit.load``).
        args: the example inputs: a tensor, or a tuple of arguments (tensors, Python numbers and
            bools, and tuples/lists/dicts of them, flattened depth first into graph inputs). A
            trailing dict in the tuple holds keyword arguments; any other non-tuple (a list too)
            is one positional argument. Python numbers used by the model become graph inputs.
        f: a ``str``/``os.PathLike`` path, written atomically (a temporary file beside the
            target renamed over it only when complete: a failed or interrupted export leaves no
            file and never overwrites an existing one; a symlink's target is replaced and the
            link kept, an existing file keeps its mode, a device or FIFO is written in place),
            or a binary file-like object (``io.BytesIO``). With ``f=None`` nothing is written
            and the ``onnx.ModelProto`` is returned.
        kwargs: keyword arguments of the model, appended to ``args`` as the trailing dict.
        export_params: store the weights as initializers; with False they become graph inputs.
        verbose: print the exported graph as readable text with module scopes. (Stage
            times go to the ``torchscript_onnx`` logger: DEBUG, INFO for exports over 2 s.)
        training: ``TrainingMode.EVAL`` (default), ``TRAINING`` or ``PRESERVE`` (also
            PyTorch's own enum members). The model's training flags are restored afterwards.
        input_names, output_names: names of the flattened graph inputs/outputs, in order; a
            shorter list names a prefix, a longer one is an error.
        operator_export_type: ``OperatorExportTypes.ONNX`` (default), ``ONNX_ATEN``,
            ``ONNX_ATEN_FALLBACK`` or ``ONNX_FALLTHROUGH``, as in legacy.
        opset_version: the ONNX opset, 7 to 26; default 20 (``DEFAULT_OPSET``, the legacy default).
        do_constant_folding: fold constant subgraphs.
        dynamic_axes: ``{name: {axis: dim_name}}`` or ``{name: [axes]}``. As in legacy, a name that
            is neither in input_names nor output_names is warned about (and applies if it is a
            default input/output name); ``strict=True`` makes it an error.
        keep_initializers_as_inputs: also list the initializers as graph inputs; None (default)
            means False. Opsets 7 and 8 (IR version 3) always list them.
        custom_opsets: ``{domain: version}`` for custom domains the symbolics emit.
        export_modules_as_functions: True or a set of nn.Module classes: their calls become ONNX local
            functions (opset 15+; see functions.py).
        autograd_inlining: inline the ops of torch.autograd.Function calls without a ``symbolic``
            (False: such calls need a registered ``prim::PythonOp`` symbolic).
        dynamo: must be False (this is the TorchScript exporter); True is refused with a pointer to
            ``torch.onnx.export``.
        external_data: None (default): weights inside the ``.onnx`` file unless it would pass
            protobuf's 2 GiB limit, then in ``<f>.data`` beside it. True: always in ``<f>.data``.
            False: never (a model past 2 GiB is then an error, raised before writing).
        dynamic_shapes: the ``torch.export`` form of dynamic axes (``torch.export.Dim`` or a name
            per axis, following the structure of the inputs; see dynamic_shapes.py), translated to
            named ``dynamic_axes``. Unnamed inputs it makes dynamic take their forward parameter's name.
        custom_translation_table: the dynamo exporter's op table (onnxscript functions); not
            supported here: register conversions with ``register_custom_op_symbolic`` instead.
        report: write a Markdown report of the export (steps, options, graph summary, error,
            verification, profile) into ``artifacts_dir``, also when the export fails.
        optimize: run the graph optimisation passes (identity and dead-code removal, conv+BN
            folding, initializer de-duplication, CSE). Build-time constant folding follows
            ``do_constant_folding``.
        verify: before writing, check the model with ``onnx.checker`` and compare onnxruntime's
            outputs with PyTorch's on ``args`` (rtol 1e-4, atol 1e-5); a mismatch raises and writes nothing.
            ``torchscript_onnx.verify(model, args, ...)`` does the same without writing and returns a
            report per output name (absolute and relative differences), also at other sizes along the
            dynamic axes (``other_sizes=``); it raises on a mismatch too, unless ``raise_on_mismatch=False``. From a shell: ``torchscript-onnx export`` / ``verify``.
        profile: profile the export (cProfile); printed, or added to the report.
        dump_exported_program: write the captured TorchScript graph into ``artifacts_dir``.
        artifacts_dir: where report, profile and graph dump go (created if needed).
        fallback: accepted for old callers (torch < 2.11 used it to fall back from dynamo to the
            TorchScript exporter, which this is).
        strict: turn what the legacy exporter only warns about into errors.
        value_info: write the dtype and shape of every intermediate value whose dtype is known
            (dims by number, by dynamic-axis name, or unknown) as the graph's ``value_info``, so
            viewers such as netron show them. Not a legacy keyword (legacy writes none).
        provenance: write each node's module scope, module class hierarchy and source lines as
            its ``metadata_props``, under the dynamo exporter's keys (``namespace``,
            ``pkg.torch.onnx.class_hierarchy``, ``pkg.torch.onnx.name_scopes``,
            ``pkg.torch.onnx.stack_trace``). False keeps source paths out of the file.
        metadata_props: ``{str: str}`` written into the model's ``metadata_props`` (author,
            licence, version, ...). Not a legacy keyword.

    Returns:
        None, or the ``onnx.ModelProto`` when ``f`` is None.

    Raises:
        TypeError, ValueError: an argument is invalid (the message names it); raised before any work.
        UnsupportedOperatorError: operators without a conversion at the opset (all of them at once).
        SymbolicValueError: a conversion could not handle one of its values.
        All derive from ``torch.onnx.errors.OnnxExporterError`` where torch has it (argument errors
        are plain TypeError/ValueError). Errors are raised before anything is written.
    """
    given = {name: value for name, value in locals().items() if name in OPTION_NAMES}
    _check_dynamo_options(dynamo, custom_translation_table, fallback, dynamic_shapes, dynamic_axes)
    for flag, name in ((report, "report"), (verify, "verify"), (profile, "profile"),
                       (dump_exported_program, "dump_exported_program")):
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be True or False; got {flag!r}")
    if not isinstance(artifacts_dir, (str, os.PathLike)):
        raise TypeError(f"artifacts_dir must be a folder path (str or os.PathLike); got {artifacts_dir!r}")
    return export_with(model, args, f, given, kwargs=kwargs, external_data=external_data, verify=verify,
                       dynamic_shapes=dynamic_shapes,
                       artifacts=Artifacts(report, profile, dump_exported_program, artifacts_dir))


def export_with(model, args, f, options: ExportOptions | Mapping, *, kwargs=None, external_data: bool | None = None,
                verify: bool = False, dynamic_shapes=None, artifacts: Artifacts | None = None):
    """``export`` once its own switches are checked; ``options`` checked already (an
    ``ExportOptions``, as the CLI makes them) or as given (a mapping of option names to values,
    checked as the export's first step, which a report records). ``dynamic_shapes`` only with the
    options as given: it sets their ``input_names`` and ``dynamic_axes``."""
    given = options if isinstance(options, Mapping) else None
    strict = given.get("strict", False) if given is not None else options.strict
    export_params = given.get("export_params", True) if given is not None else options.export_params
    if external_data is not None and not isinstance(external_data, bool):
        raise TypeError(f"external_data must be True, False or None (automatic); got {external_data!r}")
    _check_f(f)
    if external_data and not isinstance(f, (str, os.PathLike)):
        # legacy ignored external_data, so such calls worked: the weights stay inline (past 2 GiB,
        # saving refuses a file object with its own error)
        warn_or_raise("external_data=True needs f as a path (the weights go to a file beside the model); "
                      "writing them inline", strict)
        external_data = None
    if export_params:
        serialize.check_fits_in_one_proto(model, f)
    bound = None
    if dynamic_shapes is not None:
        from .dynamic_shapes import to_dynamic_axes

        if given is None:
            raise TypeError("dynamic_shapes sets input_names and dynamic_axes: give the options unchecked, "
                            "as a mapping of names to values")
        bound = checked_args(model, args, kwargs)
        input_names, dynamic_axes = to_dynamic_axes(model, bound, dynamic_shapes, given.get("input_names"))
        given = {**given, "input_names": input_names, "dynamic_axes": dynamic_axes}
    artifacts = artifacts or Artifacts(report=False, profile=False, dump_graph=False, artifacts_dir=".")
    shown = given if given is not None else {name: getattr(options, name) for name in OPTION_NAMES}
    artifacts.options = {**shown, "external_data": external_data, "verify": verify}
    artifacts.start()
    exported = comparisons = None
    try:
        artifacts.begin("check the options and arguments")
        if given is not None:
            options = options_given(given, "export")
        artifacts.in_effect(options)
        if bound is None:
            bound = checked_args(model, args, kwargs)
        exported = convert_model(model, bound, options, artifacts)
        if verify:
            artifacts.begin("verification with onnxruntime")
            comparisons = _verify(model, args, kwargs, exported)
            exported.clock.lap("verify")
        if options.verbose:
            print(graph_text(exported.graph, exported.options.opset_version))
        artifacts.begin("save" if f is not None else "return as a ModelProto")
        result = exported.to_model_proto() if f is None else exported.save(f, external_data=external_data)
        exported.clock.finish()
    except BaseException as error:
        artifacts.finish(exported, error, comparisons)
        raise
    artifacts.finish(exported, None, comparisons)
    return result


def _check_dynamo_options(dynamo, custom_translation_table, fallback, dynamic_shapes, dynamic_axes) -> None:
    if dynamo is not False:
        raise ValueError(
            f"dynamo={dynamo!r}: torchscript_onnx is the TorchScript exporter (dynamo=False); for the "
            "torch.export-based exporter call torch.onnx.export(..., dynamo=True)"
        )
    if custom_translation_table:
        raise ValueError(
            "custom_translation_table maps torch ops to onnxscript functions for the dynamo exporter; "
            "this exporter takes conversions through torchscript_onnx.register_custom_op_symbolic(name, fn, opset)"
        )
    if not isinstance(fallback, bool):
        raise TypeError(f"fallback must be True or False; got {fallback!r}")
    if dynamic_shapes is not None and dynamic_axes:
        raise ValueError("give dynamic_shapes or dynamic_axes, not both")


def _verify(model, args, kwargs, exported: Exported) -> list:
    """onnx.checker and onnxruntime against PyTorch on ``args``; raises on a mismatch."""
    from .pipeline.comparison import check, compare

    model_bytes = exported.to_bytes()
    check(model_bytes)
    return compare(model, args, model_bytes, rtol=1e-4, atol=1e-5, kwargs=kwargs,
                   input_indices=exported.input_indices)


def export_to_pretty_string(model, args=(), *, kwargs=None, **options) -> str:
    """The exported graph as readable text with module scopes (weights listed, not printed).

    Takes ``export``'s options by keyword; nothing is written.
    """
    exported = build(model, args, kwargs=kwargs, options=options_given(options, "export_to_pretty_string"))
    return graph_text(exported.graph, exported.options.opset_version)
