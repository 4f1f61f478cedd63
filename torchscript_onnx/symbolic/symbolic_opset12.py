"""Opset 12.

ONNX 12: Dropout takes ratio and training_mode as inputs; Celu, Einsum, GreaterOrEqual,
LessOrEqual, NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss, ArgMax select_last_index.

The legacy facade: exactly the public names of the legacy exporter's ``symbolic_opset12``, each read
as our built-in conversion of that op at opset 12 (``registry.legacy_facade``), so a legacy custom
symbolic's ``symbolic_opset12.<name>(g, ...)`` runs ours.
"""

from .registry import legacy_facade as _legacy_facade

__all__ = [
    "argmax", "argmin", "binary_cross_entropy_with_logits", "celu", "cross_entropy_loss", "dropout",
    "einsum", "ge", "le", "native_dropout", "nll_loss", "nll_loss2d", "nll_loss_nd", "outer", "pow",
    "tensordot", "unfold",
]
# Trailing parameters legacy's function has and ours does not need (accepted, dropped).
_LEGACY_EXTRAS = {
    "tensordot": ("out",),
}
__getattr__, __dir__ = _legacy_facade(__name__, 12, __all__, legacy_extras=_LEGACY_EXTRAS)
