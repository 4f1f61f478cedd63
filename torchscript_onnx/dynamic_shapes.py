"""``dynamic_shapes`` (the ``torch.export`` / dynamo-exporter form) translated to named ``dynamic_axes``.

``dynamic_shapes`` follows the structure of the model's inputs: a dict keyed by forward parameter
names, or a tuple/list with one entry per positional argument; each tensor's entry is a dict
``{axis: dim}`` or a tuple/list with one entry per axis (``None`` = static). A dim is a
``torch.export.Dim`` (its name becomes the ONNX dim name), a string (the name itself), or
``Dim.AUTO``/``Dim.DYNAMIC`` (dynamic, named ``<input>_dim_<axis>``); ``Dim.STATIC`` and ``None``
are static. Tensors are numbered as capture flattens the arguments (``torch.jit._flatten``:
depth first, dict values in order), so each maps to one graph input.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence

import torch

from .pipeline import hf_cache
from .pipeline.capture import CallArgs

_STATIC = "STATIC"


def _dim_name(dim, input_name: str, axis: int) -> str | None:
    """The ONNX dim name for one entry, or None for a static dim."""
    if dim is None:
        return None
    if isinstance(dim, str):
        if not dim:
            raise ValueError(f"dynamic_shapes for {input_name!r}, axis {axis}: a dim name must not be empty")
        return dim
    kind = getattr(getattr(dim, "type", None), "name", None)  # torch.export.Dim.AUTO / DYNAMIC / STATIC
    if type(dim).__name__ == "_DimHint" and kind is not None:
        return None if kind == _STATIC else f"{input_name}_dim_{axis}"
    name = getattr(dim, "__name__", None)  # torch.export.Dim("batch", ...)
    if isinstance(name, str):
        return name
    raise TypeError(
        f"dynamic_shapes for {input_name!r}, axis {axis}: expected torch.export.Dim, a dim name (str), "
        f"Dim.AUTO/DYNAMIC/STATIC or None; got {dim!r}"
    )


def _tensor_axes(spec, tensor: torch.Tensor, input_name: str) -> dict[int, str]:
    if spec is None:
        return {}
    if isinstance(spec, Mapping):
        items = list(spec.items())
    elif isinstance(spec, Sequence) and not isinstance(spec, str):
        if len(spec) != tensor.dim():
            raise ValueError(
                f"dynamic_shapes for {input_name!r} has {len(spec)} entries, but the tensor has rank {tensor.dim()}"
            )
        items = list(enumerate(spec))
    else:
        raise TypeError(
            f"dynamic_shapes for {input_name!r} must be a dict {{axis: dim}} or a tuple with one entry per "
            f"axis; got {spec!r}"
        )
    axes = {}
    for axis, dim in items:
        if isinstance(axis, bool) or not isinstance(axis, int) or not -tensor.dim() <= axis < tensor.dim():
            raise ValueError(f"dynamic_shapes for {input_name!r}: {axis!r} is not an axis of a rank-{tensor.dim()} tensor")
        name = _dim_name(dim, input_name, axis % tensor.dim())
        if name is not None:
            axes[axis % tensor.dim()] = name
    return axes


def _walk(value, spec, name: str, out: list) -> None:
    """Append ``(name, axes)`` for each tensor leaf of ``value`` in flattening order."""
    if isinstance(value, torch.Tensor):
        out.append((name, _tensor_axes(spec, value, name)))
        return
    if hf_cache.is_cache(value):
        if spec is not None:
            raise ValueError(
                f"dynamic_shapes for {name!r}: a transformers cache's axes are not given through dynamic_shapes; "
                f"give every axis through dynamic_axes instead, naming the cache's tensors "
                f"{name}.0.key, {name}.0.value, ...")
        out += [(leaf, {}) for leaf in hf_cache.layout_of(value, name).names(name)]
        return
    if isinstance(value, (tuple, list)):
        specs = _children(spec, len(value), name, dict_keys=None)
        for k, item in enumerate(value):
            _walk(item, specs[k], f"{name}_{k}", out)
    elif isinstance(value, Mapping):
        specs = _children(spec, len(value), name, dict_keys=list(value))
        for k, (key, item) in enumerate(value.items()):
            _walk(item, specs[k], f"{name}_{key}", out)


def _children(spec, n: int, name: str, dict_keys) -> list:
    if spec is None:
        return [None] * n
    if dict_keys is not None and isinstance(spec, Mapping):
        return [spec.get(key) for key in dict_keys]
    if isinstance(spec, (tuple, list)) and len(spec) == n:
        return list(spec)
    raise ValueError(f"dynamic_shapes for {name!r} does not follow the structure of that argument ({n} entries)")


def _parameter_names(model, n: int) -> list[str]:
    try:
        params = [p.name for p in inspect.signature(getattr(model, "forward", model)).parameters.values()
                  if p.name != "self" and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return params[:n] + [f"input_{k}" for k in range(len(params), n)]


def to_dynamic_axes(model, args: tuple, dynamic_shapes, input_names) -> tuple[list[str], dict[str, dict[int, str]]]:
    """``(input_names, dynamic_axes)`` equivalent to ``dynamic_shapes`` for the normalised ``args``.

    Inputs that ``input_names`` does not name get the name of their forward parameter (``x``, or
    ``cache_0``, ``cache_1`` inside a list), as the dynamo exporter names them.
    """
    names = _parameter_names(model, len(args))
    if isinstance(args, CallArgs):  # entries passed by keyword, their constants left out as capture does
        n = len(args) - len(args.keywords)
        names = names[:n] + list(args.keywords)
        kept = [k for k in range(len(args)) if not args.is_constant(k)]
        names, args = [names[k] for k in kept], tuple(args[k] for k in kept)
    if isinstance(dynamic_shapes, Mapping):
        unknown = sorted(set(dynamic_shapes) - set(names))
        if unknown:
            raise ValueError(
                f"dynamic_shapes names {unknown}, which are not parameters of the model's forward {names}"
            )
        specs = [dynamic_shapes.get(name) for name in names]
    elif isinstance(dynamic_shapes, (tuple, list)):
        if len(dynamic_shapes) > len(args):
            raise ValueError(f"dynamic_shapes has {len(dynamic_shapes)} entries, but args give {len(args)} arguments")
        specs = list(dynamic_shapes) + [None] * (len(args) - len(dynamic_shapes))
    else:
        raise TypeError(
            f"dynamic_shapes must be a dict keyed by forward parameter names or a tuple with one entry per "
            f"argument; got {type(dynamic_shapes).__name__}"
        )
    leaves: list[tuple[str, dict[int, str]]] = []
    for name, value, spec in zip(names, args, specs):
        _walk(value, spec, name, leaves)
    given = list(input_names or ())
    dynamic = [k for k, (_, axes) in enumerate(leaves) if axes]
    final = given + [leaf_name for leaf_name, _ in leaves[len(given): (max(dynamic) + 1 if dynamic else 0)]]
    return final, {final[k]: leaves[k][1] for k in dynamic}
