"""Opset 11.

ONNX 11: Clip takes min/max as inputs; Pad takes pads as an input; DepthToSpace gains CRD mode;
ScatterElements, GatherElements, ScatterND, GatherND, Range, Round, CumSum, Unique, Det,
Sequence ops, Loop/If changes; negative axes are allowed almost everywhere.

The legacy facade: exactly the public names of the legacy exporter's ``symbolic_opset11``, each read
as our built-in conversion of that op at opset 11 (``registry.legacy_facade``), so a legacy custom
symbolic's ``symbolic_opset11.<name>(g, ...)`` runs ours.
"""

from .registry import legacy_facade as _legacy_facade

__all__ = [
    "Delete", "add", "append", "arange", "argsort", "atleast_1d", "atleast_2d", "atleast_3d", "cat", "chunk",
    "clamp", "clamp_max", "clamp_min", "constant_pad_nd", "cumsum", "embedding_bag", "embedding_renorm",
    "flatten", "gather", "hardtanh", "hstack", "im2col", "index", "index_copy", "index_fill", "index_put",
    "insert", "linalg_det", "linalg_vector_norm", "logdet", "masked_scatter", "masked_select", "mm",
    "narrow", "normal", "pad", "pixel_shuffle", "pop", "prim_constant_chunk", "reflection_pad", "relu6",
    "remainder", "replication_pad", "round", "scatter", "select", "size", "sort", "split",
    "split_with_sizes", "squeeze", "stack", "topk", "unbind", "unique_dim", "unsqueeze", "vstack",
]
# Names that are not ``aten::<name>``.
_OPS = {
    "prim_constant_chunk": "prim::ConstantChunk",
    "reflection_pad": "aten::reflection_pad2d",
    "replication_pad": "aten::replication_pad2d",
}
# Trailing parameters legacy's function has and ours does not need (accepted, dropped).
_LEGACY_EXTRAS = {
    "split": ("_outputs",),
    "split_with_sizes": ("_outputs",),
    "topk": ("out",),
    "unbind": ("_outputs",),
}
__getattr__, __dir__ = _legacy_facade(__name__, 11, __all__, ops=_OPS, legacy_extras=_LEGACY_EXTRAS)
