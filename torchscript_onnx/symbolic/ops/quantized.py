"""Quantized tensors and eager-mode quantized modules as ONNX QuantizeLinear/DequantizeLinear.

Representation: ONNX has no quantized tensor type, so inside the converter a quantized torch tensor
is the FLOAT tensor it dequantizes to, produced by ``DequantizeLinear(QuantizeLinear(x))`` (the
QDQ form runtimes fuse into integer kernels). Ops on quantized tensors that are exact in float
(relu, flatten, max_pool, reshape) reuse the float conversions; ``aten::dequantize`` is the
identity. A quantized op (``quantized::conv2d`` etc.) computes in float from its dequantized input
and int8 weights (``DequantizeLinear`` of an int8 initializer), then quantizes its output with
the op's output scale and zero point. Packed weights (``Conv2dPackedParamsBase``,
``LinearPackedParamsBase``) reach the symbolics as export-time constants (a quantized model is
captured through ``torch.jit.trace``, see capture.py) and are unpacked with ``unpack()`` /
``quantized.linear_unpack``.

QuantizeLinear/DequantizeLinear exist from opset 10; per-channel (``axis``) from opset 13."""

from __future__ import annotations

import torch

from torchscript_onnx.builder import onnx_ops
from torchscript_onnx.builder.ir import Value

from .. import registry
from .. import symbolic_helper as sh
from ..registry import declare_opset_requirements, symbolic
from .nn import conv_transpose


# When an op here needs a higher opset than it is registered at: the condition (the reason its
# conversion states with OPSET.require) -> the lowest opset that converts it (docs/supported_ops.md).
_WITH_WEIGHTS = tuple(f"quantized::{name}" for name in (
    "conv1d", "conv1d_relu", "conv2d", "conv2d_relu", "conv3d", "conv3d_relu", "linear", "linear_relu",
    "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"))
OPSET = declare_opset_requirements({
    ("aten::quantize_per_tensor", "aten::quantize_per_channel", "aten::fake_quantize_per_tensor_affine",
     "aten::fake_quantize_per_channel_affine", *_WITH_WEIGHTS, *(f"quantized::{name}" for name in (
         "add", "add_relu", "mul", "cat", "sigmoid", "hardswish", "leaky_relu", "layer_norm", "group_norm",
         "instance_norm"))): {"ONNX QuantizeLinear/DequantizeLinear": 10},
    ("aten::quantize_per_channel", "aten::fake_quantize_per_channel_affine"): {
        "per-channel quantization (QuantizeLinear/DequantizeLinear with axis)": 13},
    ("aten::fake_quantize_per_tensor_affine", "aten::fake_quantize_per_channel_affine"): {
        "a range clipped below the type's maximum (Clip on integers)": 13},
    _WITH_WEIGHTS: {"per-channel weights (DequantizeLinear with axis)": 13},
}, unlisted={
    "a quantized graph input (ONNX QuantizeLinear/DequantizeLinear)": 10,
})

# torch ScalarType index / quantized dtype -> the ONNX integer type of the zero point
_SCALAR_TYPES = {12: torch.int8, 13: torch.uint8, 14: torch.int32}
_RANGES = {(0, 255): torch.uint8, (-128, 127): torch.int8, (0, 127): torch.uint8}


def _scalar(g, value, dtype: torch.dtype, op: str):
    """A scale or zero point: a constant of ``dtype``, or a runtime tensor cast to it."""
    known = sh.const(value, None) if not isinstance(value, (int, float)) else value
    if isinstance(known, torch.Tensor):
        known = known.tolist()
    if known is not None:
        return g.constant(torch.tensor(known, dtype=torch.float64).to(dtype), dtype)
    return value if dtype == value.dtype else onnx_ops.cast(g, value, dtype)


def qdq(g, x, scale, zero_point, zp_dtype: torch.dtype, axis: int | None = None, op: str = "quantize",
        quant_max: int | None = None):
    """``DequantizeLinear(QuantizeLinear(x))``: x rounded to the quantization grid, as float;
    ``quant_max`` clips the integers below their type's maximum (a Clip on integers: opset 13)."""
    if axis is not None:
        OPSET.require(g, "per-channel quantization (QuantizeLinear/DequantizeLinear with axis)")
    OPSET.require(g, "ONNX QuantizeLinear/DequantizeLinear")
    if quant_max is not None:
        OPSET.require(g, "a range clipped below the type's maximum (Clip on integers)")
    if zp_dtype == torch.int32:
        sh.unimplemented(op, "qint32 activations have no QuantizeLinear zero point type before opset 21")
    scale = _scalar(g, scale, torch.float32, op)
    zero_point = _scalar(g, zero_point, zp_dtype, op)
    kw = {"axis_i": axis} if axis is not None else {}
    q = g.op("QuantizeLinear", x, scale, zero_point, **kw)
    if quant_max is not None:
        q = g.op("Clip", q, None, g.constant(quant_max, zp_dtype))
    return g.op("DequantizeLinear", q, scale, zero_point, **kw)


def _out_dtype(g) -> torch.dtype:
    """The integer type of the node's quantized output (g.output_dtype reports it as float)."""
    name = g.original_node.outputsAt(0).type().scalarType()
    return {"QInt8": torch.int8, "QUInt8": torch.uint8, "QInt32": torch.int32}.get(name, torch.uint8)


def weight(g, qweight: torch.Tensor, op: str, transpose: bool = False, rank: int | None = None):
    """A quantized weight as ``DequantizeLinear`` of its integer values (an initializer)."""
    ints = qweight.int_repr()
    if rank is not None and ints.dim() > rank:
        ints = ints.squeeze(2)  # quantized conv1d packs its weight as conv2d's (out, in, 1, k)
    if transpose:
        ints = ints.t().contiguous()
    if qweight.qscheme() in (torch.per_tensor_affine, torch.per_tensor_symmetric):
        OPSET.require(g, "ONNX QuantizeLinear/DequantizeLinear")
        scale = g.constant(float(qweight.q_scale()), torch.float32)
        zero_point = g.constant(int(qweight.q_zero_point()), ints.dtype)
        return g.op("DequantizeLinear", g.constant(ints, ints.dtype), scale, zero_point)
    if qweight.qscheme() in (torch.per_channel_affine, torch.per_channel_symmetric):
        OPSET.require(g, "per-channel weights (DequantizeLinear with axis)")
        axis = qweight.q_per_channel_axis()
        if transpose:
            axis = 1 - axis
        scale = g.constant(qweight.q_per_channel_scales().to(torch.float32), torch.float32)
        zero_point = g.constant(qweight.q_per_channel_zero_points().to(ints.dtype), ints.dtype)
        return g.op("DequantizeLinear", g.constant(ints, ints.dtype), scale, zero_point, axis_i=axis)
    sh.unimplemented(op, f"weights quantized as {qweight.qscheme()}")


def dequantize_node(qx):
    """The nearest DequantizeLinear of a quantized value, through the ops that keep a quantization
    (relu, max_pool, reshape: their data input is input 0); None if there is none."""
    node = qx.producer if isinstance(qx, Value) else None
    while node is not None and node.op_type != "DequantizeLinear":
        node = node.inputs[0].producer if node.inputs and node.inputs[0] is not None else None
    return node


def _input_scale(qx):
    """The scale of a quantized value (its nearest DequantizeLinear's); None if there is none."""
    node = dequantize_node(qx)
    return None if node is None else node.inputs[1]


def bias(g, qx, qweight: torch.Tensor, bias: torch.Tensor | None):
    """The float bias of a quantized conv/linear as the int32 values torch's kernels add: quantized
    with scale input_scale * weight_scale and zero point 0 (per output channel for per-channel
    weights), then DequantizeLinear. Legacy-compatible: Mul, Div and Cast (which truncates) fold into
    an int32 initializer when the input scale is a constant. A float bias when the input's scale
    cannot be found (an input that is not the output of a quantize op)."""
    if bias is None:
        return None
    float_bias = g.constant(bias.detach().float(), torch.float32)
    input_scale = _input_scale(qx)
    if input_scale is None:
        return float_bias
    per_channel = qweight.qscheme() in (torch.per_channel_affine, torch.per_channel_symmetric)
    scales = qweight.q_per_channel_scales() if per_channel else torch.tensor(qweight.q_scale())
    weight_scale = g.constant(scales.to(torch.float32), torch.float32)
    bias_scale = g.op("Mul", weight_scale, input_scale)
    q_bias = onnx_ops.cast(g, g.op("Div", float_bias, bias_scale), torch.int32)
    zero_point = g.constant(torch.zeros(scales.shape, dtype=torch.int32), torch.int32)
    kw = {"axis_i": 0} if per_channel else {}
    return g.op("DequantizeLinear", q_bias, bias_scale, zero_point, **kw)


# Graph inputs and outputs. A quantized tensor crosses the graph boundary as the legacy exporter
# lays it out: three values, its integer values (uint8 for quint8, int8 for qint8, int32 for
# qint32), its scale and its zero point (0-d double and int64 going in; float and the integer type
# coming out, the types QuantizeLinear gives).


def graph_input(g, values: Value, scale: Value, zero_point: Value, dtype: torch.dtype) -> Value:
    """The quantized value (its dequantized float, module docstring) of a graph input given as
    integer ``values`` of ``dtype``, a double ``scale`` and an int64 ``zero_point``."""
    OPSET.require(g, "a quantized graph input (ONNX QuantizeLinear/DequantizeLinear)")
    scale = onnx_ops.cast(g, scale, torch.float32)
    zero_point = onnx_ops.cast(g, zero_point, dtype)
    return g.op("DequantizeLinear", values, scale, zero_point)


def graph_output(g, value: Value) -> tuple[Value, Value, Value]:
    """A quantized value as (integer values, scale, zero point): the quantization of its nearest
    DequantizeLinear (``value`` itself or the one an op that keeps quantization read)."""
    node = dequantize_node(value)
    if node is None:
        sh.unimplemented("a quantized graph output", "its scale and zero point are not known in the graph")
    if len(node.inputs) < 3 or node.inputs[2] is None:
        sh.unimplemented("a quantized graph output", "its DequantizeLinear has no zero point")
    if node.attr("axis") is not None:
        sh.unimplemented("a quantized graph output", "per-channel quantized outputs (legacy exports a tensor's scale "
                                                     "and zero point as 0-d outputs)")
    scale, zero_point = node.inputs[1], node.inputs[2]
    if node.outputs[0] is value:
        return node.inputs[0], scale, zero_point
    return g.op("QuantizeLinear", value, scale, zero_point), scale, zero_point


# What torch does to the result of an aten op on quantized tensors (legacy: ``quantized_args``):
# most ops quantize it with their input's scale and zero point; a few with fixed ones.
FIXED_QPARAMS = {  # op -> output integer type -> (scale, zero point)
    "aten::sigmoid": {torch.uint8: (1.0 / 256, 0), torch.int8: (1.0 / 256, -128)},
    "aten::hardsigmoid": {torch.uint8: (1.0 / 256, 0), torch.int8: (1.0 / 256, -128)},
    "aten::tanh": {torch.uint8: (2.0 / 256, 128), torch.int8: (2.0 / 256, 0)},
}
# ops that only move, select or compare values: their float result already lies on the input's grid
KEEPS_QUANTIZATION = frozenset(f"aten::{op}" for op in (
    "relu", "relu_", "flatten", "reshape", "view", "max_pool1d", "max_pool2d", "max_pool3d", "transpose",
    "permute", "t", "select", "slice", "narrow", "expand", "expand_as", "as_strided", "squeeze", "unsqueeze",
    "contiguous", "clone", "detach", "flip", "roll", "repeat", "pixel_shuffle", "pixel_unshuffle",
    "channel_shuffle", "upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d", "quantize_per_tensor",
    "quantize_per_channel"))


# ops whose float result on a quantized input leaves the input's grid, quantized again by torch
# with the input's scale and zero point
LEAVES_THE_GRID = frozenset(f"aten::{op}" for op in (
    "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
    "upsample_bilinear2d", "leaky_relu", "mean", "gelu"))


def scripted_result_dtype(kind: str, input: Value) -> torch.dtype | None:
    """The integer type of the quantized result of op ``kind`` (one that quantizes its result
    again: ``FIXED_QPARAMS``, ``LEAVES_THE_GRID``) on ``input``, when ``input`` is a quantized value
    (a DequantizeLinear's output); else None. A scripted graph does not type its values, so its
    quantized results are known by their inputs."""
    node = input.producer if isinstance(input, Value) else None
    if kind not in FIXED_QPARAMS and kind not in LEAVES_THE_GRID or node is None \
            or node.op_type != "DequantizeLinear" or len(node.inputs) < 3 or node.inputs[2] is None:
        return None
    return node.inputs[2].dtype if node.inputs[2].dtype in (torch.uint8, torch.int8) else None


def requantize(g, kind: str, value: Value, dtype: torch.dtype) -> Value:
    """The float result of aten op ``kind`` on quantized input, quantized as torch quantizes it
    (integers of ``dtype``): with the op's fixed scale and zero point, else with its input's."""
    if kind in KEEPS_QUANTIZATION or dtype not in (torch.uint8, torch.int8) or value.producer is None \
            or value.producer.op_type == "DequantizeLinear":
        return value
    if kind in FIXED_QPARAMS and dtype in FIXED_QPARAMS[kind]:
        scale, zero_point = FIXED_QPARAMS[kind][dtype]
        return qdq(g, value, scale, zero_point, dtype, op=kind)
    node = dequantize_node(value)
    if node is None or node.attr("axis") is not None or len(node.inputs) < 3:
        return value  # no per-tensor quantization to keep: left as computed
    return qdq(g, value, node.inputs[1], node.inputs[2], node.inputs[2].dtype or dtype, op=kind)


def _packed(value, op: str):
    obj = sh.const(value, None)
    if obj is None:
        sh.value_error(f"{op}: the packed weights must be known at export time", value)
    return obj


@symbolic("aten::quantize_per_tensor")
def quantize_per_tensor(g, self, scale, zero_point, dtype):
    """quantize_per_tensor(Tensor self, float scale, int zero_point, ScalarType dtype) -> Tensor"""
    return qdq(g, self, scale, zero_point, _SCALAR_TYPES[sh.const(dtype)], op="quantize_per_tensor")


@symbolic("aten::quantize_per_channel")
def quantize_per_channel(g, self, scales, zero_points, axis, dtype):
    """quantize_per_channel(Tensor self, Tensor scales, Tensor zero_points, int axis, ScalarType dtype) -> Tensor"""
    return qdq(g, self, scales, zero_points, _SCALAR_TYPES[sh.const(dtype)], axis=sh.const(axis),
               op="quantize_per_channel")


@symbolic("aten::dequantize")
def dequantize(g, self):
    """dequantize.self(Tensor self) -> Tensor"""
    return self  # a quantized value already is its dequantized float (module docstring)


def _range(quant_min, quant_max, op: str) -> tuple[torch.dtype, int | None]:
    """The integer type of a fake quantization's range, and the maximum to clip to below the type's
    own ((0, 127): the range PyTorch's observers give activations with reduce_range)."""
    bounds = (sh.const(quant_min), sh.const(quant_max))
    if bounds not in _RANGES:
        sh.unimplemented(op, f"quant_min/quant_max {bounds}: ONNX quantizes to (0, 127), (0, 255) or (-128, 127) only")
    return _RANGES[bounds], 127 if bounds == (0, 127) else None


@symbolic("aten::fake_quantize_per_tensor_affine")
def fake_quantize_per_tensor_affine(g, self, scale, zero_point, quant_min=None, quant_max=None):
    """fake_quantize_per_tensor_affine(Tensor self, float scale, int zero_point, int quant_min, int quant_max) -> Tensor"""
    dtype, clip = _range(quant_min, quant_max, "fake_quantize_per_tensor_affine")
    return qdq(g, self, scale, zero_point, dtype, op="fake_quantize_per_tensor_affine", quant_max=clip)


@symbolic("aten::fake_quantize_per_channel_affine")
def fake_quantize_per_channel_affine(g, self, scale, zero_point, axis, quant_min, quant_max):
    """fake_quantize_per_channel_affine(Tensor self, Tensor scale, Tensor zero_point, int axis, int quant_min, int quant_max) -> Tensor"""
    dtype, clip = _range(quant_min, quant_max, "fake_quantize_per_channel_affine")
    return qdq(g, self, scale, zero_point, dtype, axis=sh.const(axis), op="fake_quantize_per_channel_affine",
               quant_max=clip)


def _conv(g, qx, packed, output_scale, output_zero_point, op: str, relu: bool = False):
    params = _packed(packed, op)
    qweight, b = params.unpack()
    spatial = (sh.rank(qx) or qweight.dim()) - 2
    w = weight(g, qweight, op, rank=spatial + 2)
    kernel = list(qweight.shape[-spatial:])
    stride, padding, dilation = (list(f())[-spatial:] for f in (params.stride, params.padding, params.dilation))
    qbias = bias(g, qx, qweight, b) if b is not None else None
    attrs = dict(kernel_shape_i=kernel, strides_i=stride, pads_i=padding + padding, dilations_i=dilation,
                 group_i=params.groups())
    if params.transpose():
        out = conv_transpose(g, qx, w, qbias, attrs, list(params.output_padding())[-spatial:])
    else:
        out = g.op("Conv", qx, w, *([qbias] if qbias is not None else []), **attrs)
    if relu:
        out = g.op("Relu", out)
    return qdq(g, out, output_scale, output_zero_point, _out_dtype(g), op=op)


@symbolic("quantized::conv1d")
def quantized_conv1d(g, qx, packed_weight, output_scale, output_zero_point):
    """quantized::conv1d(Tensor qx, __torch__.torch.classes.quantized.Conv2dPackedParamsBase packed_weight, float output_scale, int output_zero_point) -> Tensor"""
    return _conv(g, qx, packed_weight, output_scale, output_zero_point, "quantized::conv1d")


@symbolic("quantized::conv1d_relu")
def quantized_conv1d_relu(g, qx, packed_weight, output_scale, output_zero_point):
    """quantized::conv1d_relu(Tensor qx, __torch__.torch.classes.quantized.Conv2dPackedParamsBase packed_weight, float output_scale, int output_zero_point) -> Tensor"""
    return _conv(g, qx, packed_weight, output_scale, output_zero_point, "quantized::conv1d_relu", relu=True)


@symbolic("quantized::conv2d")
def quantized_conv2d(g, qx, packed_weight, output_scale, output_zero_point):
    """quantized::conv2d.new(Tensor qx, __torch__.torch.classes.quantized.Conv2dPackedParamsBase packed_weight, float output_scale, int output_zero_point) -> Tensor"""
    return _conv(g, qx, packed_weight, output_scale, output_zero_point, "quantized::conv2d")


@symbolic("quantized::conv2d_relu")
def quantized_conv2d_relu(g, qx, packed_weight, output_scale, output_zero_point):
    """quantized::conv2d_relu.new(Tensor qx, __torch__.torch.classes.quantized.Conv2dPackedParamsBase packed_weight, float output_scale, int output_zero_point) -> Tensor"""
    return _conv(g, qx, packed_weight, output_scale, output_zero_point, "quantized::conv2d_relu", relu=True)


@symbolic("quantized::conv3d")
def quantized_conv3d(g, qx, packed_weight, output_scale, output_zero_point):
    """quantized::conv3d.new(Tensor qx, __torch__.torch.classes.quantized.Conv3dPackedParamsBase packed_weight, float output_scale, int output_zero_point) -> Tensor"""
    return _conv(g, qx, packed_weight, output_scale, output_zero_point, "quantized::conv3d")


@symbolic("quantized::conv3d_relu")
def quantized_conv3d_relu(g, qx, packed_weight, output_scale, output_zero_point):
    """quantized::conv3d_relu.new(Tensor qx, __torch__.torch.classes.quantized.Conv3dPackedParamsBase packed_weight, float output_scale, int output_zero_point) -> Tensor"""
    return _conv(g, qx, packed_weight, output_scale, output_zero_point, "quantized::conv3d_relu", relu=True)


def _linear(g, x, packed, scale, zero_point, op: str, relu: bool = False):
    qweight, b = torch.ops.quantized.linear_unpack(_packed(packed, op))
    out = g.op("MatMul", x, weight(g, qweight, op, transpose=True))
    if b is not None:
        out = g.op("Add", out, bias(g, x, qweight, b))
    if relu:
        out = g.op("Relu", out)
    return qdq(g, out, scale, zero_point, _out_dtype(g), op=op)


@symbolic("quantized::linear")
def quantized_linear(g, X, W_prepack, Y_scale_i, Y_zero_point_i):
    """quantized::linear(Tensor X, __torch__.torch.classes.quantized.LinearPackedParamsBase W_prepack, float Y_scale_i, int Y_zero_point_i) -> Tensor Y"""
    return _linear(g, X, W_prepack, Y_scale_i, Y_zero_point_i, "quantized::linear")


@symbolic("quantized::linear_relu")
def quantized_linear_relu(g, X, W_prepack, Y_scale_i, Y_zero_point_i):
    """quantized::linear_relu(Tensor X, __torch__.torch.classes.quantized.LinearPackedParamsBase W_prepack, float Y_scale_i, int Y_zero_point_i) -> Tensor Y"""
    return _linear(g, X, W_prepack, Y_scale_i, Y_zero_point_i, "quantized::linear_relu", relu=True)


def _binary(g, op_type: str, qa, qb, scale, zero_point, op: str, relu: bool = False):
    out = g.op(op_type, qa, qb)
    if relu:
        out = g.op("Relu", out)
    return qdq(g, out, scale, zero_point, _out_dtype(g), op=op)


@symbolic("quantized::add")
def quantized_add(g, qa, qb, scale, zero_point):
    """quantized::add(Tensor qa, Tensor qb, float scale, int zero_point) -> Tensor qc"""
    return _binary(g, "Add", qa, qb, scale, zero_point, "quantized::add")


@symbolic("quantized::add_relu")
def quantized_add_relu(g, qa, qb, scale, zero_point):
    """quantized::add_relu(Tensor qa, Tensor qb, float scale, int zero_point) -> Tensor qc"""
    return _binary(g, "Add", qa, qb, scale, zero_point, "quantized::add_relu", relu=True)


@symbolic("quantized::mul")
def quantized_mul(g, qa, qb, scale, zero_point):
    """quantized::mul(Tensor qa, Tensor qb, float scale, int zero_point) -> Tensor qc"""
    return _binary(g, "Mul", qa, qb, scale, zero_point, "quantized::mul")


@symbolic("quantized::cat")
def quantized_cat(g, qx, dim, scale, zero_point):
    """quantized::cat(Tensor[] qx, int dim, float? scale, int? zero_point) -> Tensor"""
    out = g.op("Concat", *sh.unpack_list(qx), axis_i=sh.const(dim))
    if sh.is_none(scale):
        return out  # the inputs' quantization is kept
    return qdq(g, out, scale, zero_point, _out_dtype(g), op="quantized::cat")


@symbolic("quantized::sigmoid")
def quantized_sigmoid(g, qx, output_scale, output_zero_point):
    """quantized::sigmoid(Tensor qx, float output_scale, int output_zero_point) -> Tensor"""
    return qdq(g, g.op("Sigmoid", qx), output_scale, output_zero_point, _out_dtype(g), op="quantized::sigmoid")


@symbolic("quantized::conv_transpose1d")
def quantized_conv_transpose1d(g, qx, packed_weight, output_scale, output_zero_point):
    """quantized::conv_transpose1d(Tensor qx, __torch__.torch.classes.quantized.Conv2dPackedParamsBase packed_weight, float output_scale, int output_zero_point) -> Tensor"""
    return _conv(g, qx, packed_weight, output_scale, output_zero_point, "quantized::conv_transpose1d")


@symbolic("quantized::conv_transpose2d")
def quantized_conv_transpose2d(g, qx, packed_weight, output_scale, output_zero_point):
    """quantized::conv_transpose2d(Tensor qx, __torch__.torch.classes.quantized.Conv2dPackedParamsBase packed_weight, float output_scale, int output_zero_point) -> Tensor"""
    return _conv(g, qx, packed_weight, output_scale, output_zero_point, "quantized::conv_transpose2d")


@symbolic("quantized::conv_transpose3d")
def quantized_conv_transpose3d(g, qx, packed_weight, output_scale, output_zero_point):
    """quantized::conv_transpose3d(Tensor qx, __torch__.torch.classes.quantized.Conv3dPackedParamsBase packed_weight, float output_scale, int output_zero_point) -> Tensor"""
    return _conv(g, qx, packed_weight, output_scale, output_zero_point, "quantized::conv_transpose3d")


def _float_op(g, kind: str, inputs: list, scale, zero_point, op: str):
    """The float conversion of ``kind`` on the dequantized input, then the op's output quantization."""
    fn = registry.lookup(kind, g.opset)
    args = [v if isinstance(v, Value) or v is None else Value("", const=v) for v in inputs]
    return qdq(g, fn(g, *args), scale, zero_point, _out_dtype(g), op=op)


@symbolic("quantized::hardswish")
def quantized_hardswish(g, input, output_scale, output_zero_point):
    """quantized::hardswish(Tensor input, float output_scale, int output_zero_point) -> Tensor"""
    return _float_op(g, "aten::hardswish", [input], output_scale, output_zero_point, "quantized::hardswish")


@symbolic("quantized::leaky_relu")
def quantized_leaky_relu(g, qx, negative_slope, inplace, output_scale, output_zero_point):
    """quantized::leaky_relu(Tensor qx, Scalar negative_slope, bool inplace, float output_scale, int output_zero_point) -> Tensor"""
    return _float_op(g, "aten::leaky_relu", [qx, negative_slope], output_scale, output_zero_point,
                     "quantized::leaky_relu")


@symbolic("quantized::layer_norm")
def quantized_layer_norm(g, input, normalized_shape, weight, bias, eps, output_scale, output_zero_point):
    """quantized::layer_norm(Tensor input, int[] normalized_shape, Tensor? weight, Tensor? bias, float eps, float output_scale, int output_zero_point) -> Tensor"""
    return _float_op(g, "aten::layer_norm", [input, normalized_shape, weight, bias, eps, False],
                     output_scale, output_zero_point, "quantized::layer_norm")


@symbolic("quantized::group_norm")
def quantized_group_norm(g, input, num_groups, weight, bias, eps, output_scale, output_zero_point):
    """quantized::group_norm(Tensor input, int num_groups, Tensor? weight, Tensor? bias, float eps, float output_scale, int output_zero_point) -> Tensor"""
    return _float_op(g, "aten::group_norm", [input, num_groups, weight, bias, eps, False],
                     output_scale, output_zero_point, "quantized::group_norm")


@symbolic("quantized::instance_norm")
def quantized_instance_norm(g, input, weight, bias, eps, output_scale, output_zero_point):
    """quantized::instance_norm(Tensor input, Tensor? weight, Tensor? bias, float eps, float output_scale, int output_zero_point) -> Tensor"""
    return _float_op(g, "aten::instance_norm", [input, weight, bias, None, None, True, 0.1, eps, False],
                     output_scale, output_zero_point, "quantized::instance_norm")
