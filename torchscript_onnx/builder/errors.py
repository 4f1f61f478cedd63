"""The exceptions users see. Messages name what went wrong and what to do next."""

from __future__ import annotations

import importlib
import re


def _torch_error(name: str, fallback: type) -> type:
    """torch's own exception class of that name when torch has it, so ``except
    torch.onnx.errors.OnnxExporterError`` (or its subclasses) catches ours; else ``fallback``.

    The one use of ``torch.onnx`` here, and one the project's stand-alone rule names as allowed:
    the base classes only, so users' ``except`` clauses keep working; nothing of torch's exporter
    produces or checks a result."""
    try:
        return getattr(importlib.import_module("torch.onnx.errors"), name)
    except (ImportError, AttributeError):
        return fallback


class OnnxExporterError(_torch_error("OnnxExporterError", RuntimeError)):
    """Base class of every error the exporter raises on purpose (a ``torch.onnx.errors.OnnxExporterError``)."""


class OnnxExporterWarning(_torch_error("OnnxExporterWarning", UserWarning)):
    """What the exporter warns about where the legacy exporter warns; ``strict=True`` makes these errors."""


class UnsupportedOperatorError(OnnxExporterError, _torch_error("UnsupportedOperatorError", OnnxExporterError)):
    """One or more operators have no conversion at the target opset.

    ``ops`` holds one ``UnsupportedOp`` per distinct operator, each with every place it occurs.
    """

    def __init__(self, ops, opset: int):
        self.ops = list(ops)
        self.target_opset = opset
        lines = [f"{len(self.ops)} operator(s) cannot be exported to ONNX opset {opset}:"]
        for op in self.ops:
            lines.append("  " + op.describe())
        # not torch's __init__ (other arguments); the message is all RuntimeError keeps
        RuntimeError.__init__(self, "\n".join(lines))

    @property
    def opset(self) -> int:
        """The opset the export targeted (as on every error of the exporter)."""
        return self.target_opset

    def __reduce__(self):  # picklable (multiprocessing, pytest-xdist) despite the two-argument init
        return type(self), (self.ops, self.target_opset)


class SymbolicValueError(OnnxExporterError, _torch_error("SymbolicValueError", OnnxExporterError)):
    """A conversion could not handle one of its values (wrong kind, dtype, shape or non-constant).

    Symbolics raise it with a short message and, optionally, the offending value
    (``SymbolicValueError("rank must be known", x)``, the legacy signature). The converter adds
    where it happened with ``in_context``. Attributes: ``message``, ``value``, ``node`` (the JIT
    op, e.g. "aten::gelu"), ``opset``, ``scope`` (module path), ``source`` ("file.py:42") and
    ``inputs`` (the node's inputs described with dtype and shape).
    """

    def __init__(self, message: str, value=None):
        self.message = str(message)
        self.value = value
        self.node: str | None = None
        self.target_opset: int | None = None
        self.scope = ""
        self.source = ""
        self.inputs: list[str] = []
        RuntimeError.__init__(self, self._text())

    @property
    def opset(self) -> int | None:
        """The opset the conversion targeted (set with the place, by ``in_context``): on every error
        of the exporter ``opset`` is the target; what a node needs is ``required_opset``."""
        return self.target_opset

    def in_context(self, node: str, opset: int, scope: str, source: str, inputs: list[str]) -> "SymbolicValueError":
        """This error with the place it happened (once: an error already placed is returned as is)."""
        if self.node is None:
            self.node, self.target_opset, self.scope, self.source, self.inputs = node, opset, scope, source, list(inputs)
            self.args = (self._text(),)
        return self

    def _text(self) -> str:
        text = self.message
        if self.value is not None:
            text += f"\n  value: {describe_value(self.value)}"
        if self.node is None:
            return text
        where = (self.scope or "<top>") + (f" at {self.source}" if self.source else "")
        text = f"while converting {self.node} (opset {self.target_opset}) in {where}: {text}"
        if self.inputs:
            text += "\n  inputs: " + ", ".join(self.inputs)
        return text

    def __str__(self) -> str:
        return self.args[0] if self.args else self.message

    def __reduce__(self):
        state = {k: getattr(self, k) for k in ("node", "target_opset", "scope", "source", "inputs")}
        state["args"] = self.args
        return type(self), (self.message, None), state

    def __setstate__(self, state) -> None:
        self.args = state.pop("args")
        self.__dict__.update(state)


class OpsetRequirementError(SymbolicValueError):
    """A conversion needs a higher opset than the target: ``required_opset`` is the lowest opset
    that converts the node, ``reason`` the condition that needs it ("k known only at runtime").
    Symbolics raise it with ``symbolic_helper.needs_opset(opset, reason, value)``; the message ends
    in the standard "(pass opset_version=N)". ``opset`` (``target_opset``) is the opset the export
    asked for, as on every error of the exporter.

    ``export`` goes on converting past each one and raises a single ``OpsetRequirementError`` for the
    whole graph: its ``requirements`` hold one error per node (each placed: ``node``, ``scope``,
    ``source``, ``reason``, ``required_opset``) and its ``required_opset`` is the one that converts
    them all.
    """

    def __init__(self, opset: int, reason: str, value=None, message: str | None = None, requirements=()):
        self.required_opset = int(opset)
        self.reason = str(reason)
        self.requirements: list[OpsetRequirementError] = list(requirements)
        if message is None:
            message = f"{reason} needs opset {opset} or higher (pass opset_version={opset})"
        super().__init__(message, value)

    @classmethod
    def stated_by(cls, error: BaseException, target_opset: int) -> "OpsetRequirementError | None":
        """The requirement ``error`` states above ``target_opset``: itself when typed, or, for a
        legacy-style symbolic's plain ``SymbolicValueError`` whose message says "pass
        opset_version=N", a typed copy in the same place; else None."""
        if isinstance(error, OpsetRequirementError):
            return error if error.required_opset > target_opset else None
        found = _NEEDS_OPSET.search(error.message) if isinstance(error, SymbolicValueError) else None
        if found is None or int(found.group(1)) <= target_opset:
            return None
        typed = cls(int(found.group(1)), error.message.splitlines()[0], error.value, error.message)
        typed.node, typed.target_opset, typed.scope, typed.source, typed.inputs = \
            error.node, error.target_opset, error.scope, error.source, error.inputs
        return typed

    @classmethod
    def for_graph(cls, requirements, target_opset: int, other_failures=()) -> "OpsetRequirementError":
        """One error for every node of a graph that needs a higher opset than ``target_opset``;
        ``other_failures``: errors of other kinds met after the first requirement (listed too)."""
        requirements = list(requirements)
        needed = max(r.required_opset for r in requirements)
        lines = [f"{len(requirements)} node(s) cannot be exported at opset {target_opset}; "
                 f"opset {needed} converts them all: pass opset_version={needed}"]
        for r in requirements:
            lines.append(f"  {r.node or '<unknown op>'} in {_where(r)}: {r.message}")
        if other_failures:
            lines.append(f"{len(other_failures)} other node(s) failed for other reasons "
                         "(torchscript_onnx.audit lists every problem):")
            for other in other_failures:
                if isinstance(other, SymbolicValueError):
                    lines.append(f"  {other.node or '<unknown op>'} in {_where(other)}: "
                                 f"{other.message.splitlines()[0] if other.message else ''}")
                else:
                    lines.append(f"  {type(other).__name__}: {other}")
        error = cls(needed, "; ".join(dict.fromkeys(r.reason for r in requirements)),
                    message="\n".join(lines), requirements=requirements)
        error.target_opset = target_opset
        if len(requirements) == 1:  # one node: the error is placed there, as a single failure is
            (one,) = requirements
            error.node, error.scope, error.source, error.inputs, error.value = \
                one.node, one.scope, one.source, one.inputs, one.value
        error.args = (error.message,)
        return error

    def __reduce__(self):
        state = {k: getattr(self, k) for k in ("node", "target_opset", "scope", "source", "inputs", "requirements")}
        state["args"] = self.args
        return type(self), (self.required_opset, self.reason, None, self.message), state


def needs_opset(opset: int, reason: str, value=None, message: str | None = None):
    """Raise the typed requirement: the node converts from ``opset`` on, because of ``reason`` (a
    condition, as declared in the registry's requirement table: "k known only at runtime"). The
    message reads "<reason> needs opset N or higher (pass opset_version=N)" unless ``message`` says
    otherwise; export collects these for the whole graph and reports them at once. Symbolics call
    it as ``symbolic_helper.needs_opset``, the builder's schema helpers (``onnx_ops``) directly."""
    raise OpsetRequirementError(opset, reason, value, message)


class FunctionWithoutSymbolicError(SymbolicValueError):
    """A ``torch.autograd.Function`` call kept as one node (``autograd_inlining=False``) whose class
    has no ``symbolic`` staticmethod to convert it, and no ``prim::PythonOp`` conversion is
    registered. ``function`` is the class's name."""

    def __init__(self, function: str, opset: int, value=None):
        self.function, self.function_opset = function, opset
        super().__init__(f"torch.autograd.Function {function} has no symbolic staticmethod, and "
                         f"autograd_inlining=False keeps its call as one node\n"
                         f"  to export it: {function_next_step(function, opset)}", value)

    def __reduce__(self):
        state = {k: getattr(self, k) for k in ("node", "target_opset", "scope", "source", "inputs")}
        state["args"] = self.args
        return type(self), (self.function, self.function_opset), state


def function_next_step(function: str, opset: int) -> str:
    """What to do about a ``torch.autograd.Function`` call that nothing converts."""
    return (f"give {function} a symbolic(g, *args) staticmethod that emits its ONNX nodes, register "
            f"one with torchscript_onnx.register_custom_op_symbolic('prim::PythonOp', fn, {opset}), or "
            "export with autograd_inlining=True (the default) to export the ops its forward runs")


class DynamicAxesError(OnnxExporterError, ValueError):
    """``dynamic_axes`` names an axis the value does not have (found where its dims are named: an
    input's before conversion, an output's after it)."""


def _where(error: SymbolicValueError) -> str:
    return (error.scope or "<top>") + f" at {error.source or '<unknown source>'}"


def describe_value(value) -> str:
    """``%x: float32[2, 3]`` for a graph value, ``%x: Float(2, 3)`` for a JIT value, else repr."""
    dtype = getattr(value, "dtype", None)
    if hasattr(value, "shape") and hasattr(value, "const") and hasattr(value, "name"):
        elements = getattr(value, "elements", None)
        if elements is not None:
            return "[" + ", ".join(describe_value(e) for e in elements) + "]"
        const = getattr(value, "const")
        if getattr(value, "is_const", False) and not hasattr(const, "shape"):
            return f"constant {const!r}"
        name = f"%{value.name}: " if value.name else ""
        dtype_text = str(dtype).replace("torch.", "") if dtype is not None else "unknown dtype"
        shape = value.shape
        dims = None if shape is None else ", ".join("?" if d is None else str(d) for d in shape)
        shape_text = "[rank unknown]" if dims is None else f"[{dims}]"
        return f"{name}{dtype_text}{shape_text}"
    if hasattr(value, "debugName") and hasattr(value, "type"):
        return f"%{value.debugName()}: {value.type()}"
    return repr(value)


class CheckerError(OnnxExporterError):
    """The exported model failed ``onnx.checker``."""


class VerificationError(OnnxExporterError, AssertionError):
    """onnxruntime's outputs differ from PyTorch's; the message is the report's table. Also an
    ``AssertionError``, as it was before it joined the exporter's errors, so ``except
    AssertionError`` (and pytest's assertion checks) keep catching it."""


class UnflattenableCacheError(OnnxExporterError, TypeError):
    """A transformers cache that cannot become graph inputs or outputs; the message says what to
    pass instead. A ``TypeError`` as the other checks of ``args``."""


class UnsupportedOp:
    """One operator without a conversion, with every place it occurs."""

    def __init__(self, name: str, opset: int, lowest_opset: int | None):
        self.name = name
        self.opset = opset
        self.lowest_opset = lowest_opset
        self.occurrences: list[tuple[str, str]] = []  # (module scope, "file:line")

    def next_step(self) -> str:
        if self.lowest_opset is not None and self.lowest_opset > self.opset:
            return f"supported from opset {self.lowest_opset}: pass opset_version={self.lowest_opset}"
        if self.lowest_opset is not None:
            return f"supported at opsets {self.lowest_opset}+ but not at {self.opset}: choose another opset"
        return ("no conversion exists: register one with torchscript_onnx.register_custom_op_symbolic"
                f"('{self.name}', fn, {self.opset})")

    def describe(self) -> str:
        places: dict[tuple[str, str], int] = {}
        for place in self.occurrences:
            places[place] = places.get(place, 0) + 1
        shown = [f"{scope or '<top>'} at {source or '<unknown source>'}" + (f" (x{n})" if n > 1 else "")
                 for (scope, source), n in list(places.items())[:3]]
        more = f"; +{len(places) - 3} more places" if len(places) > 3 else ""
        return f"{self.name} x{len(self.occurrences)} — {'; '.join(shown)}{more} — {self.next_step()}"


_NEEDS_OPSET = re.compile(r"pass opset_version=(\d+)")
# the words of a message about a size known only at runtime: whole words ("dynamic_axes" counts),
# not parts of others ("staticmethod", "onnxruntime")
_RUNTIME_SIZE = re.compile(r"(?<![a-z])(runtime|static|dynamic)(?![a-z])")


class ConversionIssue:
    """One node that failed to convert (found by ``audit``, which converts on past failures).

    ``op`` is the JIT op ("aten::abs"), ``scope`` the module path, ``source`` "file.py:42",
    ``message`` the conversion's own message and ``category`` one of "opset" (the lowering needs a
    higher opset: ``needs_opset``, from an ``OpsetRequirementError`` or, for a legacy-style
    symbolic's plain message, its "pass opset_version=N"), "complex" (a complex value where ONNX has
    none), "runtime size" (a size known only at runtime where the lowering needs it fixed),
    "autograd.Function" (a ``FunctionWithoutSymbolicError``: a Function call kept as one node with
    nothing to convert it), "dynamic_axes" (a ``DynamicAxesError``: an axis the named output does not
    have) or "conversion".
    """

    def __init__(self, op: str, opset: int, scope: str, source: str, message: str, needs_opset: int | None = None,
                 reason: str | None = None, category: str | None = None, function: str | None = None):
        self.op, self.opset, self.scope, self.source, self.message = op, opset, scope, source, message
        self.function = function  # the torch.autograd.Function's class name, for "autograd.Function"
        self.reason = reason  # the declared condition, when the conversion raised OpsetRequirementError
        if needs_opset is None:  # a legacy-style symbolic's plain message: "... (pass opset_version=N)"
            found = _NEEDS_OPSET.search(message)
            needs_opset = int(found.group(1)) if found else None
        self.needs_opset = needs_opset if needs_opset is not None and needs_opset > opset else None
        lowered = message.lower()
        if category is not None:  # known from the error's type
            self.category = category
        elif self.needs_opset is not None:
            self.category = "opset"
        elif "complex" in lowered:
            self.category = "complex"
        elif _RUNTIME_SIZE.search(lowered):
            self.category = "runtime size"
        else:
            self.category = "conversion"

    @classmethod
    def from_error(cls, error: BaseException, op: str, opset: int, scope: str, source: str) -> "ConversionIssue":
        """The issue an exception raised while converting ``op`` describes."""
        if isinstance(error, OpsetRequirementError):
            return cls(error.node or op, opset, error.scope or scope, error.source or source, error.message,
                       error.required_opset, error.reason)
        if isinstance(error, SymbolicValueError):
            if isinstance(error, FunctionWithoutSymbolicError):
                return cls(error.node or op, opset, error.scope or scope, error.source or source, error.message,
                           category="autograd.Function", function=error.function)
            return cls(error.node or op, opset, error.scope or scope, error.source or source, error.message)
        if isinstance(error, DynamicAxesError):
            return cls(op, opset, scope, source, str(error), category="dynamic_axes")
        return cls(op, opset, scope, source, f"{type(error).__name__}: {error}")

    def next_step(self) -> str:
        if self.category == "opset":
            return f"needs opset {self.needs_opset}: pass opset_version={self.needs_opset}"
        if self.category == "complex":
            return ("keep complex values inside the model: end them in torch.view_as_real(x), x.abs(), "
                    "x.angle(), x.real or x.imag")
        if self.category == "runtime size":
            return "fix that size at export time (leave it out of dynamic_axes) or compute it differently"
        if self.category == "autograd.Function":
            return function_next_step(self.function or "the Function", self.opset)
        if self.category == "dynamic_axes":
            return "name only axes the value has in dynamic_axes (0 to rank - 1, or negative from the end)"
        return (f"change the model around it, or register a conversion with "
                f"torchscript_onnx.register_custom_op_symbolic('{self.op}', fn, {self.opset})")

    def where(self) -> str:
        return f"{self.scope or '<top>'} at {self.source or '<unknown source>'}"

    def describe(self) -> str:
        return f"{self.op} [{self.category}] in {self.where()}: {self.message} — {self.next_step()}"

    def __repr__(self) -> str:
        return f"ConversionIssue({self.op!r}, {self.category!r}, {self.message!r})"
