"""Opset 21.

ONNX 21: int4/uint4 types; QuantizeLinear/DequantizeLinear blocked quantization; GroupNormalization
per-group-channel fix.

The legacy facade: the legacy exporter has no ``symbolic_opset21``; this one exposes the names of
its newest, ``symbolic_opset20``, each read as our built-in conversion of that op at opset 21
(``registry.legacy_facade``).
"""

from .registry import legacy_facade as _legacy_facade

__all__ = [
    "gelu",
]
__getattr__, __dir__ = _legacy_facade(__name__, 21, __all__)
