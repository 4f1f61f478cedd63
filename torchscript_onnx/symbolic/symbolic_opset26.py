"""Opset 26.

ONNX 26: BitCast, CumProd and refinements; onnxruntime 1.31 runs every op defined here.

The legacy facade: the legacy exporter has no ``symbolic_opset26``; this one exposes the names of
its newest, ``symbolic_opset20``, each read as our built-in conversion of that op at opset 26
(``registry.legacy_facade``). No lowering changes at opset 26: each name falls through to a lower
opset's.
"""

from .registry import legacy_facade as _legacy_facade

__all__ = [
    "gelu",
]
__getattr__, __dir__ = _legacy_facade(__name__, 26, __all__)
