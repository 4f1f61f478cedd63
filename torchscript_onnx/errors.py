"""The exceptions users see. Messages name what went wrong and what to do next."""

from __future__ import annotations


class OnnxExporterError(RuntimeError):
    """Base class of every error the exporter raises on purpose."""


class UnsupportedOperatorError(OnnxExporterError):
    """One or more operators have no conversion at the target opset.

    ``ops`` holds one ``UnsupportedOp`` per distinct operator, each with every place it occurs.
    """

    def __init__(self, ops, opset: int):
        self.ops = list(ops)
        self.opset = opset
        lines = [f"{len(self.ops)} operator(s) cannot be exported to ONNX opset {opset}:"]
        for op in self.ops:
            lines.append("  " + op.describe())
        super().__init__("\n".join(lines))


class SymbolicValueError(OnnxExporterError):
    """A conversion could not handle one of its values (wrong kind, dtype, shape or non-constant)."""


class CheckerError(OnnxExporterError):
    """The exported model failed ``onnx.checker``."""


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
        where = "; ".join(f"{scope or '<top>'} at {source or '<unknown>'}" for scope, source in self.occurrences[:3])
        more = f" (+{len(self.occurrences) - 3} more)" if len(self.occurrences) > 3 else ""
        return f"{self.name} x{len(self.occurrences)} — {where}{more} — {self.next_step()}"
