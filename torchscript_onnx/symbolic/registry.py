"""The symbolic registry: ``"ns::op"`` x opset -> conversion function.

Built-in conversions register with ``@symbolic("aten::celu", since=12)`` (``since`` defaults to 9)
in ``symbolic/ops/<topic>.py``, every version of an op side by side. Lookup follows the legacy
fall-through: for a target from opset 9 on, the highest registered version <= target; for targets 7 and
8, the lowest registered version in target..9 (opset 7/8 modules only override what opset 9
defines). User registrations (``register_custom_op_symbolic``) win over built-ins at and above
their opset and can be removed again, which restores the built-in.
"""

from __future__ import annotations

import ast
import bisect
import functools
import inspect
import re
import sys
from collections.abc import Callable, Iterable, Mapping

from torchscript_onnx.builder.errors import needs_opset
from torchscript_onnx.builder.options import MAX_OPSET

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
# conversion states with ``OPSET.require(g, reason)`` when it meets it.
_OPSET_REQUIREMENTS: dict[str, dict[str, int]] = {}
# condition -> its opset, over every module: one condition, one opset
_CONDITION_OPSETS: dict[str, int] = {}
# the methods of ``OpsetRequirements`` whose argument after ``g`` is a declared condition
_STATING = ("require", "met")


class OpsetRequirements:
    """A topic module's opset requirements, written once: condition -> the lowest opset that meets
    it. Its conversions state the condition (``OPSET.require(g, "k known only at runtime")``) and
    the opset comes from here, so the number is never repeated next to the code."""

    def __init__(self, opsets: Mapping[str, int]):
        self._opsets = dict(opsets)

    def opset(self, condition: str) -> int:
        """The lowest opset that meets ``condition``."""
        return self._opsets[condition]

    def met(self, g, condition: str) -> bool:
        """Whether the target opset meets ``condition`` (a lowering that has another way below it)."""
        return g.opset >= self._opsets[condition]

    def require(self, g, condition: str, value=None, message: str | None = None) -> None:
        """Raise the typed requirement (``errors.needs_opset``) when the target opset is below the
        one ``condition`` needs."""
        opset = self._opsets[condition]
        if g.opset < opset:
            needs_opset(opset, condition, value, message)


def declare_opset_requirements(table: Mapping[str | tuple[str, ...], Mapping[str, int]],
                               unlisted: Mapping[str, int] | None = None) -> OpsetRequirements:
    """Declare when ops need a higher opset than they are registered at:
    ``{"aten::topk": {"k known only at runtime": 10, "non-float input": 11}}`` (a tuple of names
    shares one entry); these are the conditions ``audit()`` and ``docs/supported_ops.md`` name.
    ``unlisted``: conditions the module states that belong to no op's row: those of opsets 8 and 9,
    which a registration at 9 is documented to meet for targets 7 and 8 only where ONNX allows, and
    those its helpers state for ops declared elsewhere.

    Returns the module's ``OpsetRequirements``. The calling module's source is read once, here: a
    ``require``/``met`` call on the returned table whose condition is not a literal declared in it
    fails the import."""
    opsets: dict[str, int] = {}
    for names, conditions in table.items():
        for name in (names,) if isinstance(names, str) else names:
            check_name(name)
            declared = _OPSET_REQUIREMENTS.setdefault(name, {})
            for condition, opset in conditions.items():
                if declared.get(condition, opset) != opset:
                    raise ValueError(f"{name}: {condition!r} is declared at opsets {declared[condition]} and {opset}")
                declared[condition] = opset
                opsets[condition] = opset
    opsets.update(unlisted or {})
    for condition, opset in opsets.items():
        if _CONDITION_OPSETS.setdefault(condition, opset) != opset:
            raise ValueError(f"{condition!r} is declared at opsets {_CONDITION_OPSETS[condition]} and {opset}")
    _check_stated_conditions(sys._getframe(1).f_globals.get("__file__"), opsets)
    return OpsetRequirements(opsets)


def _check_stated_conditions(path: str | None, opsets: Mapping[str, int]) -> None:
    """Every ``<table>.require(g, condition)`` / ``.met(g, condition)`` in the module at ``path``
    names a declared condition by a literal, a choice between literals, or a name assigned one in a
    line above. Found by text and parsed call by call: the whole module's syntax tree would cost
    more than the import."""
    if path is None or not path.endswith(".py"):
        return
    with open(path, encoding="utf-8") as source:
        text = source.read()
    tables = re.findall(r"^(\w+) = (?:\w+\.)?declare_opset_requirements\(", text, re.M)
    for table in tables:
        for call in re.finditer(rf"\b{table}\.(?:{'|'.join(_STATING)})\(", text):
            line = text.count("\n", 0, call.start()) + 1
            node = ast.parse(_call_text(text, call.start()), mode="eval").body
            stated = node.args[1] if len(node.args) > 1 else None
            if isinstance(stated, ast.Name):
                stated = _assigned_above(text, call.start(), stated.id)
            choices = _literal_choices(stated) if stated is not None else None
            if choices is None:
                raise ValueError(f"{path}:{line}: state the opset condition as a literal declared in the module's "
                                 f"requirement table")
            undeclared = [c for c in choices if c not in opsets]
            if undeclared:
                raise ValueError(f"{path}:{line}: {undeclared[0]!r} is not declared in the module's requirement "
                                 f"table (declare_opset_requirements)")


def _call_text(text: str, start: int) -> str:
    """The call expression starting at ``start``, through its closing parenthesis."""
    depth, quote, k = 0, None, start
    while k < len(text):
        c = text[k]
        if quote:
            if c == "\\":
                k += 1
            elif c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return text[start:k + 1]
        k += 1
    return text[start:]


def _assigned_above(text: str, before: int, name: str) -> ast.expr | None:
    """The value of the last ``name = ...`` statement above ``before`` (continued by backslashes)."""
    found = None
    for match in re.finditer(rf"^[ ]*{name} = ((?:.*\\\n)*.*)$", text[:before], re.M):
        found = match.group(1)
    if found is None:
        return None
    try:
        return ast.parse(found, mode="eval").body
    except SyntaxError:
        return None


def _literal_choices(node: ast.expr) -> list[str] | None:
    """The strings a literal or a conditional choice between literals can be, or None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        body, orelse = _literal_choices(node.body), _literal_choices(node.orelse)
        return None if body is None or orelse is None else body + orelse
    return None


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


def lowest_supporting_opset(name: str, max_opset: int = MAX_OPSET) -> int | None:
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
