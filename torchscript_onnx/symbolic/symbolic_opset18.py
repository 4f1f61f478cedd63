"""Opset 18.

ONNX 18: the remaining Reduce* ops take axes as an input; Split gains num_outputs; Pad gains
axes; Resize gains antialias, axes and keep_aspect_ratio_policy; BitwiseAnd/Or/Xor/Not, Col2Im,
GroupNormalization, Mish typed, ScatterND max/min.

The legacy facade: exactly the public names of the legacy exporter's ``symbolic_opset18``, each read
as our built-in conversion of that op at opset 18 (``registry.legacy_facade``), so a legacy custom
symbolic's ``symbolic_opset18.<name>(g, ...)`` runs ours.
"""

from .registry import legacy_facade as _legacy_facade

__all__ = [
    "col2im",
]
__getattr__, __dir__ = _legacy_facade(__name__, 18, __all__)
