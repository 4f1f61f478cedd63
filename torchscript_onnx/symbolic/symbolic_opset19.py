"""Opset 19.

ONNX 19: float8 types; AveragePool dilations; DeformConv; Equal on strings; Cast saturate.

The legacy facade: exactly the public names of the legacy exporter's ``symbolic_opset19``, each read
as our built-in conversion of that op at opset 19 (``registry.legacy_facade``), so a legacy custom
symbolic's ``symbolic_opset19.<name>(g, ...)`` runs ours. No lowering changes at opset 19: each name
falls through to a lower opset's.
"""

from .registry import legacy_facade as _legacy_facade

__all__ = []
__getattr__, __dir__ = _legacy_facade(__name__, 19, __all__)
