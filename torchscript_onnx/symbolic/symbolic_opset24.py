"""Opset 24.

ONNX 24: TensorScatter, Swish, TopK/Squeeze/Unsqueeze typing; Attention with KV-cache inputs.

The legacy facade: the legacy exporter has no ``symbolic_opset24``; this one exposes the names of
its newest, ``symbolic_opset20``, each read as our built-in conversion of that op at opset 24
(``registry.legacy_facade``). No lowering changes at opset 24: each name falls through to a lower
opset's.
"""

from .registry import legacy_facade as _legacy_facade

__all__ = [
    "gelu",
]
__getattr__, __dir__ = _legacy_facade(__name__, 24, __all__)
