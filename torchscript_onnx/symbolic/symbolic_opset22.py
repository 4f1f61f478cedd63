"""Opset 22.

ONNX 22: bfloat16 for most float ops (activations, pooling, conv, RNNs).

The legacy facade: the legacy exporter has no ``symbolic_opset22``; this one exposes the names of
its newest, ``symbolic_opset20``, each read as our built-in conversion of that op at opset 22
(``registry.legacy_facade``). No lowering changes at opset 22: each name falls through to a lower
opset's.
"""

from .registry import legacy_facade as _legacy_facade

__all__ = [
    "gelu",
]
__getattr__, __dir__ = _legacy_facade(__name__, 22, __all__)
