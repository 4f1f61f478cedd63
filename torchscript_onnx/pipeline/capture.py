"""Capture: model + example args -> a TorchScript graph with named parameters.

``nn.Module`` and plain functions are traced (``torch.jit._get_trace_graph``), giving a flat graph
whose inputs are the flattened user inputs followed by the parameters and buffers, named by their
``state_dict`` keys. ScriptModules and ScriptFunctions keep their own graph; attribute reads on
``self`` are resolved during conversion. The model's training flags and buffers are restored
afterwards, also when capture fails.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import inspect
import os
import threading
from collections.abc import Iterator
from typing import Any

import torch

from . import hf_cache
from ..builder.heap import _malloc_trim
from ..builder.options import TrainingMode
from .pages import read_ahead_while_tracing
from .prepare.attributes import attributes_restored, lower_attribute_writes, tuple_attributes_to_constants
from .prepare.autograd import inline_autograd_functions
from .prepare.script import dict_outputs_to_tuples, fold_attribute_reads, inline_functions, inline_methods, specialize
from .scopes import scope_atom

_in_export = False


def is_in_onnx_export() -> bool:
    """True while ``export`` runs (for model code that takes an export-only path)."""
    return _in_export


@dataclasses.dataclass
class Captured:
    graph: torch._C.Graph
    user_inputs: list[torch._C.Value]  # flattened user inputs, in legacy order
    params: list[tuple[torch._C.Value, str, torch.Tensor]]  # graph input, state_dict key, tensor
    module: Any = None  # the ScriptModule whose ``self`` is the graph's first input
    param_names: dict[int, str] = dataclasses.field(default_factory=dict)  # id(tensor) -> key
    example_inputs: list[torch.Tensor] = dataclasses.field(default_factory=list)
    scripted: bool = False  # a ScriptModule/ScriptFunction graph: inputs keep their debug names
    example_outputs: list = dataclasses.field(default_factory=list)  # scripted: (dtype, rank) per output
    scopes: dict = dataclasses.field(default_factory=dict)  # scripted: JIT node -> module scope (/b/lin)
    # Names the capture gives (a transformers cache's tensors), by position among the flattened
    # user inputs / outputs; input_names and output_names given to export take precedence.
    input_names: dict[int, str] = dataclasses.field(default_factory=dict)
    output_names: dict[int, str] = dataclasses.field(default_factory=dict)
    optional_inputs: bool = False  # scripted: Optional[Tensor] inputs are ONNX optionals (None or a tensor)


@contextlib.contextmanager
def select_model_mode_for_export(model, mode) -> Iterator[None]:
    """Put ``model`` in the mode export wants; restore every submodule's flag afterwards.

    ``mode`` is a ``TrainingMode`` (ours or torch's member of the same name). PRESERVE leaves
    the flags as they are.
    """
    from ..builder.options import _enum_member

    mode = _enum_member(mode, TrainingMode, "mode")
    # A frozen ScriptModule (torch.jit.freeze) has no training flag left: like legacy, leave it be.
    if not isinstance(model, torch.nn.Module) or mode == TrainingMode.PRESERVE or not hasattr(model, "training"):
        yield
        return
    flags = [(m, m.training) for m in model.modules() if hasattr(m, "training")]
    try:
        model.train(mode == TrainingMode.TRAINING)
        yield
    finally:
        for module, training in flags:
            module.training = training


@contextlib.contextmanager
def _state_preserved(model) -> Iterator[None]:
    """Put back what a forward pass may change: buffers (running stats in training mode, counters,
    reassigned caches) and the parameters' ``requires_grad``. Only buffers that changed are written
    back (batch norm updates its running stats without bumping ``_version``, so values are compared)."""
    if not isinstance(model, torch.nn.Module) or isinstance(model, torch.jit.ScriptModule):
        yield  # scripted models are not run by capture
        return
    buffers = [(m, name, b, b._version, b.detach().clone())
               for m in model.modules() for name, b in m._buffers.items() if b is not None]
    grads = [(p, p.requires_grad) for p in model.parameters()]
    try:
        yield
    finally:
        with torch.no_grad():
            for module, name, buffer, version, copy in buffers:
                if module._buffers.get(name) is not buffer:
                    module._buffers[name] = buffer
                if buffer.shape != copy.shape or buffer.dtype != copy.dtype:
                    buffer.data = copy  # resized or re-typed in place
                elif buffer._version != version or not torch.equal(buffer, copy):
                    buffer.copy_(copy)
        for param, requires_grad in grads:
            if param.requires_grad != requires_grad:
                param.requires_grad_(requires_grad)


@contextlib.contextmanager
def _export_flags(model) -> Iterator[None]:
    """Our flag, torch's own "in ONNX export" flag (so torch's ``is_in_onnx_export()`` agrees inside
    forward), the module map that gives traced nodes their scope names, and torch's transformer
    fast path switched off (``_no_transformer_fast_path``)."""
    global _in_export
    previous_ours = _in_export
    torch_globals = _torch_export_globals()
    previous_torch = torch_globals.in_onnx_export if torch_globals is not None else None
    previous_map = getattr(torch.jit._trace, "_trace_module_map", None)
    _in_export = True
    if torch_globals is not None:
        torch_globals.in_onnx_export = True
    if isinstance(model, torch.nn.Module) and not isinstance(model, torch.jit.ScriptModule):
        torch.jit._trace._trace_module_map = {
            m: f"{torch.typename(type(m))}::{scope_atom(name)}" for name, m in model.named_modules()
        }
    previous_fastpath = _no_transformer_fast_path()
    try:
        yield
    finally:
        torch.backends.mha.set_fastpath_enabled(previous_fastpath)
        _in_export = previous_ours
        if torch_globals is not None:
            torch_globals.in_onnx_export = previous_torch
        torch.jit._trace._trace_module_map = previous_map


def _no_transformer_fast_path() -> bool:
    """Switch off torch's fused transformer path, returning the switch's previous state.

    In eval mode without grad (capture traces under ``no_grad``), nn.TransformerEncoder(Layer) and
    nn.MultiheadAttention take fused kernels (``_transformer_encoder_layer_fwd``,
    ``_native_multi_head_attention``) and, given a key padding mask, nested tensors
    (``_nested_tensor_from_mask``), which ONNX cannot express. The legacy exporter traces with grad
    enabled, and parameters that require grad keep those modules on their plain path; the
    switch ``torch.backends.mha`` offers does the same for every model, also frozen ones."""
    previous = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    return previous


# The one allowed touch of torch's exporters: the legacy exporter's "in ONNX export" flag, which
# torch's ``is_in_onnx_export()`` and code inside forward read. On a torch without the legacy
# exporter the module is gone (and ``install()`` puts legacy_globals.py in its place).
_TORCH_EXPORT_GLOBALS = "torch.onnx._internal.torchscript_exporter._globals"


def _torch_export_globals():
    """torch's legacy ``GLOBALS`` (the holder of ``in_onnx_export``), or None on a torch without it."""
    try:
        holder = getattr(importlib.import_module(_TORCH_EXPORT_GLOBALS), "GLOBALS", None)
    except ImportError:
        return None
    return holder if isinstance(getattr(holder, "in_onnx_export", None), bool) else None


def normalize_args(model, args, kwargs) -> tuple:
    """The legacy input rule: anything but a tuple (a list too) is one positional argument; a
    trailing dict (``kwargs`` is appended as one) holds keyword arguments; parameters after the
    positional ones take their value from it or their default, so the traced positional list
    matches the forward signature (legacy fills defaults even without a trailing dict).

    A forward under a decorator may fill parameters itself (transformers' pass ``use_cache`` from
    the model's config), and a value bound by position then clashes with it ("got multiple values
    for argument"): its keyword arguments are passed by keyword, as eager takes them, and no default
    is filled. Keyword values without a tensor are then fixed at capture (``_TracedCall``). Other
    forwards, and those under torch's own decorators (``torch.no_grad()``, ...), keep the legacy
    rule: a number given by keyword is a graph input."""
    if not isinstance(args, tuple):
        args = (args,)
    if kwargs:
        args = args + (dict(kwargs),)
    named: dict = {}
    if args and isinstance(args[-1], dict):
        named, args = args[-1], args[:-1]
    positional = list(args)
    forward = getattr(model, "forward", model)
    signature = forward_signature(model)
    if signature is None:
        return tuple(positional)
    params = list(signature.parameters.values())
    unknown = set(named) - {p.name for p in params}
    if unknown and not any(p.kind == p.VAR_KEYWORD for p in params):
        raise TypeError(f"args: keyword argument(s) {sorted(unknown)} are not parameters of the model's forward")
    fill = params[len(positional):]
    scripted = isinstance(forward, torch._C.ScriptMethod)
    if scripted:
        # capture binds a scripted forward's defaults from its schema: fill only up to the last
        # parameter args gives
        given = [k for k, p in enumerate(fill) if p.name in named]
        fill = fill[:given[-1] + 1] if given else []
    decorated = not scripted and _wrapper_fills_parameters(forward)
    used = set()
    for p in [] if decorated else fill:
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            break
        if p.name in named:
            positional.append(named[p.name])
            used.add(p.name)
        elif p.default is not p.empty:
            positional.append(p.default)
        else:
            raise TypeError(f"args: the model's forward needs '{p.name}', which args does not give")
    # Keyword-only parameters and names taken by **kwargs are passed by keyword (CallArgs), and
    # every keyword argument of a decorated forward.
    order = {p.name: k for k, p in enumerate(params)}
    keywords = sorted((n for n in named if n not in used and n in order
                       and (decorated or params[order[n]].kind == params[order[n]].KEYWORD_ONLY)), key=order.get)
    keywords += [n for n in named if n not in order]
    if keywords:
        call = CallArgs(positional + [named[n] for n in keywords])
        call.keywords = tuple(keywords)
        _check_arity(model, call)
        return call
    _check_arity(model, tuple(positional))
    return tuple(positional)


def _wrapper_fills_parameters(forward) -> bool:
    """Whether ``forward`` is wrapped by a decorator that is not torch's own: such a wrapper (as
    transformers' ``merge_with_config_defaults``) may pass parameters by keyword itself, which a
    value bound by position would clash with. torch's decorators (``torch.no_grad()``,
    ``torch.inference_mode()``, ...) pass every argument through as given."""
    function = getattr(forward, "__func__", forward)
    code = getattr(function, "__code__", None)
    return (code is not None and hasattr(function, "__wrapped__")
            and not code.co_filename.startswith(_TORCH_PACKAGE))


_TORCH_PACKAGE = os.path.dirname(torch.__file__) + os.sep


def forward_signature(model) -> inspect.Signature | None:
    """The signature a call of ``model`` binds to, or None when Python cannot tell.

    The forward of an old-style ScriptModule subclass (``@torch.jit.script_method``) is a
    ``ScriptMethod`` whose signature still lists ``self``, although the method is bound:
    that ``self`` is dropped."""
    forward = getattr(model, "forward", model)
    try:
        signature = inspect.signature(forward)
    except (TypeError, ValueError):
        return None
    params = list(signature.parameters.values())
    if params and params[0].name == "self" and isinstance(forward, torch._C.ScriptMethod):
        signature = signature.replace(parameters=params[1:])
    return signature


class CallArgs(tuple):
    """Normalised args whose last ``len(keywords)`` entries are passed by keyword."""

    keywords: tuple = ()

    def split(self) -> tuple[tuple, dict]:
        n = len(self) - len(self.keywords)
        return tuple(self[:n]), dict(zip(self.keywords, self[n:]))

    def is_constant(self, k: int) -> bool:
        """Whether entry ``k`` is fixed at capture, not a graph input: a keyword value without a tensor."""
        return k >= len(self) - len(self.keywords) and not _has_tensor(self[k])


def traced_arguments(args: tuple) -> tuple:
    """The entries of normalised ``args`` that a trace takes as inputs, in their order."""
    if not isinstance(args, CallArgs):
        return tuple(args)
    return tuple(a for k, a in enumerate(args) if not args.is_constant(k))


def call_model(model, args: tuple):
    """Call ``model`` with normalised args (keyword entries of ``CallArgs`` by keyword), each
    transformers cache among them copied (the call grows the cache it is given)."""
    positional, keywords = args.split() if isinstance(args, CallArgs) else (args, {})
    positional = [hf_cache.copied(a) if hf_cache.is_cache(a) else a for a in positional]
    keywords = {k: hf_cache.copied(a) if hf_cache.is_cache(a) else a for k, a in keywords.items()}
    return model(*positional, **keywords)


class _TracedCall(torch.nn.Module):
    """Traces ``model`` called as the normalised ``args`` say, with what tracing cannot carry
    made traceable: keyword arguments (tracing passes inputs positionally only; keyword values
    without a tensor stay constants of the trace, as positional Python values do) and
    transformers caches, in the arguments and the outputs (passed as their tensors, see
    hf_cache). ``input_names`` / ``output_names``: the cache tensors' names by their position
    among the flattened inputs / outputs (the outputs' once traced)."""

    def __init__(self, model, args: tuple):
        super().__init__()
        positional, keywords = args.split() if isinstance(args, CallArgs) else (tuple(args), {})
        self.model, self.n_positional = model, len(positional)
        self.constants = {k: v for k, v in keywords.items() if not _has_tensor(v)}
        self.keywords = tuple(k for k in keywords if k not in self.constants)
        given = list(traced_arguments(args))
        parameters = _positional_names(model, len(positional)) + list(self.keywords)
        self.caches: dict[int, hf_cache.CacheLayout] = {}
        self.input_names: dict[int, str] = {}
        for k, value in enumerate(given):
            if not hf_cache.is_cache(value):
                continue
            where = f"args[{k}]" if k < len(positional) else f"kwargs[{parameters[k]!r}]"
            layout = self.caches[k] = hf_cache.layout_of(value, where)
            first = len(torch.jit._flatten(tuple(given[:k]))[0])
            prefix = parameters[k] or hf_cache.INPUT_PREFIX
            self.input_names.update((first + j, name) for j, name in enumerate(layout.names(prefix)))
            given[k] = tuple(layout.tensors(value))
        self.args = tuple(given)
        self.output_names: dict[int, str] = {}

    def forward(self, *args):
        args = [self.caches[k].rebuild(a) if k in self.caches else a for k, a in enumerate(args)]
        n = self.n_positional
        out = self.model(*args[:n], **dict(zip(self.keywords, args[n:])), **self.constants)
        out, self.output_names = hf_cache.outputs_as_tensors(out)
        return out


def _positional_names(model, n: int) -> list[str | None]:
    """The forward's parameter names of the first ``n`` positional arguments (None where unknown)."""
    signature = forward_signature(model)
    params = [p.name for p in signature.parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)] if signature is not None else []
    return (params + [None] * n)[:n]


def _has_tensor(value) -> bool:
    if isinstance(value, torch.Tensor) or hf_cache.is_cache(value):
        return True
    if isinstance(value, (list, tuple)):
        return any(_has_tensor(v) for v in value)
    if isinstance(value, dict):
        return any(_has_tensor(v) for v in value.values())
    return False


def _check_arity(model, args: tuple) -> None:
    """Fail before tracing when ``args`` cannot be passed to the model's forward."""
    signature = forward_signature(model)
    if signature is None:
        return
    try:
        if isinstance(args, CallArgs):
            positional, keywords = args.split()
            signature.bind(*positional, **keywords)
        else:
            signature.bind(*args)
    except TypeError as error:
        raise TypeError(
            f"args do not fit the model's forward{signature}: {error} (args give {len(args)} positional "
            "value(s); a trailing dict in args or kwargs= gives keyword arguments)"
        ) from None


_TRIM_INTERVAL_S = 0.05


@contextlib.contextmanager
def _heap_released_while_tracing() -> Iterator[None]:
    """``release_free_memory`` every 50 ms from a background thread while the model runs.

    The tracer keeps small allocations alive for every node it records (the node, its values and
    types, the text of its source range), made between the model's intermediates; glibc puts them
    into the blocks freed intermediates left, so each layer's intermediates take new pages and the
    heap grows by about their size per layer: GPT-2's trace reached 112 MB above the model for a
    forward pass that needs 26 MB, about 45 MB with the free pages given back every 50 ms (more
    often costs CPU time: the pages fault in again when the next layer needs them).

    A thread, not the module hook of ``_source_ranges_shared_while_tracing``: a trim costs about
    0.2 ms, too much to pay after every module call. ``malloc_trim`` is thread-safe and ctypes
    lets go of the GIL while it runs."""
    trim = _malloc_trim()
    if trim is None:
        yield
        return
    stop = threading.Event()

    def release_until_stopped() -> None:
        while not stop.wait(_TRIM_INTERVAL_S):
            trim(0)

    thread = threading.Thread(target=release_until_stopped, name="torchscript_onnx heap release", daemon=True)
    try:
        thread.start()
    except RuntimeError:  # no thread to be had (a process limit, interpreter shutdown): trace without it
        yield
        return
    try:
        yield
    finally:
        stop.set()
        thread.join()


@contextlib.contextmanager
def _source_ranges_shared_while_tracing() -> Iterator[None]:
    """After each module call of the trace, the nodes the call recorded share one source range per
    text instead of each holding a copy.

    The tracer gives every node it records a copy of the whole Python stack as its source text,
    about 2 KB, and one line of a forward makes many nodes from one stack: ``F.conv2d`` records the
    convolution and the 15 or so constants and lists of its arguments. Those copies were over half the
    heap of a traced graph (DenseNet-121: 6.7 of 12.5 MB), and the graph is what tracing adds to a
    forward pass. With the module map of ``_export_flags`` each call's nodes sit in the block of
    its ``prim::TracedModuleForward``, all in the call's scope, so ``copyMetadata`` from the first
    node of the same text changes nothing the export reads (text and scope) and frees the copy
    while the trace still runs. Nested calls' blocks were shared by their own calls' hooks. Module
    calls in other threads find no tracing state and return at once. The hook puts
    ``Module._call_impl``'s ``inner`` frame into every text, once per module level, and costs about
    5% of a convolutional network's export time; DenseNet-121's traced graph takes 5.4 MB instead
    of 12.5 MB of heap, its export's peak above the model 11.7 MiB instead of 20.2."""

    def share(module, args, output) -> None:
        state = torch._C._get_tracing_state()
        if state is None:
            return
        call = state.graph().insertPoint().prev()
        if call.kind() != "prim::TracedModuleForward":
            return  # a module outside the map records into its caller's block, shared there
        # Its one block, taken without running the iterator to its end, which throws (jit_walk).
        block = next(call.blocks())
        # The nodes one line records are neighbours (the op after its constants and lists), so
        # each is compared with the nearest node before it in the walk (hashing 2 KB texts cost more).
        start, node = block.paramNode(), block.returnNode().prev()
        shared, shared_text = None, None
        while node is not start:
            if node.kind() != "prim::TracedModuleForward":
                text = node.sourceRange()
                if text and text == shared_text:
                    node.copyMetadata(shared)
                elif text:
                    shared, shared_text = node, text
            node = node.prev()

    handle = torch.nn.modules.module.register_module_forward_hook(share)
    try:
        yield
    finally:
        handle.remove()


def capture(model, args: tuple, training: TrainingMode, autograd_inlining: bool = True,
            optional_inputs: bool = False) -> Captured:
    """``optional_inputs``: a scripted forward's ``Optional[Tensor]`` parameters stay graph inputs
    also when args give None for them (ONNX optionals, opset 15 on); else a None binds its
    parameter to None."""
    with select_model_mode_for_export(model, training), _state_preserved(model), _export_flags(model), \
            _heap_released_while_tracing(), _source_ranges_shared_while_tracing(), torch.no_grad(), \
            read_ahead_while_tracing(model):
        if _has_packed_params(model):
            # Packed quantized weights are not tensors: tracing cannot pass them as graph inputs.
            # torch.jit.trace keeps them as module attributes; the symbolics unpack them.
            model = torch.jit.trace(model, tuple(args), check_trace=False)
        if isinstance(model, (torch.jit.ScriptModule, torch.jit.ScriptFunction)):
            captured = _capture_script(model, args, optional_inputs)
        else:
            captured = _capture_trace(model, args)
    if autograd_inlining:
        inline_autograd_functions(captured.graph)
    return captured


def _has_packed_params(model) -> bool:
    """An eager quantized module (torch.ao.nn.quantized) holds ScriptObject packed weights."""
    if not isinstance(model, torch.nn.Module) or isinstance(model, torch.jit.ScriptModule):
        return False
    return any(isinstance(getattr(m, "_packed_params", None), (torch.ScriptObject, torch.nn.Module))
               for m in model.modules())


def _capture_trace(model, args: tuple) -> Captured:
    prev_cache = torch.is_autocast_cache_enabled()
    torch.set_autocast_cache_enabled(False)  # the cache would turn weights into constants
    traced = model
    if isinstance(args, CallArgs) or any(hf_cache.is_cache(a) for a in args) or hf_cache.may_return_cache(model):
        traced = _TracedCall(model, args)
        args = traced.args
    try:
        graph, _ = torch.jit._get_trace_graph(traced, args, strict=False, _force_outplace=False)
    finally:
        torch.set_autocast_cache_enabled(prev_cache)
    state = torch.jit._unique_state_dict(model, keep_vars=True) if isinstance(model, torch.nn.Module) else {}
    inputs = list(graph.inputs())
    n_user = len(inputs) - len(state)
    params = [(inputs[n_user + k], name, tensor) for k, (name, tensor) in enumerate(state.items())]
    names = (traced.input_names, traced.output_names) if isinstance(traced, _TracedCall) else ({}, {})
    return Captured(graph=graph, user_inputs=inputs[:n_user], params=params, input_names=names[0],
                    output_names=names[1])


def _nested_nones(args: tuple) -> int:
    """How many Nones sit inside the tuples, lists and dicts of ``args`` (torch.jit._flatten drops them)."""

    def count(value) -> int:
        if _is_named_tuple(value):  # a None field is typed by the NamedTuple (PackedSequence's indices)
            return sum(count(v) for v in value if v is not None)
        if isinstance(value, (list, tuple)):
            return sum(count(v) for v in value)
        if isinstance(value, dict):
            return sum(count(v) for v in value.values())
        return value is None

    return sum(count(a) for a in args if isinstance(a, (list, tuple, dict)))


def _flat_script_args(args: tuple, arguments: list) -> list:
    """``args`` flattened as the scripted forward's inputs take them: a list given for a List[...]
    parameter stays one input (a sequence, as legacy feeds it), a None given for an Optional one
    stays a None, the rest flatten as torch.jit does."""
    flat = []
    for k, arg in enumerate(args):
        if k < len(arguments) and isinstance(arguments[k].type, torch._C.ListType) and isinstance(arg, list):
            flat.append(list(arg))
        elif arg is None and k < len(arguments) and isinstance(arguments[k].type, torch._C.OptionalType):
            flat.append(None)
        elif _is_named_tuple(arg):
            flat += _flat_named_tuple(arg)
        else:
            flat += torch.jit._flatten((arg,))[0]
    return flat


# Where a NamedTuple argument holds None in a field (bound to None once its fields are inputs)
_NONE_FIELD = object()


def _is_named_tuple(value) -> bool:
    return isinstance(value, tuple) and hasattr(value, "_fields")


def _flat_named_tuple(value) -> list:
    """A NamedTuple's fields flattened as tuple lowering lays them out, its None fields kept."""
    flat = []
    for field in value:
        if field is None:
            flat.append(_NONE_FIELD)
        elif _is_named_tuple(field):
            flat += _flat_named_tuple(field)
        else:
            flat += torch.jit._flatten((field,))[0]
    return flat


def _bind_none_fields(graph: torch._C.Graph, inputs: list, flat: list) -> tuple[list, list]:
    """The inputs of NamedTuple fields given None (a PackedSequence's sorted_indices when its
    sequences came sorted) bound to None; the other inputs and examples returned, aligned."""
    kept = [k for k, example in enumerate(flat) if example is not _NONE_FIELD]
    for k in sorted(set(range(len(flat))) - set(kept), reverse=True):
        _bind_constant(graph, inputs[k], None)
    return [inputs[k] for k in kept], [flat[k] for k in kept]


def _capture_script(model, args: tuple, optional_inputs: bool = False) -> Captured:
    nones = _nested_nones(args)
    if nones:  # the scripted graph's inputs would no longer line up with args, as in legacy
        raise ValueError(f"args contained {nones} None's after flattening. When exporting a ScriptModule or "
                         "ScriptFunction, no args may be None because that breaks type propagation.")
    if isinstance(model, torch.jit.ScriptModule):
        graph = model._c._get_method("forward").graph.copy()
        module = model
        state = torch.jit._unique_state_dict(model, keep_vars=True)
        names = {id(t): n for n, t in state.items()}
        inputs = list(graph.inputs())[1:]
    else:
        graph = model.graph.copy()
        module, names = None, {}
        inputs = list(graph.inputs())
    scopes = inline_methods(graph, module) if module is not None else {}
    inline_functions(graph, scopes)
    dict_outputs_to_tuples(graph)
    written = lower_attribute_writes(graph) if module is not None else set()
    if module is not None:
        tuple_attributes_to_constants(graph, module)
        fold_attribute_reads(graph, module, written)
    schema = model._c._get_method("forward").schema if module is not None else model.schema
    arguments = list(schema.arguments)[len(list(graph.inputs())) - len(inputs):]
    given = args
    inputs, args, arguments = _bind_nones(graph, inputs, args, arguments, optional_inputs)
    flat = _flat_script_args(args, arguments)
    while len(inputs) > len(flat) and arguments[len(inputs) - 1].default_value is not None \
            or len(inputs) > len(flat) and _defaults_to_none(arguments[len(inputs) - 1]):
        _bind_default(graph, inputs.pop(), arguments[len(inputs)])
    _type_given_tuples(inputs, args)
    if len(inputs) != len(flat) and any(isinstance(v.type(), torch._C.TupleType) for v in inputs):
        # tuple arguments (Tuple[Tensor, Tuple[Tensor, Tensor]]) become one graph input per element,
        # as args flatten them (and as legacy lays them out). First fold what the tuple types decide
        # (nn.LSTM's 'hx is None' on a Tuple argument), which the lowering cannot take apart.
        torch._C._jit_pass_peephole(graph, True)
        torch._C._jit_pass_constant_propagation(graph)
        torch._C._jit_pass_dce(graph)
        torch._C._jit_pass_lower_all_tuples(graph)
        inputs = list(graph.inputs())[1:] if module is not None else list(graph.inputs())
    if len(inputs) != len(flat):
        raise TypeError(
            f"args: the scripted forward takes {len(inputs)} tensor input(s), args flatten to {len(flat)}"
        )
    inputs, flat = _bind_none_fields(graph, inputs, flat)
    specialize(graph, inputs, flat)
    return Captured(graph=graph, user_inputs=inputs, params=[], module=module, param_names=names,
                    example_inputs=flat, scripted=True, example_outputs=_example_outputs(model, given, written),
                    scopes=scopes, optional_inputs=optional_inputs)


def _type_given_tuples(inputs: list, args: tuple) -> None:
    """An ``Optional[Tuple[...]]`` parameter given a tuple is typed as that tuple, so it flattens to
    one input per element as a ``Tuple`` parameter does (an LSTM's state passed on by a forward:
    ``hidden: Optional[Tuple[Tensor, Tensor]] = None``), and its ``is None`` tests fold."""
    for value, arg in zip(inputs, args):
        jit_type = value.type()
        if isinstance(arg, tuple) and isinstance(jit_type, torch._C.OptionalType) \
                and isinstance(jit_type.getElementType(), torch._C.TupleType):
            value.setType(jit_type.getElementType())


def _example_outputs(model, args: tuple, written=()) -> list[tuple[torch.dtype, int] | None]:
    """(dtype, rank) of each flattened output of one run on ``args``: a scripted graph types few of
    its values, and ONNX needs both for every graph output (the legacy exporter runs it too).
    Buffers and the attributes the forward ``written`` are put back after the run."""
    buffers = [(b, b.detach().clone()) for b in model.buffers()] if isinstance(model, torch.nn.Module) else []
    try:
        with torch.jit.optimized_execution(False), attributes_restored(model, written):  # one run: no JIT profiling
            outputs = model(*args)
    except Exception as error:
        raise RuntimeError(f"running the scripted model on args failed, so its outputs cannot be typed: "
                           f"{type(error).__name__}: {error}") from error
    finally:
        for buffer, saved in buffers:
            buffer.copy_(saved)
    found: list = []

    def flatten(value) -> None:
        if isinstance(value, (tuple, list)):
            for item in value:
                flatten(item)
        elif isinstance(value, dict):
            for item in value.values():
                flatten(item)
        elif isinstance(value, torch.Tensor):
            found.append((value.dtype, value.dim()))
        elif isinstance(value, (bool, int, float)):
            found.append((torch.tensor(value).dtype if not isinstance(value, float) else torch.float64, 0))
        else:  # None (an optional that is empty) or an object: nothing to type an output by
            found.append(None)

    flatten(outputs)
    return found


def _defaults_to_none(argument) -> bool:
    return argument.has_default_value() and argument.default_value is None


def _bind_nones(graph: torch._C.Graph, inputs: list, args: tuple, arguments: list,
                optional_inputs: bool = False) -> tuple[list, tuple, list]:
    """A None passed for an ``Optional`` argument binds it to None, as in a call (legacy refuses
    any None in a scripted model's args); with ``optional_inputs``, an ``Optional[Tensor]`` one
    stays an input (an ONNX optional, tested at runtime). The other inputs, args and schema
    arguments are returned, still aligned."""
    if len(inputs) != len(args) or not any(a is None for a in args):
        return inputs, args, arguments
    kept = [k for k, (value, arg) in enumerate(zip(inputs, args))
            if not (arg is None and isinstance(value.type(), torch._C.OptionalType))
            or optional_inputs and is_optional_tensor(value)]
    for k in sorted(set(range(len(inputs))) - set(kept), reverse=True):
        _bind_constant(graph, inputs[k], None)
    return [inputs[k] for k in kept], tuple(args[k] for k in kept), [arguments[k] for k in kept]


def is_optional_tensor(value: torch._C.Value) -> bool:
    """Whether a scripted graph's input is an ``Optional[Tensor]``."""
    jit_type = value.type()
    return isinstance(jit_type, torch._C.OptionalType) and isinstance(jit_type.getElementType(), torch._C.TensorType)


def _bind_constant(graph: torch._C.Graph, value: torch._C.Value, constant_value) -> None:
    with graph.insert_point_guard(next(iter(graph.nodes()))):
        constant = graph.insertConstant(constant_value)
    if isinstance(value.type(), torch._C.OptionalType) and constant_value is None:
        constant.setType(value.type())
    value.replaceAllUsesWith(constant)
    graph.eraseInput(value.offset())


def _bind_default(graph: torch._C.Graph, value: torch._C.Value, argument) -> None:
    """A trailing argument the example args leave out takes its default, as in a call."""
    _bind_constant(graph, value, argument.default_value)
