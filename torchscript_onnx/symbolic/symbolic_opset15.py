"""Opset 15.

ONNX 15: Shape gains start/end; Bernoulli, CastLike, Optional types, OptionalHasElement.

The legacy facade: exactly the public names of the legacy exporter's ``symbolic_opset15``, each read
as our built-in conversion of that op at opset 15 (``registry.legacy_facade``), so a legacy custom
symbolic's ``symbolic_opset15.<name>(g, ...)`` runs ours.
"""

from .registry import legacy_facade as _legacy_facade

__all__ = [
    "aten__is_", "aten__isnot_", "bernoulli", "prim_unchecked_cast",
]
# Names that are not ``aten::<name>``.
_OPS = {
    "aten__is_": "aten::__is__",
    "aten__isnot_": "aten::__isnot__",
    "prim_unchecked_cast": "prim::unchecked_cast",
}
# Trailing parameters legacy's function has and ours does not need (accepted, dropped).
_LEGACY_EXTRAS = {
    "bernoulli": ("out",),
}
__getattr__, __dir__ = _legacy_facade(__name__, 15, __all__, ops=_OPS, legacy_extras=_LEGACY_EXTRAS)
