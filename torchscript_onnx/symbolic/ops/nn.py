"""Neural-network layers at opset 9: convolution, pooling, normalization, linear, dropout."""

from __future__ import annotations

import torch

from torchscript_onnx.builder import onnx_ops
from torchscript_onnx.builder.ir import Value

from .. import symbolic_helper as sh
from ..registry import declare_opset_requirements, symbolic
from .linalg import matmul_typed, scaled_sum


# When an op here needs a higher opset than it is registered at: the condition (the reason its
# conversion states with OPSET.require) -> the lowest opset that converts it (docs/supported_ops.md).
OPSET = declare_opset_requirements({
    ("aten::max_pool1d", "aten::max_pool2d", "aten::max_pool3d", "aten::max_pool1d_with_indices",
     "aten::max_pool2d_with_indices", "aten::max_pool3d_with_indices"): {"dilation > 1": 10},
    ("aten::max_pool1d", "aten::max_pool2d", "aten::max_pool3d", "aten::max_pool1d_with_indices",
     "aten::max_pool2d_with_indices", "aten::max_pool3d_with_indices", "aten::avg_pool1d", "aten::avg_pool2d",
     "aten::avg_pool3d"): {"ceil_mode=True with spatial sizes known only at runtime": 10},
    ("aten::feature_dropout", "aten::alpha_dropout", "aten::native_dropout"): {
        "training mode (Dropout with training_mode)": 12},
}, unlisted={
    "indices (MaxPool with a second output)": 8,
})


def _expand_list(values, n: int) -> list[int]:
    values = list(values) if isinstance(values, (list, tuple)) else [values]
    return values * n if len(values) == 1 else values


# ---------------------------------------------------------------------------------------------
# Convolution


def convolution(g, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """The one lowering behind every aten convolution op."""
    spatial = (weight.rank or 0) - 2
    if spatial < 1:
        sh.value_error("convolution: the weight rank must be known and at least 3", weight)
    kernel = list(weight.shape[2:])
    if any(not isinstance(k, int) for k in kernel):
        sh.value_error("convolution: the kernel size must be static", weight)
    attrs = dict(
        kernel_shape_i=kernel,
        strides_i=_expand_list(stride, spatial),
        dilations_i=_expand_list(dilation, spatial),
        group_i=groups,
    )
    if isinstance(padding, str):
        if padding == "same":
            return _conv_same(g, input, weight, bias, attrs, spatial)
        padding = [0] * spatial
    pads = _expand_list(padding, spatial)
    attrs["pads_i"] = pads + pads
    inputs = [input, weight] + ([] if sh.is_none(bias) else [bias])
    if transposed:
        return conv_transpose(g, input, weight, None if sh.is_none(bias) else bias, attrs,
                              _expand_list(output_padding, spatial))
    return g.op("Conv", *inputs, **attrs)


def conv_transpose(g, input, weight, bias, attrs: dict, output_padding: list[int]) -> Value:
    """ConvTranspose with torch's output_padding. ONNX pads crop the full output; output_padding
    lengthens it at the end. Where the end pad is at least the extra length, the extra outputs are
    values the pad would crop: a smaller end pad keeps them, exactly. Past the full output torch's
    extra outputs see no input (the bias only): output_padding there, or where onnxruntime refuses
    it (not below max(stride, dilation), as quantized torch allows), zeros padded on before the bias."""
    n = len(output_padding)
    begin, end = list(attrs["pads_i"][:n]), list(attrs["pads_i"][n:])
    native, after = [0] * n, [0] * n
    for i, extra in enumerate(output_padding):
        if extra <= end[i]:
            end[i] -= extra
            continue
        rest, end[i] = extra - end[i], 0
        if rest < max(attrs["strides_i"][i], attrs["dilations_i"][i]):
            native[i] = rest
        else:
            after[i] = rest
    attrs = dict(attrs, pads_i=begin + end)
    if any(native):
        attrs["output_padding_i"] = native
    if not any(after):
        return g.op("ConvTranspose", input, weight, *([bias] if bias is not None else []), **attrs)
    out = g.op("ConvTranspose", input, weight, **attrs)
    out = onnx_ops.pad(g, out, [0] * (n + 4) + after, "constant", 0.0)
    if bias is None:
        return out
    return g.op("Add", out, g.op("Reshape", bias, g.constant([-1] + [1] * n, torch.int64)))


def _conv_same(g, input, weight, bias, attrs, spatial):
    """padding="same": torch pads the extra element at the end, like ONNX SAME_UPPER, but
    only with stride 1; total padding = dilation * (kernel - 1)."""
    pads_begin, pads_end = [], []
    for k, d in zip(attrs["kernel_shape_i"], attrs["dilations_i"]):
        total = d * (k - 1)
        pads_begin.append(total // 2)
        pads_end.append(total - total // 2)
    attrs["pads_i"] = pads_begin + pads_end
    inputs = [input, weight] + ([] if sh.is_none(bias) else [bias])
    return g.op("Conv", *inputs, **attrs)


@symbolic("aten::_convolution")
@sh.parse_args("v", "v", "v", "is", "is", "is", "b", "is", "i", "none", "none", "none", "none")
def _convolution(g, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups,
                 benchmark=None, deterministic=None, cudnn_enabled=None, allow_tf32=None):
    """_convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding,
    SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups, bool benchmark,
    bool deterministic, bool cudnn_enabled, bool allow_tf32) -> Tensor"""
    return convolution(g, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)


@symbolic("aten::convolution")
@sh.parse_args("v", "v", "v", "is", "is", "is", "b", "is", "i")
def convolution_op(g, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding,
    SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor"""
    return convolution(g, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)


@symbolic("aten::conv_tbc")
@sh.parse_args("v", "v", "v", "i")
def conv_tbc(g, input, weight, bias, pad):
    """conv_tbc(Tensor self, Tensor weight, Tensor bias, int pad=0) -> Tensor"""
    # input (time, batch, channel) and weight (kernel, in, out): ONNX Conv wants (batch, channel,
    # time) and (out, in, kernel).
    input = g.op("Transpose", input, perm_i=[1, 2, 0])
    weight = g.op("Transpose", weight, perm_i=[2, 1, 0])
    out = convolution(g, input, weight, bias, [1], [pad], [1], False, [0], 1)
    return g.op("Transpose", out, perm_i=[2, 0, 1])


def _conv_nd(g, input, weight, bias, stride, padding, dilation, groups):
    padding = sh.const(padding)
    if not isinstance(padding, str):
        padding = sh._parse_arg(Value("", const=padding), "is", "padding", "conv")
    return convolution(g, input, weight, bias, sh._get_const(stride, "is", "stride"), padding,
                       sh._get_const(dilation, "is", "dilation"), False, [0], sh._get_const(groups, "i", "groups"))


@symbolic("aten::_convolution_mode")
def _convolution_mode(g, input, weight, bias, stride, padding, dilation, groups):
    """_convolution_mode(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, str padding,
    SymInt[] dilation, SymInt groups) -> Tensor"""
    return _conv_nd(g, input, weight, bias, stride, padding, dilation, groups)


@symbolic("aten::conv1d")
def conv1d(g, input, weight, bias, stride, padding, dilation, groups):
    """conv1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=1, SymInt[1] padding=0,
    SymInt[1] dilation=1, SymInt groups=1) -> Tensor"""
    return _conv_nd(g, input, weight, bias, stride, padding, dilation, groups)


@symbolic("aten::conv2d")
def conv2d(g, input, weight, bias, stride, padding, dilation, groups):
    """conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] padding=0,
    SymInt[2] dilation=1, SymInt groups=1) -> Tensor"""
    return _conv_nd(g, input, weight, bias, stride, padding, dilation, groups)


@symbolic("aten::conv3d")
def conv3d(g, input, weight, bias, stride, padding, dilation, groups):
    """conv3d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=1, SymInt[3] padding=0,
    SymInt[3] dilation=1, SymInt groups=1) -> Tensor"""
    return _conv_nd(g, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose_nd(g, input, weight, bias, stride, padding, output_padding, groups, dilation):
    return convolution(g, input, weight, bias, sh._get_const(stride, "is", "stride"),
                       sh._get_const(padding, "is", "padding"), sh._get_const(dilation, "is", "dilation"), True,
                       sh._get_const(output_padding, "is", "output_padding"), sh._get_const(groups, "i", "groups"))


@symbolic("aten::conv_transpose1d")
def conv_transpose1d(g, input, weight, bias, stride, padding, output_padding, groups, dilation):
    """conv_transpose1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=1,
    SymInt[1] padding=0, SymInt[1] output_padding=0, SymInt groups=1, SymInt[1] dilation=1) -> Tensor"""
    return _conv_transpose_nd(g, input, weight, bias, stride, padding, output_padding, groups, dilation)


@symbolic("aten::conv_transpose2d")
def conv_transpose2d(g, input, weight, bias, stride, padding, output_padding, groups, dilation):
    """conv_transpose2d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1,
    SymInt[2] padding=0, SymInt[2] output_padding=0, SymInt groups=1, SymInt[2] dilation=1) -> Tensor"""
    return _conv_transpose_nd(g, input, weight, bias, stride, padding, output_padding, groups, dilation)


@symbolic("aten::conv_transpose3d")
def conv_transpose3d(g, input, weight, bias, stride, padding, output_padding, groups, dilation):
    """conv_transpose3d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=1,
    SymInt[3] padding=0, SymInt[3] output_padding=0, SymInt groups=1, SymInt[3] dilation=1) -> Tensor"""
    return _conv_transpose_nd(g, input, weight, bias, stride, padding, output_padding, groups, dilation)


# ---------------------------------------------------------------------------------------------
# Pooling


def ceil_mode_pads(g, input: Value, kernel, stride, pads, dilation) -> list[int]:
    """End padding that makes floor-mode pooling produce torch's ceil-mode output size.

    Pooled values ignore padding (max) or exclude it (average with count_include_pad=False), so
    the extra end padding reproduces ceil mode exactly. Needs static spatial sizes.
    """
    n = len(kernel)
    spatial = sh.sizes(input)[2:] if input.shape is not None else None
    if spatial is None or any(not isinstance(d, int) for d in spatial):
        OPSET.require(g, "ceil_mode=True with spatial sizes known only at runtime", input)
    end = list(pads[n:])
    for i, size in enumerate(spatial):
        effective = dilation[i] * (kernel[i] - 1) + 1
        span = size + pads[i] + pads[i + n] - effective
        out = -(-span // stride[i]) + 1
        if (out - 1) * stride[i] >= size + pads[i]:  # torch drops a last window starting in the padding
            out -= 1
        needed = (out - 1) * stride[i] + effective - (size + pads[i] + pads[i + n])
        end[i] += max(0, needed)
    return list(pads[:n]) + end


def pool_attrs(g, input, kernel_size, stride, padding, dilation, ceil_mode, n: int) -> dict:
    kernel = _expand_list(kernel_size, n)
    stride = _expand_list(stride, n) if stride else kernel
    padding = _expand_list(padding, n)
    dilation = _expand_list(dilation, n)
    pads = padding + padding
    attrs = dict(kernel_shape_i=kernel, strides_i=stride)
    if any(d != 1 for d in dilation):
        OPSET.require(g, "dilation > 1")
        attrs["dilations_i"] = dilation
    if ceil_mode:
        ceil_pads = None if sh.static_sizes(input) is None and onnx_ops.has_attribute(g, "MaxPool", "ceil_mode") else \
            ceil_mode_pads(g, input, kernel, stride, pads, dilation)
        # onnxruntime refuses a pad as long as the kernel, which the ceil-mode tail of a dilated
        # kernel can need (without dilation it stays shorter): ONNX's own ceil mode then (opset 10+,
        # as dilation is)
        if ceil_pads is None or any(end >= k for end, k in zip(ceil_pads[n:], kernel)):
            attrs["ceil_mode_i"] = 1
        else:
            pads = ceil_pads
    attrs["pads_i"] = pads
    return attrs


def cut_to_torch_windows(g, outputs, input: Value, attrs: dict, padding: list[int], by_hand: bool) -> list:
    """Cut pooled ``outputs`` to torch's ceil-mode window count along the dims where ONNX may count more.

    torch drops a last window that would start in the right padding: it keeps ceil((size + pad) /
    stride) windows. ONNX's ceil mode drops it from opset 22 on (onnxruntime at every opset, which
    the spec before 22 does not ask for); padding added ``by_hand`` (a Pad node before the pool) is
    input to ONNX, which keeps such windows at every opset. A static dim is cut where the counts
    differ; a dim known only at runtime computes the count in the graph wherever a window can
    start in the padding (padding + stride longer than the dilated kernel).
    """
    n = len(padding)
    exact = "ceil_mode_i" not in attrs or g.opset >= 22  # ONNX counts as torch with its own pads
    sizes = sh.sizes(input)[2:] if input.shape is not None else [None] * n
    dilation = attrs.get("dilations_i") or [1] * n
    axes, ends = [], []
    spec = list(outputs[0].shape) if outputs[0].shape is not None else None
    for axis, (size, k, s, d, p) in enumerate(zip(sizes, attrs["kernel_shape_i"], attrs["strides_i"], dilation,
                                                   padding)):
        if exact and not (by_hand and p):
            continue
        extent = d * (k - 1) + 1
        if isinstance(size, int):
            keep, count = -(-(size + p) // s), -(-(size + 2 * p - extent) // s) + 1
            if spec is not None:
                spec[axis + 2] = count
            if keep < count:
                axes.append(axis + 2)
                ends.append(keep)
        elif p + s > extent:
            length = g.op("Add", onnx_ops.size(g, input, axis + 2), g.constant(p + s - 1, torch.int64))
            axes.append(axis + 2)
            ends.append(g.op("Div", length, g.constant(s, torch.int64)))
    if not axes:
        return list(outputs)
    if not exact and spec is not None:
        # the pooled shape as the spec before opset 22 counts it (onnxruntime computes torch's
        # count anyway), so that onnx.checker's shape inference agrees with the file
        for v in outputs:
            v.shape = tuple(spec)
    return [onnx_ops.slice(g, v, axes, [0] * len(axes), ends) for v in outputs]


def _max_pool(g, input, kernel_size, stride, padding, dilation, ceil_mode, n):
    attrs = pool_attrs(g, input, kernel_size, stride, padding, dilation, ceil_mode, n)
    out = g.op("MaxPool", input, **attrs)
    return cut_to_torch_windows(g, [out], input, attrs, _expand_list(padding, n), by_hand=False)[0]


def _max_pool_with_indices(g, input, kernel_size, stride, padding, dilation, ceil_mode, n):
    OPSET.require(g, "indices (MaxPool with a second output)", input)
    attrs = pool_attrs(g, input, kernel_size, stride, padding, dilation, ceil_mode, n)
    values, indices = g.op("MaxPool", input, outputs=2, **attrs)
    # ONNX indexes the whole flattened tensor, torch each (batch, channel) plane: subtract the
    # index of each plane's first element (a 1x1 MaxPool returns every element's own index).
    _, own = g.op("MaxPool", input, outputs=2, kernel_shape_i=[1] * n, strides_i=[1] * n)
    first = onnx_ops.slice(g, own, list(range(2, 2 + n)), [0] * n, [1] * n)
    values, indices = cut_to_torch_windows(g, [values, indices], input, attrs, _expand_list(padding, n), by_hand=False)
    return values, g.op("Sub", indices, first)


@symbolic("aten::max_pool1d_with_indices")
@sh.parse_args("v", "is", "is", "is", "is", "b")
def max_pool1d_with_indices(g, self, kernel_size, stride, padding, dilation, ceil_mode):
    """max_pool1d_with_indices(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=0,
    int[1] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)"""
    return _max_pool_with_indices(g, self, kernel_size, stride, padding, dilation, ceil_mode, 1)


@symbolic("aten::max_pool2d_with_indices")
@sh.parse_args("v", "is", "is", "is", "is", "b")
def max_pool2d_with_indices(g, self, kernel_size, stride, padding, dilation, ceil_mode):
    """max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0,
    int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)"""
    return _max_pool_with_indices(g, self, kernel_size, stride, padding, dilation, ceil_mode, 2)


@symbolic("aten::max_pool3d_with_indices")
@sh.parse_args("v", "is", "is", "is", "is", "b")
def max_pool3d_with_indices(g, self, kernel_size, stride, padding, dilation, ceil_mode):
    """max_pool3d_with_indices(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0,
    int[3] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)"""
    return _max_pool_with_indices(g, self, kernel_size, stride, padding, dilation, ceil_mode, 3)


@symbolic("aten::max_pool1d")
@sh.parse_args("v", "is", "is", "is", "is", "b")
def max_pool1d(g, self, kernel_size, stride, padding, dilation, ceil_mode):
    """max_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=0,
    int[1] dilation=1, bool ceil_mode=False) -> Tensor"""
    return _max_pool(g, self, kernel_size, stride, padding, dilation, ceil_mode, 1)


@symbolic("aten::max_pool2d")
@sh.parse_args("v", "is", "is", "is", "is", "b")
def max_pool2d(g, self, kernel_size, stride, padding, dilation, ceil_mode):
    """max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0,
    int[2] dilation=1, bool ceil_mode=False) -> Tensor"""
    return _max_pool(g, self, kernel_size, stride, padding, dilation, ceil_mode, 2)


@symbolic("aten::max_pool3d")
@sh.parse_args("v", "is", "is", "is", "is", "b")
def max_pool3d(g, self, kernel_size, stride, padding, dilation, ceil_mode):
    """max_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0,
    int[3] dilation=1, bool ceil_mode=False) -> Tensor"""
    return _max_pool(g, self, kernel_size, stride, padding, dilation, ceil_mode, 3)


def _avg_pool(g, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, n):
    divisor = None if divisor_override is None or sh.is_none(divisor_override) else sh.const(divisor_override)
    if divisor is not None:
        return _avg_pool_divisor(g, input, kernel_size, stride, padding, ceil_mode, int(divisor), n)
    if ceil_mode and count_include_pad:
        # Extra end padding would be counted; pad explicitly with zeros (counted, like torch's
        # padding) and let ceil-mode windows be clipped with count_include_pad=0.
        padding = _expand_list(padding, n)
        padded = onnx_ops.pad(g, input, [0, 0] + padding + [0, 0] + padding, "constant", 0.0) \
            if any(padding) else input
        attrs = pool_attrs(g, padded, kernel_size, stride, [0] * n, [1] * n, ceil_mode, n)
        out = g.op("AveragePool", padded, count_include_pad_i=0, **attrs)
        return cut_to_torch_windows(g, [out], input, attrs, padding, by_hand=True)[0]
    attrs = pool_attrs(g, input, kernel_size, stride, padding, [1] * n, ceil_mode, n)
    out = g.op("AveragePool", input, count_include_pad_i=int(count_include_pad), **attrs)
    return cut_to_torch_windows(g, [out], input, attrs, _expand_list(padding, n), by_hand=False)[0]


def _avg_pool_divisor(g, input, kernel_size, stride, padding, ceil_mode, divisor, n):
    """torch divides each window's sum by ``divisor``: ONNX averages over the whole kernel (padding
    counted), so scale by kernel size / divisor."""
    attrs = pool_attrs(g, input, kernel_size, stride, padding, [1] * n, False, n)
    if ceil_mode:
        # the partial windows ceil mode adds are divided by ``divisor`` too, and ONNX would average
        # them over fewer elements: pad the input explicitly with zeros (torch's padding and the
        # ceil-mode tail), so every window is a whole kernel whose zeros add nothing to the sum
        spatial = sh.sizes(input)[2:] if input.shape is not None else None
        if spatial is None or any(not isinstance(d, int) for d in spatial):
            sh.value_error("avg_pool with divisor_override and ceil_mode=True needs static spatial sizes", input)
        pads = ceil_mode_pads(g, input, attrs["kernel_shape_i"], attrs["strides_i"], attrs["pads_i"], [1] * n)
        input = onnx_ops.pad(g, input, [0, 0] + pads[:n] + [0, 0] + pads[n:], "constant", 0.0)
        attrs["pads_i"] = [0] * (2 * n)
    window = 1
    for k in attrs["kernel_shape_i"]:
        window *= k
    out = g.op("AveragePool", input, count_include_pad_i=1, **attrs)
    if window == divisor:
        return out
    return g.op("Mul", out, g.constant(window / divisor, input.dtype))


@symbolic("aten::avg_pool1d")
@sh.parse_args("v", "is", "is", "is", "b", "b")
def avg_pool1d(g, self, kernel_size, stride, padding, ceil_mode, count_include_pad):
    """avg_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=0,
    bool ceil_mode=False, bool count_include_pad=True) -> Tensor"""
    return _avg_pool(g, self, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1)


@symbolic("aten::avg_pool2d")
@sh.parse_args("v", "is", "is", "is", "b", "b", "v")
def avg_pool2d(g, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override=None):
    """avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0,
    bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor"""
    return _avg_pool(g, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 2)


@symbolic("aten::avg_pool3d")
@sh.parse_args("v", "is", "is", "is", "b", "b", "v")
def avg_pool3d(g, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override=None):
    """avg_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0,
    bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor"""
    return _avg_pool(g, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 3)


def _adaptive_pool(g, op: str, global_op: str, input: Value, output_size):
    n = len(output_size)
    spatial = sh.sizes(input)[2:] if input.shape is not None else None
    output_size = [spatial[i] if s is None and spatial else s for i, s in enumerate(output_size)]
    if all(s == 1 for s in output_size):
        return g.op(global_op, input)
    if spatial is None or any(not isinstance(d, int) for d in spatial):
        sh.value_error(f"adaptive pooling to {output_size} needs static spatial sizes", input)
    if any(size % out for size, out in zip(spatial, output_size)):
        return _adaptive_bins(g, "ReduceMean", input, spatial, output_size)
    kernel = [size // out for size, out in zip(spatial, output_size)]
    if all(k == 1 for k in kernel):
        g.legacy_only(1)  # legacy's pooling with a kernel of ones
        return input
    return g.op(op, input, kernel_shape_i=kernel, strides_i=kernel, pads_i=[0] * (2 * n))


def _adaptive_bins(g, reduce: str, input: Value, spatial, output_size):
    """Output sizes that do not divide the input: torch's bin i spans [floor(i*L/n), ceil((i+1)*L/n)),
    bins of unequal, overlapping extent. Reduce each static slice and concatenate, one axis at a time
    (mean and max over a box are separable)."""
    out = input
    for axis, (size, n) in enumerate(zip(spatial, output_size), start=2):
        if size == n:
            continue
        bins = []
        for i in range(n):
            start, end = (i * size) // n, -((-(i + 1) * size) // n)
            piece = onnx_ops.slice(g, out, [axis], [start], [end])
            bins.append(onnx_ops.reduce(g, reduce, piece, [axis], True))
        out = g.op("Concat", *bins, axis_i=axis)
    return out


@symbolic("aten::adaptive_avg_pool1d")
@sh.parse_args("v", "is")
def adaptive_avg_pool1d(g, self, output_size):
    """adaptive_avg_pool1d(Tensor self, int[1] output_size) -> Tensor"""
    return _adaptive_pool(g, "AveragePool", "GlobalAveragePool", self, output_size)


@symbolic("aten::adaptive_avg_pool2d")
def adaptive_avg_pool2d(g, self, output_size):
    """adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor"""
    sizes = [None if sh.is_none(s) else sh.const(s) for s in sh.unpack_list(output_size)]
    return _adaptive_pool(g, "AveragePool", "GlobalAveragePool", self, sizes)


@symbolic("aten::adaptive_avg_pool3d")
@sh.parse_args("v", "is")
def adaptive_avg_pool3d(g, self, output_size):
    """adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor"""
    return _adaptive_pool(g, "AveragePool", "GlobalAveragePool", self, output_size)


def _output_used(g, k: int) -> bool:
    node = getattr(g, "original_node", None)
    return node is None or bool(node.outputsAt(k).uses())


def _adaptive_max_pool(g, input: Value, output_size: list[int]):
    n = len(output_size)
    spatial = sh.sizes(input)[2:] if input.shape is not None else None
    if all(s == 1 for s in output_size):
        # Global: the index of each plane's maximum (ArgMax keeps the first, like torch).
        flat = g.op("Reshape", input, g.constant([0, 0, -1], torch.int64))
        index = g.op("ArgMax", flat, axis_i=2, keepdims_i=1)
        return g.op("GlobalMaxPool", input), g.op("Reshape", index, g.constant([0, 0] + [1] * n, torch.int64))
    if spatial is None or any(not isinstance(d, int) for d in spatial):
        sh.value_error(f"adaptive max pooling to {output_size} needs static spatial sizes", input)
    if any(size % out for size, out in zip(spatial, output_size)):
        if _output_used(g, 1):
            sh.value_error(
                f"adaptive max pooling from {spatial} to {output_size} with indices: ONNX can only express "
                "indices for output sizes that divide the input size", input)
        return _adaptive_bins(g, "ReduceMax", input, spatial, output_size), None
    kernel = [size // out for size, out in zip(spatial, output_size)]
    if g.opset < 8 and not _output_used(g, 1):  # MaxPool-7 has no indices output; fine if unused
        return g.op("MaxPool", input, kernel_shape_i=kernel, strides_i=kernel, pads_i=[0] * (2 * n)), None
    return _max_pool_with_indices(g, input, kernel, kernel, [0] * n, [1] * n, False, n)


@symbolic("aten::adaptive_max_pool1d")
@sh.parse_args("v", "is")
def adaptive_max_pool1d(g, self, output_size):
    """adaptive_max_pool1d(Tensor self, int[1] output_size) -> (Tensor, Tensor)"""
    return _adaptive_max_pool(g, self, output_size)


@symbolic("aten::adaptive_max_pool2d")
@sh.parse_args("v", "is")
def adaptive_max_pool2d(g, self, output_size):
    """adaptive_max_pool2d(Tensor self, int[2] output_size) -> (Tensor, Tensor)"""
    return _adaptive_max_pool(g, self, output_size)


@symbolic("aten::adaptive_max_pool3d")
@sh.parse_args("v", "is")
def adaptive_max_pool3d(g, self, output_size):
    """adaptive_max_pool3d(Tensor self, int[3] output_size) -> (Tensor, Tensor)"""
    return _adaptive_max_pool(g, self, output_size)


def _max_unpool(g, input: Value, indices: Value, output_size: list[int]):
    sizes = sh.sizes(input) if input.shape is not None else None
    if sizes is None or any(not isinstance(d, int) for d in sizes[:2]):
        sh.value_error("max_unpool needs static batch and channel sizes", input)
    batch, channels = sizes[:2]
    plane = 1
    for d in output_size:
        plane *= d
    # torch indexes each (batch, channel) plane, ONNX the whole flattened output: add plane offsets.
    offsets = (torch.arange(batch * channels, dtype=torch.int64) * plane).reshape(
        [batch, channels] + [1] * len(output_size))
    indices = g.op("Add", onnx_ops.cast(g, indices, torch.int64), g.constant(offsets, torch.int64))
    shape = g.constant([batch, channels] + list(output_size), torch.int64)
    n = len(output_size)
    kernel = [max(1, o // i) if isinstance(i, int) else 1 for o, i in zip(output_size, sizes[2:])]
    return g.op("MaxUnpool", input, indices, shape, kernel_shape_i=kernel, strides_i=kernel, pads_i=[0] * (2 * n))


@symbolic("aten::max_unpool2d")
@sh.parse_args("v", "v", "is")
def max_unpool2d(g, self, indices, output_size):
    """max_unpool2d(Tensor self, Tensor indices, SymInt[2] output_size) -> Tensor"""
    return _max_unpool(g, self, indices, output_size)


@symbolic("aten::max_unpool3d")
@sh.parse_args("v", "v", "is", "is", "is")
def max_unpool3d(g, self, indices, output_size, stride, padding):
    """max_unpool3d(Tensor self, Tensor indices, SymInt[3] output_size, int[3] stride, int[3] padding) -> Tensor"""
    return _max_unpool(g, self, indices, output_size)


# ---------------------------------------------------------------------------------------------
# Normalization


def _channel_constant(g, input: Value, fill: float) -> Value:
    channels = sh.sizes(input)[1] if input.shape is not None else None
    if not isinstance(channels, int):
        sh.value_error("batch_norm without affine parameters needs a static channel count", input)
    return g.constant(torch.full((channels,), fill, dtype=input.dtype or torch.float32))


@symbolic("aten::batch_norm")
def batch_norm(g, input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    """batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var,
    bool training, float momentum, float eps, bool cudnn_enabled) -> Tensor"""
    training = sh._get_const(training, "b", "training")
    eps = sh._get_const(eps, "f", "eps")
    if training or sh.is_none(running_mean):
        return batch_norm_with_batch_stats(g, input, weight, bias, eps)
    scale = _channel_constant(g, input, 1.0) if sh.is_none(weight) else weight
    shift = _channel_constant(g, input, 0.0) if sh.is_none(bias) else bias
    rank = input.rank
    if rank == 2:  # BatchNorm1d on (N, C): ONNX wants spatial dims
        unsqueezed = onnx_ops.unsqueeze(g, input, [2])
        out = g.op("BatchNormalization", unsqueezed, scale, shift, running_mean, running_var, epsilon_f=eps)
        return onnx_ops.squeeze(g, out, [2])
    return g.op("BatchNormalization", input, scale, shift, running_mean, running_var, epsilon_f=eps)


def batch_norm_with_batch_stats(g, input, weight, bias, eps):
    """Normalise with the batch's own mean and (biased) variance, as torch does in training."""
    rank = input.rank
    axes = [0] + list(range(2, rank))
    mean = onnx_ops.reduce(g, "ReduceMean", input, axes, True)
    centered = g.op("Sub", input, mean)
    variance = onnx_ops.reduce(g, "ReduceMean", g.op("Mul", centered, centered), axes, True)
    std = g.op("Sqrt", g.op("Add", variance, g.constant(eps, input.dtype)))
    out = g.op("Div", centered, std)
    shape = [1, -1] + [1] * (rank - 2)
    if not sh.is_none(weight):
        out = g.op("Mul", out, g.op("Reshape", weight, g.constant(shape, torch.int64)))
    if not sh.is_none(bias):
        out = g.op("Add", out, g.op("Reshape", bias, g.constant(shape, torch.int64)))
    return out


# ---------------------------------------------------------------------------------------------
# Linear algebra used by layers


@symbolic("aten::linear")
def linear(g, input, weight, bias):
    """linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor"""
    if input.rank == 2 and not sh.is_none(bias) and bias.rank == 1:
        return g.op("Gemm", input, weight, bias, transB_i=1)
    out = g.op("MatMul", input, g.op("Transpose", weight, perm_i=[1, 0]))
    if not sh.is_none(bias):
        out = g.op("Add", out, bias)
    return out


@symbolic("aten::addmm")
def addmm(g, self, mat1, mat2, beta=None, alpha=None):
    """addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor"""
    beta_const = 1.0 if beta is None else sh.const(beta)
    alpha_const = 1.0 if alpha is None else sh.const(alpha)
    if beta_const is sh.UNKNOWN or alpha_const is sh.UNKNOWN:  # 0-d tensors passed as Scalar: scale at runtime
        return scaled_sum(g, self, matmul_typed(g, mat1, mat2), beta, alpha)
    return g.op("Gemm", mat1, mat2, self, beta_f=float(beta_const), alpha_f=float(alpha_const))


@symbolic("aten::matmul")
def matmul(g, self, other):
    """matmul(Tensor self, Tensor other) -> Tensor"""
    return g.op("MatMul", self, other)


@symbolic("aten::mm")
def mm(g, self, mat2):
    """mm(Tensor self, Tensor mat2) -> Tensor"""
    return g.op("MatMul", self, mat2)


@symbolic("aten::bmm")
def bmm(g, self, mat2):
    """bmm(Tensor self, Tensor mat2) -> Tensor"""
    return g.op("MatMul", self, mat2)


# ---------------------------------------------------------------------------------------------
# Dropout: identity in eval; in training the ONNX Dropout op


def _dropout(g, input, p, train):
    train = sh._get_const(train, "b", "train")
    if not train:
        return input
    p = sh._get_const(p, "f", "p")
    if g.opset >= 12:
        out, _ = g.op("Dropout", input, g.constant(p, input.dtype), g.constant(True), outputs=2)
        return out
    out, _ = g.op("Dropout", input, ratio_f=p, outputs=2)
    return out


@symbolic("aten::dropout")
def dropout(g, input, p, train):
    """dropout(Tensor input, float p, bool train) -> Tensor"""
    return _dropout(g, input, p, train)


@symbolic("aten::feature_dropout")
def feature_dropout(g, input, p, train):
    """feature_dropout(Tensor input, float p, bool train) -> Tensor"""
    if not sh._get_const(train, "b", "train"):
        return input
    # one draw per (sample, channel): Dropout of ones shaped (N, C, 1, ...), times the input
    return g.op("Mul", input, _dropout(g, _feature_ones(g, input, "feature_dropout"), p, train))


def _feature_ones(g, input, op):
    OPSET.require(g, "training mode (Dropout with training_mode)")
    sizes = sh.sizes(input) or []
    if len(sizes) < 2 or not all(isinstance(n, int) for n in sizes[:2]):
        sh.value_error(f"{op} in training mode needs static batch and channel dims", input)
    return g.constant(torch.ones(sizes[:2] + [1] * (len(sizes) - 2), dtype=input.dtype))


@symbolic("aten::alpha_dropout")
def alpha_dropout(g, input, p, train):
    """alpha_dropout(Tensor input, float p, bool train) -> Tensor"""
    if not sh._get_const(train, "b", "train"):
        return input
    OPSET.require(g, "training mode (Dropout with training_mode)")
    p = sh._get_const(p, "f", "p")
    _, keep = g.op("Dropout", input, g.constant(p, input.dtype), g.constant(True), outputs=2)
    return _alpha_mix(g, input, keep, p)


def _alpha_mix(g, input, keep, p: float):
    # torch: dropped values become alpha' = -scale * alpha of SELU, then an affine map a * x + b
    # keeps mean and variance
    alpha = -1.7580993408473766
    a = (1 - p) * (1 + p * alpha * alpha)
    a = 1 / a ** 0.5 if a > 0 else 0.0
    b = -a * alpha * p
    kept = onnx_ops.cast(g, keep, input.dtype)
    dropped = g.op("Sub", g.constant(1.0, input.dtype), kept)
    mixed = g.op("Add", g.op("Mul", input, kept), g.op("Mul", dropped, g.constant(alpha, input.dtype)))
    return g.op("Add", g.op("Mul", mixed, g.constant(a, input.dtype)), g.constant(b, input.dtype))


@symbolic("aten::native_dropout")
def native_dropout(g, input, p, train):
    """native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)"""
    if sh.is_none(train) or not sh._get_const(train, "b", "train"):
        shape = onnx_ops.shape_of(g, input)
        return input, g.op("ConstantOfShape", shape, value_t=torch.ones(1, dtype=torch.bool))
    OPSET.require(g, "training mode (Dropout with training_mode)")
    p = sh._get_const(p, "f", "p")
    return g.op("Dropout", input, g.constant(p, input.dtype), g.constant(True), outputs=2)


@symbolic("aten::feature_alpha_dropout")
def feature_alpha_dropout(g, input, p, train):
    """feature_alpha_dropout(Tensor input, float p, bool train) -> Tensor"""
    if sh._get_const(train, "b", "train"):
        sh.unimplemented("feature_alpha_dropout", "training mode")
    return input


# ---------------------------------------------------------------------------------------------
# Rearranging


@symbolic("aten::pixel_shuffle")
@sh.parse_args("v", "i")
def pixel_shuffle(g, self, upscale_factor):
    """pixel_shuffle(Tensor self, int upscale_factor) -> Tensor"""
    if self.rank != 4:
        sh.value_error("pixel_shuffle: only 4-D inputs are supported", self)
    if onnx_ops.has_attribute(g, "DepthToSpace", "mode"):
        return g.op("DepthToSpace", self, blocksize_i=upscale_factor, mode_s="CRD")
    r = upscale_factor
    dims = sh.static_sizes(self)
    if dims is None:
        # Runtime sizes: Reshape's 0 copies the dim at the same position, so unit dims are
        # inserted to keep h and w where the copies need them; no Shape arithmetic.
        spread = g.op("Reshape", onnx_ops.unsqueeze(g, self, [2, 3]), _ints(g, [0, -1, r, r, 0, 0]))
        moved = g.op("Transpose", spread, perm_i=[0, 1, 4, 2, 5, 3])  # n, c', h, r, w, r
        rows = g.op("Reshape", moved, _ints(g, [0, 0, -1, 1, 0, 0]))  # n, c', h*r, 1, w, r
        cols = g.op("Reshape", rows, _ints(g, [0, 0, 0, 0, -1, 1]))  # n, c', h*r, 1, w*r, 1
        return onnx_ops.squeeze(g, cols, [3, 5])
    n, c, h, w = dims
    split = g.op("Reshape", self, g.constant([n, c // (r * r), r, r, h, w], torch.int64))
    moved = g.op("Transpose", split, perm_i=[0, 1, 4, 2, 5, 3])
    return g.op("Reshape", moved, g.constant([n, c // (r * r), h * r, w * r], torch.int64))


@symbolic("aten::pixel_unshuffle")
@sh.parse_args("v", "i")
def pixel_unshuffle(g, self, downscale_factor):
    """pixel_unshuffle(Tensor self, int downscale_factor) -> Tensor"""
    # Not SpaceToDepth: that orders the output channels block-major, torch channel-major.
    if self.rank != 4:
        sh.value_error("pixel_unshuffle: only 4-D inputs are supported", self)
    r = downscale_factor
    dims = sh.static_sizes(self)
    if dims is None:
        # As in pixel_shuffle: unit dims keep every copied (0) dim at its input position.
        rows = g.op("Reshape", onnx_ops.unsqueeze(g, self, [3]), _ints(g, [0, 0, -1, r, 0]))  # n, c, h/r, r, w
        cols = g.op("Reshape", rows, _ints(g, [0, 0, 0, 0, -1, r]))  # n, c, h/r, r, w/r, r
        moved = g.op("Transpose", cols, perm_i=[0, 1, 3, 5, 2, 4])  # n, c, r, r, h/r, w/r
        merged = g.op("Reshape", moved, _ints(g, [0, -1, 1, 1, 0, 0]))  # n, c*r*r, 1, 1, h/r, w/r
        return onnx_ops.squeeze(g, merged, [2, 3])
    n, c, h, w = dims
    split = g.op("Reshape", self, g.constant([n, c, h // r, r, w // r, r], torch.int64))
    moved = g.op("Transpose", split, perm_i=[0, 1, 3, 5, 2, 4])
    return g.op("Reshape", moved, g.constant([n, c * r * r, h // r, w // r], torch.int64))


def _ints(g, values):
    return g.constant(list(values), torch.int64)
