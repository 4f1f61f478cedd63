"""Opset 13.

ONNX 13: Softmax/LogSoftmax/Hardmax normalise along one axis (no more 2-D coercion);
Squeeze/Unsqueeze/ReduceSum/Split take axes or split sizes as inputs; bfloat16 widely typed.

The legacy facade: exactly the public names of the legacy exporter's ``symbolic_opset13``, each read
as our built-in conversion of that op at opset 13 (``registry.legacy_facade``), so a legacy custom
symbolic's ``symbolic_opset13.<name>(g, ...)`` runs ours. No lowering changes at opset 13: each name
falls through to a lower opset's.
"""

from .registry import legacy_facade as _legacy_facade

__all__ = [
    "diagonal", "fake_quantize_per_channel_affine", "fake_quantize_per_tensor_affine", "frobenius_norm",
    "log_softmax", "nonzero_numpy", "quantized_conv1d", "quantized_conv1d_relu", "quantized_conv2d",
    "quantized_conv2d_relu", "quantized_conv3d", "quantized_conv3d_relu", "quantized_conv_transpose1d",
    "quantized_conv_transpose2d", "quantized_conv_transpose3d", "quantized_linear", "quantized_linear_relu",
    "repeat_interleave", "softmax", "split", "split_with_sizes", "tensor_split", "tile", "unbind",
    "unflatten", "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes", "where",
]
# Trailing parameters legacy's function has and ours does not need (accepted, dropped).
_LEGACY_EXTRAS = {
    "nonzero_numpy": ("_outputs",),
    "split": ("_outputs",),
    "split_with_sizes": ("_outputs",),
    "tensor_split": ("_outputs",),
    "unbind": ("_outputs",),
    "unsafe_chunk": ("_outputs",),
    "unsafe_split": ("_outputs",),
    "unsafe_split_with_sizes": ("_outputs",),
    "where": ("_outputs",),
}
__getattr__, __dir__ = _legacy_facade(__name__, 13, __all__, legacy_extras=_LEGACY_EXTRAS)
