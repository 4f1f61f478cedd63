"""Opset 25.

ONNX 25: further type extensions (int2/uint2) across shape and cast ops.

The legacy facade: the legacy exporter has no ``symbolic_opset25``; this one exposes the names of
its newest, ``symbolic_opset20``, each read as our built-in conversion of that op at opset 25
(``registry.legacy_facade``). No lowering changes at opset 25: each name falls through to a lower
opset's.
"""

from .registry import legacy_facade as _legacy_facade

__all__ = [
    "gelu",
]
__getattr__, __dir__ = _legacy_facade(__name__, 25, __all__)
