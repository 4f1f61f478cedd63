"""Opset 20.

ONNX 20: Gelu, AffineGrid, ConstantOfShape/IsNaN/IsInf on float8, ImageDecoder,
RegexFullMatch, StringConcat, StringSplit.

The legacy facade: exactly the public names of the legacy exporter's ``symbolic_opset20``, each read
as our built-in conversion of that op at opset 20 (``registry.legacy_facade``), so a legacy custom
symbolic's ``symbolic_opset20.<name>(g, ...)`` runs ours.
"""

from .registry import legacy_facade as _legacy_facade

__all__ = [
    "gelu",
]
__getattr__, __dir__ = _legacy_facade(__name__, 20, __all__)
