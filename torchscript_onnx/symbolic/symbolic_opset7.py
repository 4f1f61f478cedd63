"""Opset 7.

ONNX 7 brought multidirectional broadcasting to the arithmetic ops, BatchNormalization without
`spatial`-dependent outputs, Dropout without `is_test`, and Gemm-7, whose C input is required.

The legacy facade: exactly the public names of the legacy exporter's ``symbolic_opset7``, each read
as our built-in conversion of that op at opset 7 (``registry.legacy_facade``), so a legacy custom
symbolic's ``symbolic_opset7.<name>(g, ...)`` runs ours. No lowering changes at opset 7: each name
falls through to a lower opset's.
"""

from .registry import legacy_facade as _legacy_facade

__all__ = [
    "max", "min",
]
__getattr__, __dir__ = _legacy_facade(__name__, 7, __all__)
