"""Opset 14.

ONNX 14: Trilu, HardSwish, BatchNormalization training_mode, Reshape allowzero, CumSum types,
GRU/LSTM/RNN layout.

The legacy facade: exactly the public names of the legacy exporter's ``symbolic_opset14``, each read
as our built-in conversion of that op at opset 14 (``registry.legacy_facade``), so a legacy custom
symbolic's ``symbolic_opset14.<name>(g, ...)`` runs ours.
"""

from .registry import legacy_facade as _legacy_facade

__all__ = [
    "batch_norm", "hardswish", "quantized_hardswish", "reshape", "scaled_dot_product_attention", "tril",
    "triu",
]
# Trailing parameters legacy's function has and ours does not need (accepted, dropped).
_LEGACY_EXTRAS = {
    "tril": ("out",),
    "triu": ("out",),
}
__getattr__, __dir__ = _legacy_facade(__name__, 14, __all__, legacy_extras=_LEGACY_EXTRAS)
