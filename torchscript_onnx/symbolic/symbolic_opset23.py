"""Opset 23.

ONNX 23: Attention, RMSNormalization, RotaryEmbedding; float4e2m1; Cast/QuantizeLinear updates.

The legacy facade: the legacy exporter has no ``symbolic_opset23``; this one exposes the names of
its newest, ``symbolic_opset20``, each read as our built-in conversion of that op at opset 23
(``registry.legacy_facade``).
"""

from .registry import legacy_facade as _legacy_facade

__all__ = [
    "gelu",
]
__getattr__, __dir__ = _legacy_facade(__name__, 23, __all__)
