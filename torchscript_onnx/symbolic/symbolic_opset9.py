"""Opset 9: the base set, the opset most conversions are registered at (``symbolic/ops/``); each
serves every later opset until a version registered ``since`` a higher one takes over. ONNX 9 added Where, Erf, Shrink, Sign, Sinh/Cosh/..., NonZero,
ConstantOfShape, EyeLike, Scatter, OneHot, MaxUnpool, Compress, IsNaN and typed MatMul/Flatten.

The legacy facade: exactly the public names of the legacy exporter's ``symbolic_opset9``, each read
as our built-in conversion of that op at opset 9 (``registry.legacy_facade``), so a legacy custom
symbolic's ``symbolic_opset9.<name>(g, ...)`` runs ours.
"""

from .registry import legacy_facade as _legacy_facade

__all__ = [
    "abs", "acos", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
    "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d", "add", "addcmul", "addmm", "alias",
    "amax", "amin", "aminmax", "arange", "argmax", "argmin", "as_strided", "as_tensor", "asin", "atan",
    "atan2", "avg_pool1d", "avg_pool2d", "avg_pool3d", "baddbmm", "batch_norm", "bernoulli", "bitwise_not",
    "bitwise_or", "bmm", "broadcast_tensors", "broadcast_to", "bucketize", "cat", "cdist", "ceil", "clamp",
    "clamp_max", "clamp_min", "clone", "constant_pad_nd", "contiguous", "conv1d", "conv2d", "conv3d",
    "conv_tbc", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "convolution", "cos",
    "cosine_similarity", "cross", "cumsum", "detach", "dim", "div", "dot", "dropout", "elu", "embedding",
    "embedding_bag", "empty", "empty_like", "eq", "erf", "exp", "expand", "expand_as", "eye", "fill",
    "flatten", "floor", "floor_divide", "floordiv", "frobenius_norm", "full", "full_like", "gather", "ge",
    "gelu", "glu", "group_norm", "gru", "gt", "hann_window", "hardshrink", "hardsigmoid", "hardswish",
    "hardtanh", "index", "index_add", "index_copy", "index_fill", "index_put", "index_select",
    "instance_norm", "is_floating_point", "isnan", "item", "kl_div", "layer_norm", "le", "leaky_relu",
    "lerp", "linalg_cross", "linalg_matrix_norm", "linalg_norm", "linalg_vector_norm", "linear", "linspace",
    "log", "log10", "log1p", "log2", "log_sigmoid", "log_softmax", "logical_and", "logical_not",
    "logical_or", "logical_xor", "logit", "logsumexp", "lstm", "lstm_cell", "lt", "masked_fill",
    "masked_fill_", "matmul", "max", "max_pool1d", "max_pool1d_with_indices", "max_pool2d",
    "max_pool2d_with_indices", "max_pool3d", "max_pool3d_with_indices", "maximum", "meshgrid", "min",
    "minimum", "mish", "mm", "movedim", "mse_loss", "mul", "multinomial", "mv", "narrow",
    "native_layer_norm", "ne", "neg", "new_empty", "new_full", "new_ones", "new_zeros", "nonzero",
    "nonzero_numpy", "noop_complex_operators", "norm", "numel", "numpy_T", "one_hot", "ones", "ones_like",
    "pad", "pairwise_distance", "permute", "pixel_shuffle", "pixel_unshuffle", "pow", "prelu",
    "prim_constant", "prim_constant_chunk", "prim_constant_split", "prim_data", "prim_device", "prim_dtype",
    "prim_if", "prim_layout", "prim_list_construct", "prim_list_unpack", "prim_loop", "prim_max", "prim_min",
    "prim_tolist", "prim_tuple_construct", "prim_type", "prim_unchecked_cast", "prim_uninitialized", "rand",
    "rand_like", "randint", "randint_like", "randn", "randn_like", "reciprocal", "reflection_pad", "relu",
    "relu6", "remainder", "repeat", "repeat_interleave", "replication_pad", "reshape", "reshape_as",
    "rnn_relu", "rnn_tanh", "roll", "rrelu", "rsqrt", "rsub", "scalar_tensor", "scatter", "scatter_add",
    "select", "selu", "sigmoid", "sign", "silu", "sin", "size", "slice", "softmax", "softplus", "softshrink",
    "sort", "split", "split_with_sizes", "sqrt", "square", "squeeze", "stack", "std", "std_mean", "sub", "t",
    "take", "tan", "tanh", "tanhshrink", "tensor", "threshold", "to", "topk", "transpose", "true_divide",
    "type_as", "unbind", "unfold", "unused", "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes", "unsqueeze",
    "upsample_bilinear2d", "upsample_linear1d", "upsample_nearest1d", "upsample_nearest2d",
    "upsample_nearest3d", "upsample_trilinear3d", "var", "var_mean", "view", "view_as", "where", "zero",
    "zeros", "zeros_like",
]
# Names that are not ``aten::<name>``.
_OPS = {
    "noop_complex_operators": "aten::resolve_conj",
    "prim_constant": "prim::Constant",
    "prim_constant_chunk": "prim::ConstantChunk",
    "prim_constant_split": "prim::ConstantSplit",
    "prim_data": "prim::data",
    "prim_device": "prim::device",
    "prim_dtype": "prim::dtype",
    "prim_if": "prim::If",
    "prim_layout": "prim::layout",
    "prim_list_construct": "prim::ListConstruct",
    "prim_list_unpack": "prim::ListUnpack",
    "prim_loop": "prim::Loop",
    "prim_max": "prim::max",
    "prim_min": "prim::min",
    "prim_tolist": "prim::tolist",
    "prim_tuple_construct": "prim::TupleConstruct",
    "prim_type": "prim::type",
    "prim_unchecked_cast": "prim::unchecked_cast",
    "prim_uninitialized": "prim::Uninitialized",
    "reflection_pad": "aten::reflection_pad2d",
    "replication_pad": "aten::replication_pad2d",
}
# Trailing parameters legacy's function has and ours does not need (accepted, dropped).
_LEGACY_EXTRAS = {
    "bernoulli": ("out",),
    "nonzero_numpy": ("_outputs",),
    "split": ("_outputs",),
    "split_with_sizes": ("_outputs",),
    "topk": ("out",),
    "unbind": ("_outputs",),
    "unsafe_chunk": ("_outputs",),
    "unsafe_split": ("_outputs",),
    "unsafe_split_with_sizes": ("_outputs",),
    "where": ("_outputs",),
    "leaky_relu": ("inplace",),
}


def _unused(g):
    """A missing optional input. Legacy's is an empty ``prim::Constant``; our ``g.op`` takes None
    for a missing input and ``symbolic_helper._is_none(None)`` is true."""
    return None


# Not conversions: legacy's helpers that have an equivalent here.
_CONSTANTS = {"unused": _unused}
__getattr__, __dir__ = _legacy_facade(__name__, 9, __all__, ops=_OPS, legacy_extras=_LEGACY_EXTRAS,
                                      constants=_CONSTANTS)
