"""Quantization: quantize/dequantize/fake_quantize ops and eager-mode quantized modules (packed
weights) as QuantizeLinear/DequantizeLinear.

The quantize/fake_quantize ops run against eager PyTorch via onnxruntime; outputs are dequantized
floats, the tolerance one quantization step (rounding of ties may differ).

Quantized modules are checked against what their QDQ graph means, not against one backend's int8
kernels: ``float_reference`` dequantizes the model's int weights and input, runs the op in float64
and requantizes with the module's output scale and zero point (see ``check_quantized``).
Biases of quantized conv/linear are int32 (scale input_scale * weight_scale, zero point 0), as legacy."""

import functools
import io
import warnings

import numpy as np
import onnx
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.optable import Case, below_min_params, params, run_below_min, run_case
from torchscript_onnx import export
from torchscript_onnx.verify import check

warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", category=UserWarning)


@pytest.fixture(autouse=True)
def restore_quantized_engine():
    """Tests here set torch.backends.quantized.engine, a process-wide switch that picks eager
    PyTorch's kernels (qadd of qnnpack or fbgemm, ...); put it back so that a later test in the
    same pytest worker does not run on an engine chosen by the order of tests."""
    engine = torch.backends.quantized.engine
    yield
    torch.backends.quantized.engine = engine


def randn(*shape):
    return lambda: (torch.randn(*shape),)


def quantized(build, shape, engine="fbgemm", fuse=None):
    """``build()`` (a float module) statically quantized eagerly, calibrated on random data."""
    from torch.ao import quantization as tq

    def make():
        torch.backends.quantized.engine = engine
        torch.manual_seed(0)
        model = tq.QuantWrapper(build()).eval()
        if fuse:  # e.g. conv + relu -> quantized::conv2d_relu
            tq.fuse_modules(model.module, fuse, inplace=True)
        model.qconfig = tq.get_default_qconfig(engine)
        tq.prepare(model, inplace=True)
        for _ in range(4):
            model(torch.randn(*shape))
        return tq.convert(model, inplace=True)
    return make


class Functional(nn.Module):
    def __init__(self, op):
        super().__init__()
        self.f, self.op = nn.quantized.FloatFunctional(), op

    def forward(self, x):
        return getattr(self.f, self.op)(*([[x, x], 1] if self.op == "cat" else [x, x]))


class Lazy(nn.Module):
    """Builds the quantized model only when a test runs it; ``engine`` is the one it was built for."""

    def __init__(self, make, engine):
        super().__init__()
        self.make, self.engine, self.model = make, engine, None

    def eval(self):
        return self._get()

    def _get(self):
        if self.model is None:
            self.model = self.make()
        return self.model


STEP = 0.05
CASES = [
    Case("quantize_per_tensor_uint8",
         lambda x: torch.quantize_per_tensor(x, 0.05, 10, torch.quint8).dequantize(), randn(2, 3, 4),
         min_opset=10, atol=STEP, rtol=0),
    Case("quantize_per_tensor_int8",
         lambda x: torch.quantize_per_tensor(x, 0.02, -3, torch.qint8).dequantize(), randn(2, 5),
         min_opset=10, atol=0.02, rtol=0),
    Case("quantize_per_channel",
         lambda x: torch.quantize_per_channel(x, torch.tensor([0.05, 0.02, 0.1], dtype=torch.float64),
                                              torch.tensor([3, 0, -2]), 1, torch.qint8).dequantize(),
         randn(2, 3, 4), min_opset=13, atol=0.1, rtol=0),
    Case("fake_quantize_per_tensor_uint8",
         lambda x: torch.fake_quantize_per_tensor_affine(x, 0.05, 128, 0, 255), randn(3, 4),
         min_opset=10, atol=STEP, rtol=0),
    Case("fake_quantize_per_tensor_int8",
         lambda x: torch.fake_quantize_per_tensor_affine(x, 0.01, 0, -128, 127), randn(3, 4),
         min_opset=10, atol=0.01, rtol=0),
    # (0, 127): the range observers give activations with reduce_range; uint8 clipped at 127
    Case("fake_quantize_per_tensor_reduced_range",
         lambda x: torch.fake_quantize_per_tensor_affine(x * 4, 0.05, 10, 0, 127), randn(3, 40),
         min_opset=13, atol=STEP, rtol=0),
    Case("fake_quantize_per_channel",
         lambda x: torch.fake_quantize_per_channel_affine(x, torch.tensor([0.05, 0.1]),
                                                          torch.tensor([0, 5], dtype=torch.int32), 0, -128, 127),
         randn(2, 6), min_opset=13, atol=0.1, rtol=0),
]


@pytest.mark.parametrize("case,opset", params(CASES))
def test_quantized(case, opset):
    run_case(case, opset)


@pytest.mark.parametrize("case,opset", below_min_params(CASES))
def test_quantized_below_min(case, opset):
    run_below_min(case, opset)


# ---------------------------------------------------------------------------------------------
# Quantized modules, checked against a float reference of their QDQ graph


def _requantize(y: torch.Tensor, scale: float, zero_point: int, dtype: torch.dtype) -> torch.Tensor:
    """The float64 result ``y`` quantized as QuantizeLinear defines it: round half to even, clamp."""
    int_dtype = {torch.quint8: torch.uint8, torch.qint8: torch.int8}[dtype]
    info = torch.iinfo(int_dtype)
    q = (torch.round(y / float(scale)) + int(zero_point)).clamp(info.min, info.max)
    return torch._make_per_tensor_quantized_tensor(q.to(int_dtype), float(scale), int(zero_point))


def _weighted(module, x):
    """conv, conv-transpose and linear in float64 from the dequantized int weight and the float bias."""
    import torch.ao.nn.quantized as nnq

    weight, bias = module.weight().dequantize().double(), module.bias()
    bias = None if bias is None else bias.double()
    if isinstance(module, nnq.Linear):
        return F.linear(x, weight, bias)
    if module.padding_mode != "zeros":
        raise NotImplementedError(f"reference for padding_mode={module.padding_mode!r}")
    n = len(module.kernel_size)
    if module.transposed:
        return getattr(F, f"conv_transpose{n}d")(x, weight, bias, module.stride, module.padding,
                                                 module.output_padding, module.groups, module.dilation)
    return getattr(F, f"conv{n}d")(x, weight, bias, module.stride, module.padding, module.dilation, module.groups)


def _instance_norm(module, x):
    return F.instance_norm(x, weight=module.weight.double(), bias=module.bias.double(), eps=module.eps)


@functools.cache
def _float_ops():
    """Quantized module type -> its float op on the dequantized input (float64)."""
    import torch.ao.nn.intrinsic.quantized as nniq
    import torch.ao.nn.quantized as nnq

    ops = {cls: _weighted for cls in (nnq.Linear, nnq.Conv1d, nnq.Conv2d, nnq.Conv3d, nnq.ConvTranspose1d,
                                      nnq.ConvTranspose2d, nnq.ConvTranspose3d)}
    ops.update({cls: lambda m, x: F.relu(_weighted(m, x))
                for cls in (nniq.LinearReLU, nniq.ConvReLU1d, nniq.ConvReLU2d, nniq.ConvReLU3d)})
    ops.update({
        nnq.Hardswish: lambda m, x: F.hardswish(x),
        nnq.LeakyReLU: lambda m, x: F.leaky_relu(x, m.negative_slope),
        nnq.LayerNorm: lambda m, x: F.layer_norm(x, m.normalized_shape, m.weight.double(), m.bias.double(), m.eps),
        nnq.GroupNorm: lambda m, x: F.group_norm(x, m.num_groups, m.weight.double(), m.bias.double(), m.eps),
        nnq.InstanceNorm1d: _instance_norm, nnq.InstanceNorm2d: _instance_norm, nnq.InstanceNorm3d: _instance_norm,
        Functional: lambda m, x: {"add": lambda: x + x, "add_relu": lambda: F.relu(x + x), "mul": lambda: x * x,
                                  "cat": lambda: torch.cat([x, x], 1)}[m.op](),
    })
    return ops


def _reference_output(module, inputs, output):
    """Forward hook: replaces the eager kernel's output of ``module`` with the float reference."""
    import torch.ao.nn.quantized as nnq

    if isinstance(module, nnq.Quantize):
        return _requantize(inputs[0].double(), module.scale, module.zero_point, module.dtype)
    x = inputs[0].dequantize().double()
    if isinstance(module, nn.Sigmoid):  # aten::sigmoid of a quint8 tensor: fixed qparams 1/256, 0
        if output.dtype != torch.quint8:
            raise NotImplementedError(f"reference for a {output.dtype} sigmoid")
        return _requantize(torch.sigmoid(x), 1 / 256, 0, output.dtype)
    qparams = module.f if isinstance(module, Functional) else module  # QFunctional holds them
    return _requantize(_float_ops()[type(module)](module, x), qparams.scale, qparams.zero_point, output.dtype)


def _unchanged(module, inputs, output):
    """Forward hook on other leaves: only ops that are exact on quantized values may stay eager."""
    exact = (nn.ReLU, nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d, nn.Identity, nn.Flatten, nn.Dropout)
    if isinstance(output, torch.Tensor) and output.is_quantized and not isinstance(module, exact):
        raise NotImplementedError(f"no float reference for {type(module).__name__}")


def float_reference(model: nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, float]:
    """What the QDQ graph of the eager-quantized ``model`` computes on ``x``, independent of the CPU.

    Each quantized module's output is replaced (forward hooks) by its op run in float64 on the
    dequantized input and the dequantized int weights, requantized with the module's own output
    scale and zero point. Leaves without a reference must be exact on quantized values (ReLU,
    max pooling); others raise. Quantized arithmetic written in a container's own forward is not
    seen, so test models keep it in modules. Returns the dequantized output and its quantization
    step (the scale of the tensor entering the final DeQuantStub)."""
    import torch.ao.nn.quantized as nnq

    reference = (nnq.Quantize, nn.Sigmoid, *_float_ops())
    steps = []
    hooks = []
    for module in model.modules():
        if isinstance(module, nnq.DeQuantize):
            hooks.append(module.register_forward_hook(lambda m, i, o: steps.append(i[0].q_scale())))
        elif type(module) in reference:
            hooks.append(module.register_forward_hook(_reference_output))
        elif not list(module.children()):
            hooks.append(module.register_forward_hook(_unchanged))
    try:
        with torch.no_grad():
            y = model(x)
    finally:
        for hook in hooks:
            hook.remove()
    if len(steps) != 1:
        raise NotImplementedError(f"expected one DeQuantStub on the way to the output, ran {len(steps)}")
    return y.double(), steps[0]


def assert_within_one_step(got, want: torch.Tensor, step: float, what: str) -> None:
    """``got`` (dequantized output) is on the output's quantization grid and within one step of the
    reference ``want``, and most elements are equal.

    Why one step is exact enough, and not looser: the reference rounds a float64 result, the
    exported model a float32 one (summation order depends on the CPU's kernels), and its bias is
    int32 at scale input_scale * weight_scale (far below one output step), so the two only disagree
    where a value lies within float32 error (or that bias error) of a rounding boundary: by one
    step, on a few elements (measured on 40 random 3-layer convnets: at most 2 of 20 outputs; none in
    the one-layer table). A wrong export does not look like that: a zero point off by one moves every
    element by one step (caught by the count), a missing requantization leaves values off the grid,
    a wrong scale moves the large values by several steps. Tried on the module table by editing
    exported graphs: an output zero point + 1, a missing output requantization and an input zero
    point + 1 fail every case where they change the math (not: a shifted input under a norm, the
    requantization of x + x and cat(x, x) whose output grid is the input's); an output or weight
    scale * 1.02 fails every case but linear_relu, * 1.05 every case."""
    got = np.asarray(got, dtype=np.float64)
    want = want.numpy()
    assert got.shape == want.shape, f"{what}: shape {got.shape}, reference {want.shape}"
    grid = np.abs(got / step - np.round(got / step)).max(initial=0.0)
    assert grid < 1e-3, f"{what}: output is off the quantization grid (step {step}) by {grid:.3f} steps"
    steps = np.round((got - want) / step)
    worst = np.abs(steps).max(initial=0.0)
    assert worst <= 1, f"{what}: {worst:.0f} quantization steps from the float reference (step {step})"
    differ = int((steps != 0).sum())
    assert differ <= max(1, got.size // 4), f"{what}: {differ} of {got.size} elements one step off the reference"


def run_exported(model_bytes: bytes, x: torch.Tensor) -> np.ndarray:
    """The exported graph as written, in onnxruntime with its graph optimisations off.

    With them on, onnxruntime fuses DequantizeLinear -> Conv/MatMul -> QuantizeLinear into
    QLinearConv/QGemm kernels whose uint8 x int8 products are summed in pairs into int16 with
    saturation on x86 CPUs without VNNI (AVX2; onnxruntime's quantization docs say so and advise
    reduce_range), while CPUs with VNNI sum exactly. Models quantized for qnnpack use the full 8-bit
    range, and on an AMD EPYC (AVX2, no VNNI) the fused kernels gave up to 39 steps off the
    reference (3-4 on the convnet's in-range input, which made the suite fail there): a property of
    one CPU's kernels, not of the export."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x.numpy()})[0]


def check_quantized(model: nn.Module, x: torch.Tensor, opset: int, saturating: torch.Tensor) -> bytes:
    """Export the eager-quantized ``model``; on ``x`` and on ``saturating`` (an input beyond the
    calibrated range, so the quantized values clamp), the exported model is within one step of
    ``float_reference`` (``assert_within_one_step``).

    Eager PyTorch is compared with the reference on ``x`` only, within one step as well: there
    both engines sum exactly (fbgemm's default qconfig quantizes activations to 7 bits
    (reduce_range), so its uint8 x int8 pair sums fit int16; qnnpack widens to int16 before
    multiplying; measured: every case within one step, on the AMD EPYC too). Beyond the calibrated
    range activations reach 255, and fbgemm's kernels on CPUs without VNNI saturate the int16 pair
    sums (61 steps off on conv3d on the AMD EPYC), so eager is not held to the reference there."""
    f = io.BytesIO()
    export(model, (x,), f, opset_version=opset)
    check(f.getvalue())
    for name, sample in (("x", x), ("saturating input", saturating)):
        want, step = float_reference(model, sample)
        assert_within_one_step(run_exported(f.getvalue(), sample), want, step, f"onnxruntime on {name}")
        if sample is x:
            with torch.no_grad():
                assert_within_one_step(model(x), want, step, "eager PyTorch on x")
    return f.getvalue()


def qcase(name, build, shape, min_opset=13, engine="fbgemm", fuse=None):
    return Case(name, Lazy(quantized(build, shape, engine, fuse), engine), randn(*shape), min_opset=min_opset)


MODULE_CASES = [
    qcase("linear", lambda: nn.Linear(6, 4), (3, 6)),
    qcase("linear_3d", lambda: nn.Linear(6, 4), (2, 3, 6)),
    qcase("linear_qnnpack_per_tensor", lambda: nn.Linear(6, 4), (3, 6), min_opset=10, engine="qnnpack"),
    qcase("conv1d", lambda: nn.Conv1d(2, 3, 3, padding=1), (2, 2, 7)),
    qcase("conv2d", lambda: nn.Conv2d(3, 4, 3, stride=2, padding=1), (1, 3, 8, 8)),
    qcase("conv2d_groups_dilation", lambda: nn.Conv2d(4, 4, 3, groups=2, dilation=2), (1, 4, 9, 9)),
    qcase("conv2d_qnnpack_per_tensor", lambda: nn.Conv2d(3, 4, 3), (1, 3, 6, 6), min_opset=10, engine="qnnpack"),
    qcase("conv3d", lambda: nn.Conv3d(2, 3, 2), (1, 2, 4, 4, 4)),
    qcase("conv_transpose2d", lambda: nn.ConvTranspose2d(3, 2, 3, stride=2), (1, 3, 4, 4), engine="qnnpack",
          min_opset=10),
    qcase("conv_transpose1d", lambda: nn.ConvTranspose1d(3, 2, 3, padding=1), (1, 3, 5), engine="qnnpack",
          min_opset=10),
    qcase("hardswish", lambda: nn.Hardswish(), (2, 6), min_opset=10),
    qcase("leaky_relu", lambda: nn.LeakyReLU(0.1), (2, 6), min_opset=10),
    qcase("sigmoid", lambda: nn.Sigmoid(), (2, 6), min_opset=10),
    qcase("layer_norm", lambda: nn.LayerNorm(6), (2, 3, 6), min_opset=10),
    qcase("group_norm", lambda: nn.GroupNorm(2, 4), (2, 4, 5), min_opset=10),
    qcase("instance_norm", lambda: nn.InstanceNorm2d(3, affine=True), (2, 3, 4, 4), min_opset=10),
    qcase("linear_relu", lambda: nn.Sequential(nn.Linear(6, 4), nn.ReLU()), (3, 6), fuse=[["0", "1"]]),
    qcase("conv1d_relu", lambda: nn.Sequential(nn.Conv1d(2, 3, 3), nn.ReLU()), (2, 2, 7), fuse=[["0", "1"]]),
    qcase("conv2d_relu", lambda: nn.Sequential(nn.Conv2d(2, 3, 3), nn.ReLU()), (1, 2, 6, 6), fuse=[["0", "1"]]),
    qcase("conv3d_relu", lambda: nn.Sequential(nn.Conv3d(2, 3, 2), nn.ReLU()), (1, 2, 4, 4, 4), fuse=[["0", "1"]]),
    qcase("add", lambda: Functional("add"), (2, 5), min_opset=10),
    qcase("add_relu", lambda: Functional("add_relu"), (2, 5), min_opset=10),
    qcase("mul", lambda: Functional("mul"), (2, 5), min_opset=10),
    qcase("cat", lambda: Functional("cat"), (2, 5), min_opset=10),
]


@pytest.mark.parametrize("case,opset", params(MODULE_CASES))
def test_quantized_module(case, opset):
    torch.backends.quantized.engine = case.model.engine  # eager runs the kernels it was built for
    torch.manual_seed(0)
    (x,) = case.inputs()
    check_quantized(case.module(), x, opset, saturating=torch.randn(x.shape) * 3)


@pytest.mark.parametrize("case,opset", below_min_params(MODULE_CASES))
def test_quantized_module_below_min(case, opset):
    run_below_min(case, opset)


BIAS_CASES = [
    ("linear", lambda: nn.Linear(6, 4), (3, 6), "fbgemm", 13),
    ("linear_qnnpack", lambda: nn.Linear(6, 4), (3, 6), "qnnpack", 10),
    ("conv2d_per_channel", lambda: nn.Conv2d(3, 4, 3), (1, 3, 6, 6), "fbgemm", 13),
    ("conv2d_qnnpack", lambda: nn.Conv2d(3, 4, 3), (1, 3, 6, 6), "qnnpack", 10),
    ("conv_transpose2d", lambda: nn.ConvTranspose2d(3, 2, 3, stride=2), (1, 3, 4, 4), "qnnpack", 13),
]


@pytest.mark.parametrize("name,build,shape,engine,opset", BIAS_CASES, ids=[c[0] for c in BIAS_CASES])
def test_bias_is_int32(name, build, shape, engine, opset):
    """The bias reaches the graph as int32 trunc(bias / (input_scale * weight_scale)) through
    DequantizeLinear (as legacy's requantize_bias_helper); numerics are checked by the table above."""
    model = quantized(build, shape, engine)()
    layer, input_scale = model.module, model.quant.scale.float()
    qweight, float_bias = layer.weight(), layer.bias().detach()
    per_channel = qweight.qscheme() in (torch.per_channel_affine, torch.per_channel_symmetric)
    weight_scale = (qweight.q_per_channel_scales() if per_channel else torch.tensor(qweight.q_scale())).float()
    expected = (float_bias / (weight_scale * input_scale)).to(torch.int32)
    f = io.BytesIO()
    export(model, (torch.randn(*shape),), f, opset_version=opset)
    graph = onnx.load_from_string(f.getvalue()).graph
    tensors = {t.name: t for t in graph.initializer}
    tensors.update({n.output[0]: a.t for n in graph.node if n.op_type == "Constant" for a in n.attribute})
    int32_inputs = [tensors[n.input[0]] for n in graph.node if n.op_type == "DequantizeLinear"
                    and n.input[0] in tensors and tensors[n.input[0]].data_type == onnx.TensorProto.INT32]
    assert len(int32_inputs) == 1, "expected one DequantizeLinear of an int32 bias"
    torch.testing.assert_close(torch.from_numpy(onnx.numpy_helper.to_array(int32_inputs[0]).copy()), expected,
                               rtol=0, atol=0)
