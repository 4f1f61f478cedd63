"""Opset 17.

ONNX 17: LayerNormalization, DFT, STFT, window functions, MelWeightMatrix, SequenceMap.

The legacy facade: exactly the public names of the legacy exporter's ``symbolic_opset17``, each read
as our built-in conversion of that op at opset 17 (``registry.legacy_facade``), so a legacy custom
symbolic's ``symbolic_opset17.<name>(g, ...)`` runs ours.
"""

from .registry import legacy_facade as _legacy_facade

__all__ = [
    "layer_norm", "quantized_layer_norm", "stft",
]
__getattr__, __dir__ = _legacy_facade(__name__, 17, __all__)
