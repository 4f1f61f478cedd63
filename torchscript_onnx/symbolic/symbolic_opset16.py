"""Opset 16.

ONNX 16: GridSample, ScatterElements/ScatterND reduction, LeakyRelu/PRelu bfloat16, Where bfloat16.

The legacy facade: exactly the public names of the legacy exporter's ``symbolic_opset16``, each read
as our built-in conversion of that op at opset 16 (``registry.legacy_facade``), so a legacy custom
symbolic's ``symbolic_opset16.<name>(g, ...)`` runs ours.
"""

from .registry import legacy_facade as _legacy_facade

__all__ = [
    "GRID_SAMPLE_INTERPOLATION_MODES", "GRID_SAMPLE_PADDING_MODES", "grid_sampler", "scatter_add",
    "scatter_reduce",
]
# Data, not conversions: grid_sampler's mode numbering, as legacy re-exports it.
_CONSTANTS = {
    "GRID_SAMPLE_INTERPOLATION_MODES": {"bilinear": 0, "nearest": 1, "bicubic": 2},
    "GRID_SAMPLE_PADDING_MODES": {"zeros": 0, "border": 1, "reflection": 2},
}
__getattr__, __dir__ = _legacy_facade(__name__, 16, __all__, constants=_CONSTANTS)
