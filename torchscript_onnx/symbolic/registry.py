"""The symbolic registry: ``"ns::op"`` x opset -> conversion function.

Built-in conversions register with ``@symbolic("aten::celu", since=12)`` (``since`` defaults to 9)
in ``symbolic/ops/<topic>.py``, every version of an op side by side. Lookup follows the legacy
fall-through: for a target opset >= 9, the highest registered version <= target; for targets 7 and
8, the lowest registered version in target..9 (opset 7/8 modules only override what opset 9
defines). User registrations (``register_custom_op_symbolic``) win over built-ins at and above
their opset and can be removed again, which restores the built-in.
"""

from __future__ import annotations

import bisect
import functools
import inspect
import re
import sys
from collections.abc import Callable, Iterable, Mapping

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_.]*$")
# The built-in conversions, imported lazily by ``_load_builtins`` so importing the registry stays cheap.
BUILTIN_MODULES = ("torchscript_onnx.symbolic.ops",)


class _Entry:
    """The versions of one op: opset -> function, kept sorted."""

    __slots__ = ("builtin", "custom")

    def __init__(self):
        self.builtin: dict[int, Callable] = {}
        self.custom: dict[int, Callable] = {}

    def get(self, opset: int) -> Callable | None:
        for table in (self.custom, self.builtin):
            fn = _fall_through(table, opset)
            if fn is not None:
                return fn
        return None


def _fall_through(table: dict[int, Callable], opset: int) -> Callable | None:
    if not table:
        return None
    versions = sorted(table)
    if opset >= 9:
        k = bisect.bisect_right(versions, opset)
        return table[versions[k - 1]] if k else None
    for version in versions:
        if opset <= version <= 9:
            return table[version]
    return None


_REGISTRY: dict[str, _Entry] = {}
_loaded = False


def _load_builtins() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    import importlib

    for module in BUILTIN_MODULES:
        importlib.import_module(module)


def symbolic(name: str, since: int = 9):
    """Register the decorated function as the built-in conversion of ``name`` from opset ``since``
    on, until a version registered since a higher opset takes over (``symbolic/ops/``)."""

    def decorate(fn: Callable) -> Callable:
        check_name(name)
        entry = _REGISTRY.setdefault(name, _Entry())
        if since in entry.builtin:
            raise ValueError(f"{name} is registered twice at opset {since}")
        entry.builtin[since] = fn
        return fn

    return decorate


# op -> {condition: the lowest opset that converts the op under it}, declared by the topic modules
# next to their conversions (``declare_opset_requirements``); each condition is the ``reason`` the
# conversion gives ``symbolic_helper.needs_opset`` when the target opset is lower.
_OPSET_REQUIREMENTS: dict[str, dict[str, int]] = {}


def declare_opset_requirements(table: Mapping[str | tuple[str, ...], Mapping[str, int]]) -> None:
    """Declare when ops need a higher opset than they are registered at:
    ``{"aten::topk": {"k known only at runtime": 10, "non-float input": 11}}`` (a tuple of names
    shares one entry)."""
    for names, conditions in table.items():
        for name in (names,) if isinstance(names, str) else names:
            check_name(name)
            declared = _OPSET_REQUIREMENTS.setdefault(name, {})
            for condition, opset in conditions.items():
                if declared.get(condition, opset) != opset:
                    raise ValueError(f"{name}: {condition!r} is declared at opsets {declared[condition]} and {opset}")
                declared[condition] = opset


def opset_requirements(name: str) -> list[tuple[int, str]]:
    """The declared conditions under which ``name`` needs a higher opset: (opset, condition), lowest first."""
    _load_builtins()
    declared = _OPSET_REQUIREMENTS.get(name, {})
    return sorted((opset, condition) for condition, opset in declared.items())


def all_opset_requirements() -> dict[str, list[tuple[int, str]]]:
    """Every op with declared conditions: name -> ``opset_requirements(name)``."""
    _load_builtins()
    return {name: opset_requirements(name) for name in sorted(_OPSET_REQUIREMENTS)}


def builtin_version(name: str, opset: int) -> int | None:
    """The opset of the built-in registration that serves ``name`` at ``opset`` (9 for a target of 7
    or 8 served by an opset-9 conversion), or None."""
    _load_builtins()
    entry = _REGISTRY.get(name)
    if entry is None:
        return None
    fn = _fall_through(entry.builtin, opset)
    return next((v for v, f in sorted(entry.builtin.items()) if f is fn), None) if fn is not None else None


def check_name(name: str) -> None:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(
            f"symbolic name {name!r} must look like 'namespace::op_name', e.g. 'mydomain::my_op' or 'aten::relu'"
        )


def register_custom(name: str, fn: Callable, opset: int) -> None:
    _load_builtins()
    check_name(name)
    _REGISTRY.setdefault(name, _Entry()).custom[opset] = fn


def unregister_custom(name: str, opset: int) -> None:
    entry = _REGISTRY.get(name)
    if entry is None or opset not in entry.custom:
        raise ValueError(f"no custom symbolic is registered for {name} at opset {opset}")
    del entry.custom[opset]


def has_custom(name: str, opset: int) -> bool:
    """Whether a user registration serves ``name`` at ``opset``."""
    entry = _REGISTRY.get(name)
    return entry is not None and _fall_through(entry.custom, opset) is not None


def lookup(name: str, opset: int) -> Callable | None:
    """The conversion of ``name`` at ``opset``; in-place ops (``relu_``) fall back to theirs."""
    _load_builtins()
    entry = _REGISTRY.get(name)
    fn = entry.get(opset) if entry is not None else None
    if fn is None and name.endswith("_") and not name.endswith("__"):
        entry = _REGISTRY.get(name[:-1])
        fn = entry.get(opset) if entry is not None else None
    return fn


def is_registered(name: str, opset: int) -> bool:
    return lookup(name, opset) is not None


def lowest_supporting_opset(name: str, max_opset: int = 26) -> int | None:
    """The lowest opset from 7 to ``max_opset`` at which ``name`` converts, or None."""
    for opset in range(7, max_opset + 1):
        if is_registered(name, opset):
            return opset
    return None


def registered_names(opset: int, namespace: str | None = None) -> list[str]:
    _load_builtins()
    names = [n for n, e in _REGISTRY.items() if e.get(opset) is not None]
    if namespace is not None:
        names = [n for n in names if n.startswith(namespace + "::")]
    return sorted(names)


def all_functions() -> list[tuple[str, int, Callable]]:
    """Every built-in registration: (name, opset, function)."""
    _load_builtins()
    return [(n, v, fn) for n, e in sorted(_REGISTRY.items()) for v, fn in sorted(e.builtin.items())]


def builtin_lookup(name: str, opset: int) -> Callable | None:
    """The built-in conversion of ``name`` at ``opset``, user registrations ignored (what legacy's
    ``symbolic_opsetN.<op>`` is: a custom symbolic calling it must not reach itself again)."""
    _load_builtins()
    for key in (name, name[:-1]) if name.endswith("_") and not name.endswith("__") else (name,):
        entry = _REGISTRY.get(key)
        fn = _fall_through(entry.builtin, opset) if entry is not None else None
        if fn is not None:
            return fn
    return None


def legacy_facade(module: str, opset: int, names: Iterable[str], ops: Mapping[str, str] | None = None,
                  legacy_extras: Mapping[str, tuple[str, ...]] | None = None,
                  constants: Mapping[str, object] | None = None):
    """``__getattr__`` and ``__dir__`` for ``symbolic_opsetN``, the legacy facade of opset ``opset``.

    Each of ``names`` (the public names of the legacy exporter's ``symbolic_opsetN``) resolves, when
    read, to the built-in conversion at ``opset`` of ``ops.get(name)`` (by default ``quantized_X`` is
    ``quantized::X`` and any other name ``aten::<name>``, as legacy names them), or to
    ``constants[name]``; nothing else is public.
    ``legacy_extras[name]`` lists trailing parameters legacy's function has and ours does not
    (``_outputs``, ``out``: plumbing without meaning here); the facade accepts and drops them.
    """
    names = tuple(names)
    public = frozenset(names)
    ops, legacy_extras, constants = ops or {}, legacy_extras or {}, constants or {}

    def __getattr__(name: str):
        if name in public:
            if name in constants:
                return constants[name]
            fn = builtin_lookup(ops.get(name) or legacy_op_name(name), opset)
            if fn is not None:
                return _accepting(fn, legacy_extras[name]) if name in legacy_extras else fn
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    namespace = sys.modules[module].__dict__  # the facade, being imported

    def __dir__():
        return sorted(public | {n for n in namespace if n.startswith("__")})

    return __getattr__, __dir__


def legacy_op_name(name: str) -> str:
    """The op a legacy facade's function name converts: ``quantized_conv2d`` -> ``quantized::conv2d``."""
    if name.startswith("quantized_"):
        return "quantized::" + name[len("quantized_"):]
    return f"aten::{name}"


@functools.lru_cache(maxsize=None)
def _accepting(fn: Callable, extras: tuple[str, ...]) -> Callable:
    """``fn`` taking, and ignoring, the trailing legacy parameters ``extras`` (by position or name)."""
    signature = inspect.signature(fn)
    params = list(signature.parameters.values())
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        raise TypeError(f"{fn.__qualname__} takes *args: nothing to add after it")
    positional = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
    head = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    tail = [p for p in params if p not in head]
    added = [inspect.Parameter(e, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None) for e in extras]

    @functools.wraps(fn)
    def call(*args, **kwargs):
        for extra in extras:
            kwargs.pop(extra, None)
        if positional < len(args) <= positional + len(extras):
            args = args[:positional]
        return fn(*args, **kwargs)

    call.__signature__ = signature.replace(parameters=head + added + tail)
    return call
