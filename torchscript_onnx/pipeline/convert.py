"""Convert: walk the JIT graph in topological order and dispatch each node through the registry.

Before emitting anything, every node kind is looked up once, so an export that cannot succeed
names all of its unsupported ops at once. Errors raised by symbolics get their context here,
once: the aten op, the opset, the module scope, the source line and the inputs.
"""

from __future__ import annotations

import os
import functools
import re

import torch

from ..symbolic import complex_results, registry
from ..symbolic.ops import prim, quantized

from . import capture as capture_module
from ..builder import dtypes, jit_walk, onnx_ops
from .capture import Captured
from ..builder.context import GraphContext
from ..builder.errors import (ConversionIssue, DynamicAxesError, OnnxExporterError, OpsetRequirementError, SymbolicValueError,
                     UnsupportedOp, UnsupportedOperatorError)
from ..builder.ir import Graph, Origin, Value
from .legacy_names import legacy_numbers, live_nodes, number_folds, reader_name
from ..builder.mutation import LIST_MUTATORS, mutated_input, scripted_mutation
from ..builder.options import ExportOptions, OperatorExportTypes, TrainingMode
from .scopes import script_location, trace_frame, traced_scope_atoms


@functools.lru_cache(maxsize=4096)
def scope_path(scope_name: str) -> str:
    """``__main__.M::/torch.nn...Sequential::blocks/...Linear::l`` -> ``/blocks/l``."""
    return "".join(f"/{name}" for _, name in traced_scope_atoms(scope_name) if name)


_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_CAPTURE_FILE = os.path.abspath(capture_module.__file__)  # frames from here on are the exporter's


def source_of(node: torch._C.Node) -> str:
    """``file.py:42``: the innermost frame outside torch that the tracer recorded (the user's
    line calling ``F.linear``, not ``torch/nn/functional.py``), else the innermost frame, or ""."""
    return _source_from_range(node.sourceRange())


@functools.lru_cache(maxsize=4096)
def _source_from_range(text: str) -> str:
    """Many nodes share one recorded range (every node a layer call makes): parse each once."""
    if not text:
        return ""
    script = script_location(text)
    if script:
        return f"{script[0]}:{script[1]}"
    frames = [frame for frame in map(trace_frame, text.split("\n")) if frame]
    if not frames:
        return text.split("\n", 1)[0].strip()
    for path, line, _ in frames:
        path_abs = os.path.abspath(path)
        if path_abs == _CAPTURE_FILE:
            break
        if not path_abs.startswith(_TORCH_DIR):
            return f"{path}:{line}"
    return f"{frames[0][0]}:{frames[0][1]}"


def node_scope(node: torch._C.Node, scripted_scopes: dict | None = None) -> tuple[str, str]:
    """A JIT node's (TorchScript scope name, module path ``/b/lin``). A traced node's scope is the
    tracer's. A scripted graph's nodes are clones of compiled code that carry whatever scope was
    current where that code was first compiled or cloned (a module another model traced, so
    ``/linear`` for every ``nn.Linear``): their path is the one capture's inlining recorded
    (``scripted_scopes``), and their scope name is ignored."""
    if scripted_scopes is not None:
        return "", scripted_scopes.get(node, "")
    scope_name = node.scopeName()
    return scope_name, scope_path(scope_name)


def find_unsupported(jit_graph: torch._C.Graph, opset: int,
                     scripted_scopes: dict | None = None) -> list[UnsupportedOp]:
    missing: dict[str, UnsupportedOp] = {}
    supported: dict[str, bool] = {}
    for node in jit_walk.all_nodes(jit_graph):
        kind = node.kind()
        known = supported.get(kind)
        if known is None:
            known = supported[kind] = registry.is_registered(kind, opset)
        if known:
            continue
        op = missing.get(kind)
        if op is None:
            op = missing[kind] = UnsupportedOp(kind, opset, registry.lowest_supporting_opset(kind))
        op.occurrences.append((node_scope(node, scripted_scopes)[1], source_of(node)))
    return list(missing.values())


_NUMBER_DTYPE = {bool: torch.bool, int: torch.int64, float: torch.float64}
_NUMBER_TYPES = {torch._C.BoolType: torch.bool, torch._C.IntType: torch.int64, torch._C.FloatType: torch.float64}


def _stacked_numbers(ctx: GraphContext, value: Value, jit_value: torch._C.Value) -> Value:
    """A sequence of Python numbers as a 1-D tensor; other values as they are."""
    jit_type = jit_value.type()
    if not value.sequence or not isinstance(jit_type, torch._C.ListType) \
            or isinstance(jit_type.getElementType(), torch._C.TensorType):
        return value
    stacked = ctx.op("ConcatFromSequence", value, axis_i=0, new_axis_i=1)
    stacked.dtype, stacked.shape = value.dtype, (None,)
    return stacked


def _jit_tensor_info(jit_value: torch._C.Value):
    """(dtype, sizes) from a JIT tensor type; either may be None."""
    jit_type = jit_value.type()
    if not isinstance(jit_type, torch._C.TensorType):
        return None, None
    name = jit_type.scalarType()
    dtype = dtypes.SCALAR_NAME_TO_TORCH.get(name) if name else None
    return dtype, jit_type.varyingSizes()


def is_complex(jit_value: torch._C.Value) -> bool:
    """Whether the trace types ``jit_value`` as a complex tensor."""
    jit_type = jit_value.type()
    return isinstance(jit_type, torch._C.TensorType) and (jit_type.scalarType() or "").startswith("Complex")


def makes_complex(jit_value: torch._C.Value) -> bool:
    """Whether ``jit_value`` is complex, by its traced type or, untyped (scripted), by the op that
    makes it (the symbolics' table: ``symbolic/complex_results.py``)."""
    return is_complex(jit_value) or complex_results.makes_complex(jit_value.node())


def has_complex(jit_graph: torch._C.Graph) -> bool:
    """Whether any value of the graph (an input or a node output, nested blocks included) is complex."""
    return any(map(is_complex, jit_graph.inputs())) or any(
        is_complex(node.outputsAt(k)) for node in jit_walk.all_nodes(jit_graph) for k in range(node.outputsSize()))


def _refuse_complex(kind: str, g, *args, **kwargs):
    raise SymbolicValueError(
        f"{kind} of a complex tensor has no conversion (ONNX has no complex type); apply it to x.real and "
        "x.imag, or end the complex value in torch.view_as_real(x), x.abs(), x.angle(), x.real or x.imag first")


# The dtype of the (real, imag) pairs that stand for a complex tensor inside the converter
_COMPLEX_PARTS = {torch.complex64: torch.float32, torch.complex128: torch.float64}
_SCALAR_TYPES = ((torch._C.IntType, torch.int64), (torch._C.FloatType, torch.float64), (torch._C.BoolType, torch.bool))


class Converter:
    """``collect=True`` (``audit``): a node that fails to convert is recorded in ``issues`` (its
    op, scope, source line, message and next step) and its outputs get placeholder values of
    their traced type, so conversion goes on and every failure is found in one pass. Failures of
    nodes that read such placeholders are consequences, counted in ``not_reached``; ops without
    any conversion go to ``unsupported``. Export (``collect=False``) raises the first failure,
    except that a node needing a higher opset (``OpsetRequirementError``) is recorded in
    ``requirements`` and conversion goes on the same way, so ``run`` raises one error naming every
    such node and the opset that converts them all; failures of other kinds after the first
    requirement are listed in that error (``other_failures``), not raised on their own."""

    def __init__(self, captured: Captured, options: ExportOptions, collect: bool = False):
        self.captured = captured
        self.options = options
        self.graph = Graph()
        self.env: dict[int, Value] = {}
        self.issues: list[ConversionIssue] | None = [] if collect else None
        self.unsupported: list[UnsupportedOp] = []
        self.not_reached: list[str] = []  # ops that failed reading a failed node's placeholder outputs
        self.requirements: list[OpsetRequirementError] = []  # export: nodes that need a higher opset
        self.other_failures: list[SymbolicValueError | Exception] = []  # export: after a requirement
        self._tainted: set[int] = set()  # JIT values computed from placeholders
        self._failures = 0
        self.has_complex = False
        self._symbolics: dict[tuple[str, int], object] = {}
        # One copy of each scope name and source range text: every node the tracer records carries
        # its own copy of the Python stack (about 2 KB), and the nodes of a repeated layer all
        # carry the same one (DenseNet-121: 3,373 nodes, 21 distinct texts, 6.6 MB of copies).
        self._texts: dict[str, str] = {}
        self._scripted_scopes = captured.scopes if captured.scripted else None
        self._plumbing = (prim.prim_constant, prim.prim_list_construct)
        self.ctx = GraphContext(
            self.graph,
            options.opset_version,
            options,
            training=options.training == TrainingMode.TRAINING,
            dynamic=bool(options.dynamic_axes),
            param_names=dict(captured.param_names),
            converter=self,
        )

    # -- inputs ------------------------------------------------------------------------------

    def add_inputs(self) -> None:
        names = self.options.input_names
        examples = self.captured.example_inputs
        given = self.captured.input_names  # what capture names (a transformers cache's tensors)
        for k, jit_value in enumerate(self.captured.user_inputs):
            name = names[k] if k < len(names) else given.get(k) or _default_input_name(jit_value, k)
            dtype, sizes = _jit_tensor_info(jit_value)
            if examples and k < len(examples) and isinstance(examples[k], torch.Tensor):
                dtype, sizes = examples[k].dtype, list(examples[k].shape)
            elif examples and k < len(examples) and isinstance(examples[k], (bool, int, float)):
                # Python numbers are 0-d inputs; a float is a double, as in TorchScript and legacy
                dtype, sizes = torch.tensor(examples[k], dtype=_NUMBER_DTYPE[type(examples[k])]).dtype, []
            shape = None if sizes is None else tuple(sizes)
            key = name if k < len(names) or k in given else _dynamic_axes_key(self.options.dynamic_axes, name, k)
            shape = _name_dims(shape, self.options.dynamic_axes.get(key), key)
            if dtype in dtypes.QUANTIZED_STORAGE:
                self.env[jit_value.unique()] = self.add_quantized_input(jit_value, dtype, sizes)
                continue
            if examples and k < len(examples) and isinstance(examples[k], list):
                self.env[jit_value.unique()] = self.add_sequence_input(jit_value, name, examples[k])
                continue
            if self.captured.optional_inputs and capture_module.is_optional_tensor(jit_value):
                self.env[jit_value.unique()] = self.add_optional_input(name, dtype, shape)
                continue
            self.env[jit_value.unique()] = self.graph.add_input(name, dtype, shape)
        if self.captured.module is not None:
            self_value = next(iter(self.captured.graph.inputs()))
            self.env[self_value.unique()] = Value("self", const=self.captured.module)
        for jit_value, name, tensor in self.captured.params:
            self.env[jit_value.unique()] = self.add_param(name, tensor)

    def add_optional_input(self, name: str, dtype: torch.dtype | None, shape) -> Value:
        """An ``Optional[Tensor]`` parameter of a scripted forward as an ONNX optional input, as legacy
        declares it from opset 15, so that whether it holds a tensor is tested at runtime. Given
        None, its element type is unknown: float (legacy's type for a None output), any rank."""
        value = self.graph.add_input(name, dtype or torch.float32, shape)
        value.optional = True
        return value

    def add_sequence_input(self, jit_value: torch._C.Value, name: str, example: list) -> Value:
        """A list argument of a scripted forward (``pad: List[int]``) as one graph input of ONNX
        sequence type, as legacy makes it: numbers are 0-d tensors of the list's element type,
        tensors keep the examples' dtype and the dims they share."""
        if self.options.opset_version < 11:
            raise OpsetRequirementError(11, f"the list input {name!r} (ONNX sequences)")
        element = jit_value.type().getElementType()
        dtype = next((d for kind, d in _NUMBER_TYPES.items() if isinstance(element, kind)), None)
        tensors = [e for e in example if isinstance(e, torch.Tensor)]
        shape = () if dtype is not None or not tensors else tuple(tensors[0].shape)
        for tensor in tensors if dtype is None else []:
            shape = tuple(a if a == b else None for a, b in zip(shape, tensor.shape)) \
                if shape is not None and len(shape) == tensor.dim() else None
        dtype = dtype or (tensors[0].dtype if tensors else torch.float32)
        value = self.graph.add_input(name, dtype, shape)
        value.sequence = True
        return value

    def add_quantized_input(self, jit_value: torch._C.Value, dtype: torch.dtype, sizes) -> Value:
        """A quantized tensor input as legacy lays it out: three graph inputs, ``<name>_value``
        (its integer values), ``<name>_scale`` (0-d double) and ``<name>_zero_point`` (0-d int64),
        named after its TorchScript name; ``input_names`` and ``dynamic_axes`` name them as they
        name any graph input, by position and by name."""
        names, axes, first = self.options.input_names, self.options.dynamic_axes, len(self.graph.inputs)
        base = jit_value.debugName()
        parts = []
        layout = (("value", dtypes.QUANTIZED_STORAGE[dtype], sizes), ("scale", torch.float64, []),
                  ("zero_point", torch.int64, []))
        for i, (suffix, part_dtype, shape) in enumerate(layout):
            name = names[first + i] if first + i < len(names) else f"{base}_{suffix}"
            shape = None if shape is None else tuple(shape)
            parts.append(self.graph.add_input(name, part_dtype, _name_dims(shape, axes.get(name), name)))
        self.ctx.scope, self.ctx.source, self.ctx.origin = "", "", None
        return quantized.graph_input(self.ctx, *parts, dtypes.QUANTIZED_STORAGE[dtype])

    def add_param(self, name: str, tensor: torch.Tensor) -> Value:
        tensor = tensor.detach()
        if self.options.export_params:
            value = self.graph.add_initializer(name, tensor, const=True)
            value.from_weight = True
            return value
        return self.graph.add_input(name, tensor.dtype, tuple(tensor.shape))

    # -- nodes -------------------------------------------------------------------------------

    def check_supported(self) -> None:
        missing = [op for op in find_unsupported(self.captured.graph, self.options.opset_version,
                                                 self._scripted_scopes)
                   if self.fallback(op.name, None) is None]
        if missing and self.issues is not None:
            self.unsupported = missing
        elif missing:
            raise UnsupportedOperatorError(missing, self.options.opset_version)

    def convert_block(self, block) -> None:
        for node in block.nodes():
            self.convert_node(node)

    def inline_block(self, ctx: GraphContext, block) -> list[Value]:
        """Convert a block's nodes into ``ctx``'s own graph (the taken branch of a constant If)."""
        outer, self.ctx = self.ctx, ctx
        saved = (ctx.original_node, ctx.scope, ctx.source, ctx.origin)
        try:
            self.convert_block(block)
        finally:
            self.ctx = outer
            ctx.original_node, ctx.scope, ctx.source, ctx.origin = saved
        return [self.env[v.unique()] for v in block.outputs()]

    def convert_subgraph(self, ctx: GraphContext, block, inputs: list[Value], mutated=(),
                         carried=(), finish=None, scanned=()) -> tuple[Graph, list[Value]]:
        """Convert a JIT block (an If branch, a Loop body) into a subgraph nested in ``ctx``'s graph.

        ``inputs`` type the block's inputs. Every block output is produced inside the subgraph
        (an Identity where the block returns an outer value), as ONNX bodies require.
        ``mutated``: outer JIT values the block mutates; their values at the block's end become
        extra outputs. ``carried`` (loop bodies) types them as extra inputs too. ``finish(ctx, value,
        jit_type)`` prepares each output in the body (lists become sequences) before it is returned.
        ``scanned`` (loop bodies): outer lists the body appends one element to; each starts empty in
        the body and its element is returned last, as a scan output.
        """
        graph = Graph(parent=ctx.graph)
        sub = ctx.subgraph_context(graph)
        saved = {v.unique(): self.env[v.unique()] for v in [*mutated, *scanned]}
        for jit_list in scanned:
            self.env[jit_list.unique()] = Value("", elements=[])
        for jit_input, value in [*zip(block.inputs(), inputs), *zip(mutated, carried)]:
            name = jit_input.debugName().split(".")[0] if not jit_input.debugName().isdigit() else "in"
            self.env[jit_input.unique()] = graph.add_input(f"{ctx.scope}/{name}", value.dtype, value.shape)
            self.env[jit_input.unique()].sequence = value.sequence
            self.env[jit_input.unique()].optional = value.optional
        outer, self.ctx = self.ctx, sub
        try:
            self.convert_block(block)
            outputs = []
            scan_ids = {v.unique() for v in scanned}
            for jit_output in [*block.outputs(), *mutated, *scanned]:
                value = self.env[jit_output.unique()]
                jit_type = jit_output.type()
                if jit_output.unique() in scan_ids:
                    (value,) = value.elements  # its one element this iteration
                    jit_type = jit_type.getElementType()
                if finish is not None:
                    value = finish(sub, value, jit_type)
                value = sub.materialize(value) if not value.sequence else value
                passthrough = value.producer is None or value.producer not in graph.nodes or value in graph.outputs
                if passthrough and value.sequence and ctx.opset >= 14:  # Identity takes sequences from 14
                    copy = sub.op("Identity", value)
                    copy.dtype, copy.shape, copy.sequence = value.dtype, value.shape, True
                    value = copy
                elif passthrough and not value.sequence:
                    value = _identity(sub, graph, value)
                outputs.append(value)
        finally:
            self.ctx = outer
            self.env.update(saved)
        graph.outputs = outputs
        return graph, outputs

    def lookup(self, kind: str, opset: int):
        """``registry.lookup``, once per kind and opset for this export."""
        key = (kind, opset)
        fn = self._symbolics.get(key, self)
        if fn is self:
            fn = self._symbolics[key] = registry.lookup(kind, opset)
        return fn

    def fallback(self, kind: str, fn) -> str | None:
        """How ``operator_export_type`` exports ``kind``: "aten" (an ATen node), "as_is" (the op
        kept in its own namespace), or None (through its conversion)."""
        mode = self.options.operator_export_type
        is_aten = kind.startswith("aten::")
        if mode == OperatorExportTypes.ONNX_ATEN and is_aten:
            return "aten"
        if fn is None and mode == OperatorExportTypes.ONNX_ATEN_FALLBACK and is_aten:
            return "aten"
        if fn is None and mode == OperatorExportTypes.ONNX_FALLTHROUGH:
            return "as_is"
        return None

    def convert_node(self, node: torch._C.Node) -> None:
        self._convert_collecting(node)

    def _convert_collecting(self, node: torch._C.Node) -> None:
        """Convert ``node``; on failure record it and bind placeholders to its outputs (``collect``;
        in export, only for a node that needs a higher opset, or any node once one did)."""
        kind, opset = node.kind(), self.ctx.opset
        downstream = bool(self._tainted) and any(v.unique() in self._tainted for v in jit_walk.inputs(node))
        failures = self._failures
        # audit: ops without any conversion are in self.unsupported (export raised on them up front)
        failed = self.issues is not None and self.lookup(kind, opset) is None and self.fallback(kind, None) is None
        if not failed:
            try:
                self._convert_node(node)
            except Exception as error:  # noqa: BLE001 - recorded, conversion goes on
                failed = True
                consequence = downstream or self._failures > failures  # it read values of a failed node
                if self.issues is None:
                    self._record_for_export(error, consequence)
                elif consequence:
                    self.not_reached.append(kind)
                else:
                    self.issues.append(ConversionIssue.from_error(
                        error, kind, opset, node_scope(node, self._scripted_scopes)[1], source_of(node)))
        if failed:
            self._failures += 1
            for jit_value in jit_walk.outputs(node):
                self.env[jit_value.unique()] = self._placeholder(jit_value)
        if failed or downstream or self._failures > failures:
            self._tainted.update(v.unique() for v in jit_walk.outputs(node))

    def _record_for_export(self, error: Exception, consequence: bool) -> None:
        """Export: keep an opset requirement and go on; raise any other first failure as it is."""
        if consequence:
            return
        requirement = OpsetRequirementError.stated_by(error, self.ctx.opset)
        if requirement is not None:
            self.requirements.append(requirement)
        elif self.requirements:
            self.other_failures.append(error)
        else:
            raise error

    def _placeholder(self, jit_value: torch._C.Value) -> Value:
        """A value of ``jit_value``'s traced type standing for a node that did not convert."""
        jit_type = jit_value.type()
        if isinstance(jit_type, torch._C.NoneType):
            return Value("", const=None)
        node = self.ctx.graph.add_node("Placeholder", "torchscript_onnx.audit", [], {}, 1, self.ctx.scope, self.ctx.source)
        value = node.outputs[0]
        if isinstance(jit_type, torch._C.TensorType):
            self._annotate(value, jit_value)
        elif isinstance(jit_type, torch._C.ListType):
            value.sequence = True
        else:
            value.dtype = next((dtype for cls, dtype in _SCALAR_TYPES if isinstance(jit_type, cls)), None)
            value.shape = ()
        return value

    def _convert_node(self, node: torch._C.Node) -> None:
        ctx = self.ctx
        kind = node.kind()
        fn = self.lookup(kind, ctx.opset)
        jit_inputs = jit_walk.inputs(node)
        inputs = [self.env[v.unique()] for v in jit_inputs]
        if fn in self._plumbing and ctx.parent is None and self._convert_plumbing(node, fn, inputs):
            return
        ctx.original_node = node
        scope_name, ctx.scope = node_scope(node, self._scripted_scopes)
        source_range = node.sourceRange()
        scope_name = self._texts.setdefault(scope_name, scope_name)
        source_range = self._texts.setdefault(source_range, source_range)
        ctx.source = _source_from_range(source_range)
        # one Origin per JIT node, shared by the ONNX nodes its conversion emits (their metadata_props)
        ctx.origin = Origin(kind, scope_name, ctx.scope, source_range)
        if any(v.sequence for v in inputs):  # a list of runtime length: its ONNX sequence conversion
            sequence_fn = self.lookup("sequence::" + kind.partition("::")[2], ctx.opset)
            if sequence_fn is not None:
                fn = sequence_fn
            else:  # an int[]/float[] argument (sizes built in a loop) is a 1-D tensor to any symbolic
                inputs = [_stacked_numbers(ctx, v, j) for v, j in zip(inputs, jit_inputs)]
        how = self.fallback(kind, fn)
        if how is not None:
            fn = functools.partial(_emit_fallback, how=how)
        elif self.has_complex and kind.startswith("aten::") and any(map(is_complex, jit_inputs)):
            # a complex input is a real (..., 2) value: its complex:: conversion knows that layout
            fn = self.lookup("complex::" + kind[len("aten::"):], ctx.opset) or functools.partial(_refuse_complex, kind)
        attrs = {} if kind.startswith("aten::") else _legacy_attributes(node)
        try:
            result = fn(ctx, *inputs, **attrs)
        except SymbolicValueError as error:
            raise error.in_context(kind, ctx.opset, ctx.scope, ctx.source, [_describe(v) for v in inputs])
        except OnnxExporterError:
            raise
        except Exception as error:  # a bug or an unexpected input: report it with its place
            raise SymbolicValueError(f"{type(error).__name__}: {error}").in_context(
                kind, ctx.opset, ctx.scope, ctx.source, [_describe(v) for v in inputs]) from error
        if isinstance(result, Value) and node.outputsSize() == 1 and kind.startswith("aten::"):
            result = self.requantize(node, result)
        if self.captured.scripted or scripted_mutation(node):  # also in a trace's scripted callees
            result = self.rebind_mutations(node, result)
        else:
            self.bind_outputs(node, result)

    def requantize(self, node: torch._C.Node, result: Value) -> Value:
        """An aten op on quantized tensors (its traced output type is quantized): its float result
        quantized as torch quantizes it (``quantized.requantize``)."""
        dtype = _jit_tensor_info(node.outputsAt(0))[0]
        if dtype is None and self.captured.scripted and node.inputsSize():  # untyped: known by its input
            values = quantized.scripted_result_dtype(node.kind(), self.env.get(node.inputsAt(0).unique()))
            return result if values is None else quantized.requantize(self.ctx, node.kind(), result, values)
        if dtype not in dtypes.QUANTIZED_STORAGE:
            return result
        return quantized.requantize(self.ctx, node.kind(), result, dtypes.QUANTIZED_STORAGE[dtype])

    def _convert_plumbing(self, node: torch._C.Node, fn, inputs: list[Value]) -> bool:
        """Most traced nodes are constants and constant lists (2386 + 556 of DenseNet's ~3400): their
        conversions emit nothing, so they need neither scope nor source line (the costly part).
        Only in the outer graph, where nothing reads ``ctx.scope``/``ctx.source`` between nodes.
        Returns False to take the general path (sequences, errors: reported with full context)."""
        if any(v.sequence for v in inputs):
            return False
        self.ctx.original_node = node
        try:
            result = fn(self.ctx, *inputs)
        except Exception:  # noqa: BLE001 - converted again, with context, by the general path
            return False
        if isinstance(result, Value) and node.outputsSize() == 1 and (
                result.elements is not None or result.is_const and not isinstance(result.const, torch.Tensor)
                or result.dtype is not None and result.shape is not None):
            self.env[node.outputsAt(0).unique()] = result  # what bind_outputs does: nothing to annotate
        else:
            self.bind_outputs(node, result)  # prim nodes mutate nothing: rebind_mutations would do the same
        return True

    def value_of(self, jit_value: torch._C.Value) -> Value:
        """``GraphContext.value_of``: what ``jit_value`` stands for so far."""
        return self.env[jit_value.unique()]

    def rebind(self, jit_value: torch._C.Value, value: Value) -> None:
        """``GraphContext.rebind``: later readers of ``jit_value`` get ``value`` (If and Loop rebind
        the outer values their blocks mutate to the node's extra outputs)."""
        self.env[jit_value.unique()] = _wrap(value)

    def rebind_mutations(self, node: torch._C.Node, result):
        """Bind ``node``'s outputs, then point the value it mutates at its new value."""
        kind = node.kind()
        if kind in LIST_MUTATORS:
            new, *rest = result
            self.bind_outputs(node, None if not rest else rest[0] if len(rest) == 1 else tuple(rest))
            self.rebind(node.inputsAt(0), new)
            return
        self.bind_outputs(node, result)
        target = mutated_input(node)
        if target is not None and node.outputsSize():
            new, old = self.env[node.outputsAt(0).unique()], self.env[target.unique()]
            if isinstance(target.type(), torch._C.TensorType) and None not in (new.dtype, old.dtype) \
                    and new.dtype != old.dtype and not new.sequence:
                # an in-place op keeps its tensor's dtype (half.add_(float) stays half); the functional
                # conversion it went through returns the promoted one
                new = onnx_ops.cast(self.ctx, new, old.dtype)
                self.env[node.outputsAt(0).unique()] = new
            self.env[target.unique()] = new

    def bind_outputs(self, node: torch._C.Node, result) -> None:
        outs = jit_walk.outputs(node)
        if result is None:
            results = []
        elif isinstance(result, Value):
            results = [result]
        elif isinstance(result, (tuple, list)):
            results = list(result)
            if len(outs) == 1 and (len(results) != 1 or isinstance(outs[0].type(), torch._C.ListType)):
                results = [Value("", elements=[_wrap(v) for v in results])]
        else:
            results = [Value("", const=result)]
        if len(results) != len(outs):
            raise SymbolicValueError(
                f"the conversion of {node.kind()} returned {len(results)} value(s) for {len(outs)} output(s)"
            )
        for jit_out, value in zip(outs, results):
            value = _wrap(value)
            self._annotate(value, jit_out)
            self.env[jit_out.unique()] = value

    def _annotate(self, value: Value, jit_value: torch._C.Value) -> None:
        """Fill in dtype and shape the trace knows and the shape rules did not derive."""
        if value.elements is not None or (value.is_const and not isinstance(value.const, torch.Tensor)):
            return
        if value.dtype is not None and value.shape is not None:
            return
        dtype, sizes = _jit_tensor_info(jit_value)
        if dtype in _COMPLEX_PARTS:  # the converter's layout of a complex tensor: (..., 2) real
            dtype, sizes = _COMPLEX_PARTS[dtype], None if sizes is None else [*sizes, 2]
        if value.dtype is None:
            value.dtype = dtype
        if value.shape is None and sizes is not None:
            if not self.ctx.dynamic and all(isinstance(d, int) for d in sizes):
                value.shape = tuple(sizes)
            else:
                value.shape = (None,) * len(sizes)

    # -- outputs -----------------------------------------------------------------------------

    def add_outputs(self) -> None:
        ctx, graph = self.ctx, self.graph
        for jit_value in self.captured.graph.outputs():
            value = self.env.get(jit_value.unique())
            if makes_complex(jit_value) or getattr(value, "dtype", None) in _COMPLEX_PARTS:
                error = SymbolicValueError(
                    "the model returns a complex tensor, and ONNX has no complex type: return "
                    "torch.view_as_real(x) or x.abs() instead (view_as_real: real and imaginary parts in a last dim of 2)")
                raise error.in_context("a graph output", ctx.opset, "", source_of(jit_value.node()), [])
        names = self.options.output_names
        flat: list[tuple[Value, str]] = []
        positions: list[int | None] = []  # each flat output's place among torch's flattened outputs
        n_torch_outputs = 0  # outputs as torch counts them: a quantized one is one
        for jit_value in self.captured.graph.outputs():
            value = self.env[jit_value.unique()]
            items = _flatten_output(value)
            n_torch_outputs += len(items)
            if len(items) == 1 and self.is_quantized_output(jit_value, n_torch_outputs - 1):
                flat += self.quantized_output(items[0], jit_value.debugName())
                positions += [None] * 3
                continue
            for k, item in enumerate(items):
                if item.is_none and not item.optional:
                    # a None output: legacy drops it below opset 15 and returns an empty optional from 15
                    if ctx.opset < 15:
                        continue
                    item = _empty_optional(ctx)
                flat.append((item, jit_value.debugName() if len(items) == 1 else ""))
                positions.append(n_torch_outputs - len(items) + k)
        if len(names) > len(flat):
            raise ValueError(f"output_names has {len(names)} names but the model has {len(flat)} outputs")
        seen: set[int] = set()
        hints: list[str] = []
        for value, debug_name in flat:
            ctx.scope, ctx.source, ctx.origin = "", "", None
            value = ctx.materialize(value)
            hint = debug_name
            if value.producer is None or id(value) in seen or value.producer.op_type == "Constant":
                # Not ctx.op: an Identity of a constant would fold away and leave the output without a node.
                node = graph.add_node("Identity", "", [value], {}, 1, ctx.scope, ctx.source)
                node.outputs[0].dtype, node.outputs[0].shape = value.dtype, value.shape
                value, hint = node.outputs[0], ""  # a new value: legacy numbers it
            seen.add(id(value))
            graph.outputs.append(value)
            hints.append(hint)
        live = live_nodes(graph)
        numbers = legacy_numbers(graph, live, self.n_legacy_inputs(), ctx.root.constant_initializers)
        # where legacy's own passes (conv + batch norm folding, constant folding) number their new values from
        graph.legacy_next_number = max(numbers.values(), default=self.n_legacy_inputs() - 1) + 1
        number_folds(graph, live)
        consumers = graph.consumers()
        given = self.captured.output_names  # what capture names (a transformers cache's tensors)
        for k, (value, hint, position) in enumerate(zip(graph.outputs, hints, positions)):
            if k < len(names) or position in given:
                graph.rename(value, names[k] if k < len(names) else given[position])
                continue
            graph.rename(value, _default_output_name(hint, numbers.get(id(value)), consumers.get(id(value))))
            if (not hint or _is_number(hint)) and id(value) in numbers:
                graph.numbered_outputs.add(id(value))
        examples = self.captured.example_outputs
        if len(examples) == n_torch_outputs:  # scripted: what one run shows, where the graph is silent
            for value, position in zip(graph.outputs, positions):
                example = examples[position] if position is not None else None
                if example is not None:
                    value.dtype = value.dtype or example[0]
                    value.shape = (None,) * example[1] if value.shape is None else value.shape
        for value in graph.outputs:
            value.shape = _name_dims(value.shape, self.options.dynamic_axes.get(value.name), value.name)

    def is_quantized_output(self, jit_value: torch._C.Value, position: int) -> bool:
        """Whether graph output ``jit_value`` (the ``position``-th flat output) is a quantized
        tensor: its traced type says so, or (scripted, untyped) the example run's output does."""
        if _jit_tensor_info(jit_value)[0] in dtypes.QUANTIZED_STORAGE:
            return True
        examples = self.captured.example_outputs
        return position < len(examples) and examples[position] is not None \
            and examples[position][0] in dtypes.QUANTIZED_STORAGE

    def quantized_output(self, value: Value, debug_name: str) -> list[tuple[Value, str]]:
        """A quantized tensor output as legacy lays it out: its integer values, its scale (float)
        and its zero point (of the values' type)."""
        self.ctx.scope, self.ctx.source, self.ctx.origin = "", "", None
        values, scale, zero_point = quantized.graph_output(self.ctx, self.ctx.materialize(value))
        return [(values, debug_name), (scale, ""), (zero_point, "")]

    def n_legacy_inputs(self) -> int:
        """How many inputs the legacy exporter's graph has when it numbers values: the user inputs,
        then every parameter and buffer (traced: the whole state_dict, read or not; scripted: those
        the forward reads, lowered to inputs)."""
        params = len(self.captured.params) if not self.captured.scripted else len(self.ctx.root._params)
        return len(self.captured.user_inputs) + params

    def name_inputs_like_legacy(self) -> None:
        """Unnamed inputs without a TorchScript name (``input.1``, ``x.1``) become
        ``onnx::<FirstConsumer>_<k>``, as the legacy exporter names them (``k`` when only a
        subgraph reads them)."""
        given = len(self.options.input_names)
        consumers = self.graph.consumers()
        for k, value in enumerate(self.graph.inputs[: len(self.captured.user_inputs)]):
            if k < given or k in self.captured.input_names or not _is_number(self.captured.user_inputs[k].debugName()):
                continue
            self.graph.rename(value, reader_name(k, consumers.get(id(value))))

    def run(self) -> Graph:
        self.check_supported()
        self.has_complex = has_complex(self.captured.graph)
        self.add_inputs()
        self.convert_block(self.captured.graph)
        if self.requirements:
            raise OpsetRequirementError.for_graph(self.requirements, self.ctx.opset, self.other_failures)
        if self.issues is None:
            self.add_outputs()
        else:
            try:
                self.add_outputs()
            except Exception as error:  # noqa: BLE001 - recorded like a node's failure
                if not self._tainted.intersection(v.unique() for v in self.captured.graph.outputs()):
                    self.issues.append(ConversionIssue.from_error(error, "a graph output", self.ctx.opset, "", ""))
                return self.graph
        self.name_inputs_like_legacy()
        return self.graph


def _is_number(name: str) -> bool:
    return name.isdigit()


def _default_input_name(jit_value: torch._C.Value, k: int) -> str:
    """A traced input keeps the name the tracer gave it (``input.1``, after the first op's
    argument), a scripted one its TorchScript name (``x.1``); the others are named once their
    readers are known (``name_inputs_like_legacy``)."""
    name = jit_value.debugName()
    return f"input_{k}" if _is_number(name) else name


_LEGACY_INPUT_KEY = re.compile(r".+::.+_(\d+)")


def _dynamic_axes_key(dynamic_axes: dict, name: str, k: int) -> str:
    """The dynamic_axes key that names input ``k`` by its default name: ``name`` itself, or the
    legacy name it gets after conversion (``onnx::Conv_0``, ``0``), which only its readers decide."""
    if name in dynamic_axes or not name.startswith("input_"):
        return name
    for key in dynamic_axes:
        match = _LEGACY_INPUT_KEY.fullmatch(key)
        if key == str(k) or match is not None and int(match.group(1)) == k:
            return key
    return name


_NUMBERED_SUFFIX = re.compile(r"\.\d+$")


def _default_output_name(hint: str, number: int | None, users) -> str:
    """Legacy's name for an output: its TorchScript name without the ``.N`` suffix (a scripted
    ``w.1`` is ``w``), else its number (``191``), spelled ``onnx::Relu_9`` when a node reads it."""
    if hint and not _is_number(hint):
        return _NUMBERED_SUFFIX.sub("", hint)
    if number is None:
        return hint or "output"
    return reader_name(number, users)


def _empty_optional(ctx: GraphContext) -> Value:
    """An empty ONNX optional of float tensors (legacy's type for a None graph output)."""
    node = ctx.graph.add_node("Optional", "", [], {"type": ("tp", (torch.float32, None))}, 1, "", "")
    out = node.outputs[0]
    out.dtype, out.optional = torch.float32, True
    return out


def _identity(ctx: GraphContext, graph: Graph, value: Value) -> Value:
    """An Identity node that stays: ``ctx.op`` would fold the Identity of a constant or weight away,
    leaving a block or graph output that no node of its own graph produces."""
    node = graph.add_node("Identity", "", [value], {}, 1, ctx.scope, ctx.source, ctx.origin)
    node.outputs[0].dtype, node.outputs[0].shape = value.dtype, value.shape
    node.outputs[0].optional = value.optional  # an ONNX optional graph input returned as it came
    return node.outputs[0]


def _name_dims(shape, axes, name: str):
    """``shape`` with the dims that dynamic_axes names replaced by their names."""
    if not axes or shape is None:
        return shape
    dims = list(shape)
    for axis, dim_name in axes.items():
        if not -len(dims) <= axis < len(dims):
            raise DynamicAxesError(f"dynamic_axes[{name!r}] has axis {axis}, but {name!r} has rank {len(dims)}")
        dims[axis] = dim_name
    return tuple(dims)


def _flatten_output(value: Value) -> list[Value]:
    if value.elements is not None:
        return [item for e in value.elements for item in _flatten_output(e)]
    if value.is_const and isinstance(value.const, (list, tuple)):
        return [item for e in value.const for item in _flatten_output(_wrap(e))]
    return [value]


def _wrap(item) -> Value:
    if isinstance(item, Value):
        return item
    if isinstance(item, (list, tuple)):
        return Value("", elements=[_wrap(e) for e in item])
    if isinstance(item, torch.Tensor):
        return Value("", item.dtype, tuple(item.shape), item)
    return Value("", const=item)


def _describe(value: Value) -> str:
    if value.elements is not None:
        return "[" + ", ".join(_describe(e) for e in value.elements) + "]"
    if value.is_const and not isinstance(value.const, torch.Tensor):
        return repr(value.const)
    dtype = str(value.dtype).replace("torch.", "") if value.dtype is not None else "?"
    shape = "?" if value.shape is None else "[" + ", ".join("?" if d is None else str(d) for d in value.shape) + "]"
    return f"{dtype}{shape}"


def _overload_name(node: torch._C.Node) -> str:
    try:
        return node.schema().split("(", 1)[0].partition(".")[2]
    except RuntimeError:  # no schema (prim ops, custom ops without one)
        return ""


def _emit_fallback(g, *inputs, how: str, **attrs):
    """The node as an ATen op (``org.pytorch.aten::ATen``) or as itself in its namespace.

    Tensor and number inputs stay inputs (numbers as constants); strings become attributes
    ``arg<k>`` since ONNX tensors cannot hold them."""
    node = g.original_node
    namespace, name = node.kind().split("::", 1)
    values, extra = [], {}
    for k, value in enumerate(inputs):
        if value.is_none:
            values.append(None)
        elif value.is_const and isinstance(value.const, str):
            extra[f"arg{k}_s"] = value.const
        else:
            values.append(value)
    n_outputs = node.outputsSize()
    if how == "aten":
        return g.at(name, *values, overload_name=_overload_name(node), outputs=n_outputs, **extra, **attrs)
    return g.op(f"{namespace}::{name}", *values, outputs=n_outputs, **extra, **attrs)


def _legacy_attributes(node: torch._C.Node) -> dict:
    """Attributes of non-aten nodes passed as ``name_kind`` keywords, as the legacy exporter does."""
    attrs = {}
    for name in node.attributeNames():
        kind = node.kindOf(name)
        if name == "value" and node.kind() == "prim::Constant":
            continue
        reader = getattr(node, kind, None)
        if reader is not None and kind not in ("g", "gs"):
            attrs[f"{name}_{kind}"] = reader(name)
    return attrs


def convert(captured: Captured, options: ExportOptions) -> tuple[Graph, GraphContext]:
    converter = Converter(captured, options)
    graph = converter.run()
    # Conversion is over, so the context has no more blocks to convert. Without its link back, the
    # converter goes as soon as this returns, with its map from JIT values to ONNX values (which
    # holds values and tensors optimisation drops) and its reference to the captured JIT graph:
    # in that cycle, DenseNet-121's 12 MB graph waited for the garbage collector while the file
    # was written.
    converter.ctx.converter = None
    converter.ctx.original_node = None  # a JIT node keeps its whole graph alive
    return graph, converter.ctx
