"""Opset 8.

ONNX 8 added Expand, Max/Min/Mean/Sum broadcasting, and MaxPool's second (indices) output.

The legacy facade: exactly the public names of the legacy exporter's ``symbolic_opset8``, each read
as our built-in conversion of that op at opset 8 (``registry.legacy_facade``), so a legacy custom
symbolic's ``symbolic_opset8.<name>(g, ...)`` runs ours. No lowering changes at opset 8: each name
falls through to a lower opset's.
"""

from .registry import legacy_facade as _legacy_facade

__all__ = [
    "addmm", "bmm", "empty", "empty_like", "flatten", "full", "full_like", "gt", "lt", "matmul", "mm",
    "ones", "ones_like", "prelu", "repeat", "zeros", "zeros_like",
]
__getattr__, __dir__ = _legacy_facade(__name__, 8, __all__)
