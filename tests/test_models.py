"""End-to-end: the classic model zoo exports at opsets 7-26, passes onnx.checker (full_check) and
matches eager PyTorch through onnxruntime.

Each model is built once (the cache holds the current one only: tests run model by model, and
the VGGs hold over 500 MB of weights each). Exports go to memory.
"""

from __future__ import annotations

import copy
import functools
import io

import onnx
import pytest
import torch

from bench.zoo import MODELS
from torchscript_onnx import export
from torchscript_onnx.cli import demo_model
from torchscript_onnx.verify import flatten_outputs, verify

OPSETS = (7, 9, 11, 13, 17, 20, 26)

RTOL = 1e-4
ATOL = 1e-5

# Deep float32 nets round: on these seeded weights eager PyTorch itself is up to ~2e-4 away from
# the same model run in float64 (ResNet-50, Inception), more than ATOL. onnxruntime is as close to
# the float64 result as eager is, and legacy torch.onnx exports differ from eager by as much. So
# the absolute tolerance is ATOL, or twice the model's own float32 noise where that is larger:
# a wrong lowering is off by far more than rounding.
NOISE_FACTOR = 2.0

def _double(value):
    if isinstance(value, torch.Tensor):
        return value.double() if value.is_floating_point() else value
    if isinstance(value, (list, tuple)):
        return type(value)(_double(v) for v in value)
    if isinstance(value, dict):
        return {k: _double(v) for k, v in value.items()}
    return value


def float32_noise(model, args) -> float:
    """Max |eager float32 - eager float64| over the outputs: the model's own rounding error."""
    with torch.no_grad():
        single = flatten_outputs(model(*args))
        exact = flatten_outputs(copy.deepcopy(model).double()(*_double(args)))
    return max(float((s.double() - e).abs().max()) for s, e in zip(single, exact))


@functools.lru_cache(maxsize=1)
def build(name: str):
    model, args = MODELS[name]()
    return model, args, float32_noise(model, args)


def export_bytes(model, args, opset: int) -> bytes:
    buffer = io.BytesIO()
    export(model, args, buffer, opset_version=opset)
    return buffer.getvalue()


def model_params():
    out = []
    for name in MODELS:  # model-major order, so the one-model cache builds each model once
        for opset in OPSETS:
            out.append(pytest.param(name, opset, id=f"{name}-opset{opset}"))
    return out


@pytest.mark.parametrize("name, opset", model_params())
def test_model(name, opset, record_property):
    model, args, noise = build(name)
    assert noise < 1e-3, "the zoo's initialisation must keep float32 rounding small"
    atol = max(ATOL, NOISE_FACTOR * noise)
    report = verify(model, args, opset_version=opset, rtol=RTOL, atol=atol)
    assert report.opset == opset
    record_property("max_abs_diff", report.max_abs_diff)
    record_property("float32_noise", noise)


def test_demo_model_is_the_zoos_resnet18():
    """`torchscript-onnx demo` exports the CLI's own ResNet-18: with the zoo's weights it is the zoo's."""
    demo, (image,) = demo_model()
    zoo_model, (zoo_image,) = MODELS["resnet18"]()
    assert not demo.training and image.shape == zoo_image.shape
    demo.load_state_dict(zoo_model.state_dict())  # strict: the same keys and shapes
    with torch.no_grad():
        torch.testing.assert_close(demo(zoo_image), zoo_model(zoo_image))


def test_zoo_contract():
    assert set(MODELS) == {
        "alexnet", "vgg11", "vgg11_bn", "vgg16", "vgg16_bn", "resnet18", "resnet50", "squeezenet1_0",
        "squeezenet1_1", "densenet121", "inception_v3", "mobilenet_v2", "super_resolution", "dcgan_generator",
        "dcgan_discriminator", "mnist", "mlp_dict_list"}
    model, args = MODELS["mnist"]()
    again, args_again = MODELS["mnist"]()
    assert not model.training
    for (key, value), (key_again, value_again) in zip(model.state_dict().items(), again.state_dict().items()):
        assert key == key_again and torch.equal(value, value_again), "factories must be seeded"
    assert torch.equal(args[0], args_again[0])


# ---------------------------------------------------------------------------------------------
# Initializers: named by state_dict keys like legacy, stored as raw_data

NAMED_MODELS = ["mnist", "super_resolution", "squeezenet1_1", "mlp_dict_list", "dcgan_discriminator", "resnet18"]


def _legacy_bytes(model, args, opset: int) -> bytes:
    buffer = io.BytesIO()
    torch.onnx.export(model, args, buffer, opset_version=opset, dynamo=False)
    return buffer.getvalue()


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")
@pytest.mark.parametrize("opset", [9, 17])
@pytest.mark.parametrize("name", NAMED_MODELS)
def test_initializer_names(name, opset):
    model, args = MODELS[name]()
    ours = onnx.load_from_string(export_bytes(model, args, opset))
    legacy = onnx.load_from_string(_legacy_bytes(model, args, opset))
    state = model.state_dict()
    names = [init.name for init in ours.graph.initializer]
    assert len(names) == len(set(names))
    named = [n for n in names if n in state]
    # The parameters used unchanged keep their state_dict key, the same ones legacy keeps ...
    assert sorted(named) == sorted(init.name for init in legacy.graph.initializer if init.name in state)
    for init in ours.graph.initializer:
        # ... hold exactly the parameter's values, as raw bytes (no typed repeated fields) ...
        assert init.HasField("raw_data") and not init.float_data and not init.int64_data, init.name
        if init.name in state:
            value = torch.from_numpy(onnx.numpy_helper.to_array(init).copy())
            assert torch.equal(value, state[init.name]), init.name
    # ... and parameters rewritten by conv+batch-norm folding get legacy's "onnx::<Op>" names.
    fused = [n for n in names if n not in state]
    assert all(n.startswith("onnx::") for n in fused), fused
    assert len(fused) == sum(1 for init in legacy.graph.initializer if init.name not in state)
