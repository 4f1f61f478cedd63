"""Opset 10.

ONNX 10: Slice takes starts/ends/axes/steps as inputs; MaxPool/AveragePool gain ceil_mode and
MaxPool dilations; TopK takes k as an input; Resize, Mod, ThresholdedRelu, QuantizeLinear/
DequantizeLinear, IsInf, ReverseSequence, RoiAlign, NonMaxSuppression appear; Upsample is deprecated.

The legacy facade: exactly the public names of the legacy exporter's ``symbolic_opset10``, each read
as our built-in conversion of that op at opset 10 (``registry.legacy_facade``), so a legacy custom
symbolic's ``symbolic_opset10.<name>(g, ...)`` runs ours.
"""

from .registry import legacy_facade as _legacy_facade

__all__ = [
    "dequantize", "div", "embedding_bag", "fake_quantize_per_tensor_affine", "flip", "fmod", "isfinite",
    "isinf", "nan_to_num", "quantize_per_tensor", "quantized_add", "quantized_add_relu", "quantized_cat",
    "quantized_conv1d", "quantized_conv1d_relu", "quantized_conv2d", "quantized_conv2d_relu",
    "quantized_conv3d", "quantized_conv3d_relu", "quantized_conv_transpose1d", "quantized_conv_transpose2d",
    "quantized_conv_transpose3d", "quantized_group_norm", "quantized_hardswish", "quantized_instance_norm",
    "quantized_layer_norm", "quantized_leaky_relu", "quantized_linear", "quantized_linear_relu",
    "quantized_mul", "quantized_sigmoid", "slice", "sort", "topk",
]
# Trailing parameters legacy's function has and ours does not need (accepted, dropped).
_LEGACY_EXTRAS = {
    "topk": ("out",),
}
__getattr__, __dir__ = _legacy_facade(__name__, 10, __all__, legacy_extras=_LEGACY_EXTRAS)
