"""Provenance in the file: where each node comes from, as ``NodeProto.metadata_props``.

Under the keys torch.onnx's dynamo exporter writes, formatted as it formats them, so that tools
reading those keys (model explorers, netron's node properties) show the same for both exporters:

- ``namespace``: ``": __main__.Net/encoder: torch.nn.modules.container.Sequential/linear: aten::linear"``
  (each module's qualified name and class, then the op);
- ``pkg.torch.onnx.class_hierarchy``: ``"['__main__.Net', 'torch.nn...Sequential', 'aten::linear']"``;
- ``pkg.torch.onnx.name_scopes``: ``"['', 'encoder', 'linear']"`` (qualified module names, then the op);
- ``pkg.torch.onnx.stack_trace``: Python's traceback form, outermost frame first:
  ``File "net.py", line 12, in forward\\n    return self.encoder(x)\\n  File ...``.

The op is the TorchScript node's kind (``aten::linear``), where dynamo names an ATen overload.
Each ``ir.Origin`` (one per converted TorchScript node) is formatted once, however many ONNX
nodes share it; ``NodeMetadata.entries`` returns those protos.
"""

from __future__ import annotations

import functools
import linecache
import os
import re

import onnx
import torch

from .scopes import scope_atom, script_location, trace_frame, traced_scope_atoms
from ..builder.ir import Node, Origin

NAMESPACE = "namespace"
CLASS_HIERARCHY = "pkg.torch.onnx.class_hierarchy"
NAME_SCOPES = "pkg.torch.onnx.name_scopes"
STACK_TRACE = "pkg.torch.onnx.stack_trace"

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
# frames of torch's call machinery, not of a forward: left out of stack traces, as dynamo does
_CALL_MACHINERY = (os.path.join(_TORCH_DIR, "nn", "modules", "module.py"),)
# from these frames on, the stack is the exporter's and torch's tracer, not the model's
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # torchscript_onnx/, above pipeline/
_EXPORTER_DIRS = (os.path.join(_TORCH_DIR, "jit") + os.sep, _PACKAGE_DIR + os.sep)
_MANGLE = re.compile(r"\.___torch_mangle_\d+")


def class_name(cls: type) -> str:
    """``module.QualName`` as dynamo spells a module's class (``torch.nn.modules.linear.Linear``)."""
    module = getattr(cls, "__module__", None)
    return cls.__name__ if module in (None, "builtins") else f"{module}.{cls.__name__}"


def _module_class(module) -> str:
    """A module's class name; a ScriptModule's is that of the Python class it was scripted from."""
    if isinstance(module, torch.jit.ScriptModule):
        name = module._c._type().qualified_name()
        return _MANGLE.sub("", name.removeprefix("__torch__."))
    return class_name(type(module))


_STOP = "stop"


@functools.lru_cache(maxsize=8192)
def _frame(text: str) -> str | None:
    """One tracer frame (``path(42): forward``) in traceback form with its line of code; None for
    frames left out (call machinery, not a frame), ``_STOP`` where the exporter's frames begin."""
    frame = trace_frame(text)
    if frame is None:
        return None
    path, line, function = frame
    absolute = os.path.abspath(path)
    if absolute.startswith(_EXPORTER_DIRS):
        return _STOP
    if absolute in _CALL_MACHINERY:
        return None
    code = linecache.getline(path, int(line)).strip()
    return f'File "{path}", line {line}, in {function}' + (f"\n    {code}" if code else "")


@functools.lru_cache(maxsize=4096)
def stack_trace(source_range: str) -> str:
    """A TorchScript source range as a Python traceback, outermost frame first, each with its line
    of code; only the model's frames (not the tracer's, the exporter's or module call machinery)."""
    script = script_location(source_range)
    if script:  # a scripted node: its file and line, and the line of code the range marks
        lines = source_range.split("\n")
        marker = next((k for k, line in enumerate(lines) if "<--- HERE" in line), 0)
        code = lines[marker - 1].strip() if marker > 0 else ""
        return f'File "{script[0]}", line {script[1]}' + (f"\n    {code}" if code else "")
    frames = []
    for text in source_range.split("\n"):
        frame = _frame(text)
        if frame is _STOP:
            break
        if frame is not None:
            frames.append(frame)
    return "\n  ".join(reversed(frames))


_JIT_TRACE_ATOM = "__module."  # torch.jit.trace's scope atoms: __module.<qualified name>


def _scope_atoms(scope_name: str, scope: str) -> list[tuple[str | None, str, bool]]:
    """(class or None, scope atom, whether the atom is a qualified name) per module below the root:
    from our tracer's scope name (``__main__.M::/torch.nn...Linear::lin``), torch.jit.trace's
    (``__module.seq/__module.seq.0``, in a traced ScriptModule), else the module path (``/blocks/blocks.0``)."""
    if "::" in scope_name:
        return [(cls or None, name, False) for cls, name in traced_scope_atoms(scope_name)]
    if scope_name.startswith(_JIT_TRACE_ATOM):
        return [(None, part[len(_JIT_TRACE_ATOM):], True) for part in scope_name.split("/")
                if part.startswith(_JIT_TRACE_ATOM)]
    return [(None, atom, False) for atom in scope.split("/")[1:] if atom]


class NodeMetadata:
    """Formats the nodes' provenance; ``model`` (the exported module, if any) gives the root class,
    the modules' qualified names and, for scripted modules, their classes."""

    def __init__(self, model=None):
        self._root = model if isinstance(model, torch.nn.Module) else None
        self._by_atom: dict[str, list[str]] | None = None  # scope atom -> qualified names, built on demand
        self._modules: dict[str, torch.nn.Module] = {}
        self._root_class = _module_class(self._root) if self._root is not None else None
        # id(origin) -> entries: the nodes of one conversion share their Origin (alive in the graph
        # while it is written); equal origins of different JIT nodes share entries by their text
        self._by_origin: dict[int, list[onnx.StringStringEntryProto]] = {}
        self._cache: dict[tuple, list[onnx.StringStringEntryProto]] = {}
        self._scopes: dict[tuple[str, str], tuple[list[str], list[str]]] = {}

    def entries(self, node: Node) -> list[onnx.StringStringEntryProto]:
        """The node's metadata_props entries (shared protos: copy them into a NodeProto)."""
        origin: Origin | None = node.origin
        found = self._by_origin.get(id(origin)) if origin is not None else None
        if found is not None:
            return found
        key = (origin.kind, origin.scope_name, origin.scope, origin.source_range) if origin is not None \
            else (None, "", node.scope, node.source)
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = self._format(*key)
        if origin is not None:
            self._by_origin[id(origin)] = found
        return found

    def _format(self, kind: str | None, scope_name: str, scope: str, source: str) -> list:
        if kind is None and not scope and not source:  # exporter plumbing (an output's Identity)
            return []
        classes, names = self._scope(scope_name, scope)
        if kind is not None:
            classes = [*classes, kind]
            names = [*names, kind.partition("::")[2] or kind]
        props = {}
        if names:
            props[NAMESPACE] = "/".join(f"{name}: {cls}" for name, cls in zip(names, classes))
            props[CLASS_HIERARCHY] = repr(classes)
            props[NAME_SCOPES] = repr(names)
        if kind is not None:
            trace = stack_trace(source)
        else:  # a node a conversion built without the converter's origin: its "file.py:42" only
            path, _, line = source.rpartition(":")
            trace = f'File "{path}", line {line}' if line.isdigit() else source
        if trace:
            props[STACK_TRACE] = trace
        return [onnx.StringStringEntryProto(key=k, value=v) for k, v in props.items()]

    def _scope(self, scope_name: str, scope: str) -> tuple[list[str], list[str]]:
        """(module classes, qualified module names) from the root down, for one scope."""
        found = self._scopes.get((scope_name, scope))
        if found is not None:
            return found
        classes, names = [], []
        if self._root is not None or "::" in scope_name:
            root = scope_name.split("/", 1)[0].rpartition("::")[0]
            classes.append(root or self._root_class or "")
            names.append("")
            parent = ""
            for cls, atom, is_qualified in _scope_atoms(scope_name, scope):
                qualified = atom if is_qualified else self._qualified(parent, atom)
                if cls is None:
                    module = self._module(qualified)
                    cls = _module_class(module) if module is not None else ""
                classes.append(cls)
                names.append(qualified)
                parent = qualified
        self._scopes[(scope_name, scope)] = classes, names
        return classes, names

    def _qualified(self, parent: str, atom: str) -> str:
        """The qualified name (``encoder.layers.0.linear1``) of the submodule whose scope atom
        (``linear1``, ``layers.0``: TorchScript's short form) is ``atom``, inside module ``parent``."""
        if self._root is None:
            return atom
        if self._by_atom is None:
            self._by_atom = {}
            for name, module in self._root.named_modules():
                if name:
                    self._by_atom.setdefault(scope_atom(name), []).append(name)
                    self._modules[name] = module
        candidates = [name for name in self._by_atom.get(atom, ()) if not parent or name.startswith(parent + ".")]
        return candidates[0] if candidates else atom

    def _module(self, qualified: str):
        if self._by_atom is None:
            self._qualified("", "")
        return self._modules.get(qualified)
