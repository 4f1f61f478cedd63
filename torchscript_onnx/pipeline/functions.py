"""``export_modules_as_functions``: the nodes of chosen module classes as ONNX local functions.

Every converted node carries the scope of the module instance it came from (``/blocks/0/attn``).
The nodes of one call of a chosen instance (a contiguous run with that scope prefix) are hoisted into
a FunctionProto and replaced by one call node, innermost modules first, so functions nest as in
legacy (``True`` selects every module, the model itself included). Calls with the same body share
one function named after the class, in the class's module as domain (as legacy:
``torch.nn.modules.linear::Linear``); node attributes whose values differ between those calls
(constants' values included) become function attributes (``inferred::Conv_kernel_shape``), as
legacy. Instances whose bodies differ in structure get legacy's variant names ``Class.1``,
``Class.2``... Weights stay initializers of the main graph, passed as function inputs. The module's
annotated hyperparameters (``in_features: int``, ``eps: float``...) are attributes of the call,
declared by the function, as the legacy exporter records them (see ``hyperparameters``).
"""

from __future__ import annotations

import importlib
import typing

import onnx
import torch
from onnx import helper

from . import serialize
from ..builder.ir import Graph, Node
from .optimize.subgraphs import subgraph_references

_SCALARS = (bool, int, float, str)


def instance_paths(model: torch.nn.Module, selection) -> dict[str, torch.nn.Module]:
    """``/blocks/0`` -> module (``/`` the model itself) for every module whose class is selected
    (True: every module)."""
    chosen = {}
    for name, module in model.named_modules():
        if selection is True or module_class(module) in selection:
            chosen["/" + name.replace(".", "/")] = module
    return chosen


def module_class(module: torch.nn.Module) -> type:
    """The Python class of a module; a scripted one's is found from its TorchScript class name
    (``__torch__.pkg.mod.Block``), if it can be imported (archives may hold classes that cannot)."""
    if not isinstance(module, torch.jit.RecursiveScriptModule):
        return type(module)
    parts = [p for p in module._c._type().qualified_name().split(".")
             if p != "__torch__" and not p.startswith("___torch_mangle")]
    try:
        return getattr(importlib.import_module(".".join(parts[:-1])), parts[-1])
    except (ImportError, AttributeError, ValueError):
        return type(module)


def _depth(path: str) -> int:
    return 0 if path == "/" else path.count("/")


def called_modules(scope: str, known: set[str]) -> list[str]:
    """The module paths (as ``named_modules`` spells them) of the calls a node scope lies in,
    outermost first: one per scope atom.

    The tracer names a container's child by its last name and index (``layers.0``): under the
    module holding the container when the container is not called itself (``/encoder/layers.0``:
    ``/encoder``, ``/encoder/layers/0``; the ModuleList has no call, so no function, as in legacy),
    under the container's own scope when it is (``/blocks/blocks.0``: ``/blocks``, ``/blocks/0``).
    ``known`` holds the model's module paths."""
    parts: list[str] = []
    called = []
    for atom in scope.split("/")[1:]:
        segments = atom.split(".")
        candidates = [parts + segments]
        if parts and segments[0] == parts[-1]:
            candidates.append(parts[:-1] + segments)
        parts = next((c for c in candidates if "/" + "/".join(c) in known), candidates[0])
        called.append("/" + "/".join(parts))
    return called


def _call_scope(scope: str, path: str, known: set[str]) -> str:
    """The scope of the call of module ``path`` that ``scope`` lies in, in the tracer's spelling:
    a call node keeps it, so an outer module's run finds it as the tracer's nodes."""
    if path == "/":
        return ""
    atoms = scope.split("/")[1:]
    return "/" + "/".join(atoms[: called_modules(scope, known).index(path) + 1])


def _owner(scope: str, paths: dict[str, torch.nn.Module], known: set[str]) -> str | None:
    """The outermost chosen instance whose call ``scope`` lies in."""
    if "/" in paths:
        return "/"
    return next((path for path in called_modules(scope, known) if path in paths), None)


def hyperparameters(module: torch.nn.Module) -> dict:
    """The module's annotated attributes that legacy records on a call: the type hints of its class
    minus nn.Module's, whose values are numbers, strings or lists of numbers (legacy skips tuples,
    None and other objects). Legacy also copies tensor attributes (``weight``, ``bias``) into every
    call node, doubling the weights in the file; here they are the function's inputs only."""
    try:
        hints = typing.get_type_hints(module_class(module))
        base = typing.get_type_hints(torch.nn.Module)
    except Exception:  # unresolvable annotations: no attributes
        return {}
    found = {}
    for name in hints:
        if name in base or name.startswith("_"):
            continue
        value = getattr(module, name, None)
        if isinstance(value, _SCALARS) or _is_number_list(value):
            found[name] = value
    return found


def _is_number_list(value) -> bool:
    """A list legacy records (an int, float or bool list; not a tuple, not mixed)."""
    if not isinstance(value, list) or not value:
        return False
    kinds = {bool if isinstance(v, bool) else int if isinstance(v, int) else float if isinstance(v, float) else None
             for v in value}
    return len(kinds) == 1 and None not in kinds


def _runs(graph: Graph, paths: dict[str, torch.nn.Module], known: set[str]) -> list[tuple[str, int, int]]:
    """(instance path, start, end) of each contiguous run of nodes from one chosen instance."""
    runs, current, owners = [], None, {}
    for k, node in enumerate(graph.nodes):
        if node.scope not in owners:
            owners[node.scope] = _owner(node.scope, paths, known) if node.scope or "/" in paths else None
        owner = owners[node.scope]
        if current is not None and owner == current[0]:
            current[2] = k + 1
            continue
        if current is not None:
            runs.append(tuple(current))
        current = [owner, k, k + 1] if owner is not None else None
    if current is not None:
        runs.append(tuple(current))
    return runs


def _body(nodes: list[Node], graph: Graph, later_reads: set[int], output_ids: set[int]):
    """(inputs, outputs) of a run: values it reads that it does not produce, and values it produces
    that nodes after it, subgraphs or the graph outputs read."""
    produced = {id(v) for n in nodes for v in n.outputs}
    inputs, seen = [], set()
    for node in nodes:
        for v in node.inputs:
            if v is not None and id(v) not in produced and id(v) not in seen:
                seen.add(id(v))
                inputs.append(v)
    outputs = [v for n in nodes for v in n.outputs if id(v) in later_reads or id(v) in output_ids]
    return inputs, outputs


def _outer_names_read(nodes: list[Node], produced_names: set[str], graph: Graph) -> list:
    """Values of the enclosing graph that subgraph attributes of ``nodes`` read by name."""
    probe = Graph()
    probe.nodes = nodes
    names = subgraph_references(probe) - produced_names
    by_name = {v.name: v for v in graph.inputs}
    by_name.update({v.name: v for n in graph.nodes for v in n.outputs})
    for name, tensor in graph.initializers.items():
        by_name.setdefault(name, name)
    return [by_name[n] for n in sorted(names) if n in by_name]


def _signature(nodes: list[Node], inputs: list, outputs: list) -> bytes:
    """The run's structure with its values renamed by position and attribute values left out:
    equal for bodies that one function with attribute parameters can express."""
    local = {id(v): f"i{k}" for k, v in enumerate(inputs)}
    proto = onnx.GraphProto()
    for node in nodes:
        for v in node.outputs:
            local.setdefault(id(v), f"v{len(local)}")
        proto.node.append(onnx.NodeProto(
            op_type=node.op_type, domain=node.domain,
            input=["" if v is None else local[id(v)] for v in node.inputs],
            output=[local[id(v)] for v in node.outputs],
            attribute=[onnx.AttributeProto(name=k, type=serialize._attribute(k, kind, v).type)
                       for k, (kind, v) in sorted(node.attrs.items())]))
    proto.output.extend(onnx.ValueInfoProto(name=local[id(v)]) for v in outputs)
    return proto.SerializeToString(deterministic=True)


class _Run:
    __slots__ = ("path", "start", "end", "nodes", "kept", "inputs", "outputs", "module")

    def __init__(self, **fields):
        for key, value in fields.items():
            setattr(self, key, value)


def _collect(graph: Graph, paths, known: set[str], output_ids: set[int]) -> list[_Run]:
    readers: dict[int, list[int]] = {}
    for k, node in enumerate(graph.nodes):
        for v in node.inputs:
            if v is not None:
                readers.setdefault(id(v), []).append(k)
    in_bodies = subgraph_references(graph)  # names read inside If/Loop bodies (a superset)
    found = []
    for path, start, end in _runs(graph, paths, known):
        nodes = graph.nodes[start:end]
        if all(_is_constant(n) for n in nodes):
            continue
        later_reads = {id(v) for n in nodes for v in n.outputs
                       if v.name in in_bodies or any(not start <= k < end for k in readers.get(id(v), ()))}
        body_nodes, kept = _with_constants(nodes, later_reads | output_ids)
        inputs, _ = _body(body_nodes, graph, later_reads, output_ids)
        outputs = [v for n in nodes if not _is_constant(n) for v in n.outputs
                   if id(v) in later_reads or id(v) in output_ids]
        produced_names = {v.name for n in body_nodes for v in n.outputs}
        for extra in _outer_names_read(body_nodes, produced_names, graph):
            if isinstance(extra, str):  # an initializer known only by name
                extra = next((v for n in graph.nodes for v in n.inputs if v is not None and v.name == extra),
                             None)
            if extra is not None and all(extra is not v for v in inputs):
                inputs.append(extra)
        if outputs:
            found.append(_Run(path=path, start=start, end=end, nodes=body_nodes, kept=kept, inputs=inputs,
                              outputs=outputs, module=paths[path]))
    return found


def _varying(runs: list[_Run]) -> dict[tuple[int, str], str]:
    """(node index, attribute) -> function attribute name, for node attributes whose values differ
    between the calls (legacy names them ``inferred::<Op>_<attribute>``)."""
    varying: dict[tuple[int, str], str] = {}
    first = runs[0]
    for k, node in enumerate(first.nodes):
        for name, (kind, _) in sorted(node.attrs.items()):
            if kind in ("g", "gs"):
                continue
            values = {serialize._attribute(name, *run.nodes[k].attrs[name]).SerializeToString() for run in runs}
            if len(values) > 1:
                base = ref = f"inferred::{node.op_type}_{name}"
                taken = set(varying.values())
                suffix = 1
                while ref in taken:  # legacy's spelling of a second one: inferred::Constant_value.1
                    ref, suffix = f"{base}.{suffix}", suffix + 1
                varying[(k, name)] = ref
    return varying


def _function(domain: str, name: str, run: _Run, varying, hyper: list[str], opset: int,
              custom_domains: dict[str, int]) -> onnx.FunctionProto:
    body = serialize.graph_proto(_subgraph(run.nodes))
    for (k, attr), ref in varying.items():
        node = body.node[k]
        for proto in node.attribute:
            if proto.name == attr:
                replacement = onnx.AttributeProto(name=attr, ref_attr_name=ref, type=proto.type)
                proto.Clear()
                proto.CopyFrom(replacement)
    return helper.make_function(
        domain, name, [v.name for v in run.inputs], [v.name for v in run.outputs], list(body.node),
        [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in sorted(custom_domains.items())],
        attributes=sorted({*hyper, *varying.values()}))


def extract(graph: Graph, model, selection, opset: int, custom_domains: dict[str, int]):
    """Hoist the chosen modules' nodes out of ``graph``, innermost modules first so outer functions
    call inner ones (as legacy nests them); returns the FunctionProtos (and adds their domains to
    ``custom_domains``)."""
    if not isinstance(model, torch.nn.Module):
        return []
    paths = instance_paths(model, selection)
    known = {"/" + name.replace(".", "/") for name, _ in model.named_modules()}
    made: dict[tuple, list] = {}  # (class, signature) -> [(name, varying, first run)]
    names_used: dict[tuple[str, str], int] = {}
    functions: list[onnx.FunctionProto] = []
    for depth in sorted({_depth(p) for p in paths}, reverse=True):
        level = {p: m for p, m in paths.items() if _depth(p) == depth}
        _extract_level(graph, level, known, opset, custom_domains, made, names_used, functions)
    return functions


def _fits(run: _Run, first: _Run, varying) -> bool:
    """Whether ``run`` differs from ``first`` only in the attributes ``varying`` makes parameters."""
    for k, node in enumerate(first.nodes):
        for attr, (kind, value) in node.attrs.items():
            if (k, attr) in varying or kind in ("g", "gs"):
                continue
            other = run.nodes[k].attrs[attr]
            if serialize._attribute(attr, kind, value).SerializeToString() != \
                    serialize._attribute(attr, *other).SerializeToString():
                return False
    return True


def _extract_level(graph, paths, known, opset, custom_domains, made, names_used, functions) -> None:
    output_ids = {id(v) for v in graph.outputs}
    groups: dict[tuple, list[_Run]] = {}
    for run in _collect(graph, paths, known, output_ids):
        groups.setdefault((module_class(run.module), _signature(run.nodes, run.inputs, run.outputs)), []).append(run)
    replacements: dict[int, tuple[int, list[Node]]] = {}
    for key, members in groups.items():
        cls = key[0]
        domain = cls.__module__
        existing = next(((n, v) for n, v, first in made.get(key, []) if all(_fits(r, first, v) for r in members)),
                        None)
        if existing is not None:
            name, varying = existing
        else:
            count = names_used.get((domain, cls.__name__), 0)
            names_used[(domain, cls.__name__)] = count + 1
            name = cls.__name__ if count == 0 else f"{cls.__name__}.{count}"  # legacy's LayerNorm.1
            varying = _varying(members)
            hyper = {k for run in members for k in hyperparameters(run.module)}
            functions.append(_function(domain, name, members[0], varying, sorted(hyper), opset, custom_domains))
            made.setdefault(key, []).append((name, varying, members[0]))
        for run in members:
            scope = _call_scope(graph.nodes[run.start].scope, run.path, known)
            call = Node(name, domain, run.inputs, {}, graph.node_names.fresh(f"{run.path}/{name}"), scope, "")
            for k, value in hyperparameters(run.module).items():
                call.attrs[k] = (_attr_kind(value), _plain(value))
            for (k, attr), ref in varying.items():
                call.attrs[ref] = run.nodes[k].attrs[attr]
            call.outputs = run.outputs
            for v in run.outputs:
                v.producer = call
            replacements[run.start] = (run.end, [*run.kept, call])
    for key in {k[0].__module__ for k in groups}:
        custom_domains.setdefault(key, 1)
    new_nodes, k = [], 0
    while k < len(graph.nodes):
        if k in replacements:
            end, calls = replacements[k]
            new_nodes.extend(calls)
            k = end
        else:
            new_nodes.append(graph.nodes[k])
            k += 1
    read = {id(v) for n in new_nodes for v in n.inputs if v is not None} | output_ids
    names = subgraph_references(graph)
    graph.nodes = [n for n in new_nodes if not _is_constant(n)
                   or any(id(v) in read or v.name in names for v in n.outputs)]


def _plain(value):
    if isinstance(value, list):
        return [int(v) if isinstance(v, bool) else v for v in value]
    return int(value) if isinstance(value, bool) else value


def _is_constant(node: Node) -> bool:
    return node.op_type == "Constant" and not node.domain and not node.inputs


def _with_constants(nodes: list[Node], read_outside: set[int]) -> tuple[list[Node], list[Node]]:
    """The body of a run with every Constant it reads inside it, first, in order of first use (the
    optimizer shares equal constants between module calls; each function gets its own copy), and
    the run's constants that others read, which stay in the main graph too."""
    order: dict[int, Node] = {}
    for node in nodes:
        if _is_constant(node):
            continue
        for v in node.inputs:
            if v is not None and v.producer is not None and _is_constant(v.producer):
                order.setdefault(id(v.producer), v.producer)
    rest = [n for n in nodes if not _is_constant(n)]
    kept = [n for n in nodes if _is_constant(n) and any(id(v) in read_outside for v in n.outputs)]
    return [*order.values(), *rest], kept


def _subgraph(nodes: list[Node]) -> Graph:
    body = Graph()
    body.nodes = list(nodes)
    return body


def _attr_kind(value) -> str:
    item = value[0] if isinstance(value, list) else value
    kind = "s" if isinstance(item, str) else "f" if isinstance(item, float) else "i"
    return kind + "s" if isinstance(value, list) else kind
