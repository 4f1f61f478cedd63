"""Activations with structure (softmax/log_softmax with dim and dtype, glu, per-channel prelu,
gelu tanh) and the dropout family in eval and training; one table, run against eager PyTorch via
onnxruntime. Training dropout is random: shapes and dtypes, plus statistical checks."""

import io

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.optable import Case, exported_op_types, params, run_case
from torchscript_onnx import export
from torchscript_onnx.verify import run_onnxruntime


def randn(*shape, dtype=torch.float32):
    return lambda: (torch.randn(*shape, dtype=dtype) * 3,)


def prelu(num_parameters: int) -> nn.PReLU:
    module = nn.PReLU(num_parameters)
    with torch.no_grad():
        module.weight.copy_(torch.linspace(-0.5, 0.8, num_parameters))
    return module


CASES = [
    # softmax / log_softmax: LogSoftmax/Softmax flatten from their axis before 13
    *[Case(f"{name}-dim{dim}", lambda x, fn=fn, dim=dim: fn(x, dim=dim), randn(2, 3, 4), opsets=(13,))
      for name, fn in (("softmax", torch.softmax), ("log_softmax", torch.log_softmax)) for dim in (0, 1, -1)],
    *[Case(f"{name}-dtype-float64", lambda x, fn=fn: fn(x, dim=1, dtype=torch.float64), randn(2, 3, 4),
           opsets=(13,)) for name, fn in (("softmax", torch.softmax), ("log_softmax", torch.log_softmax))],
    Case("softmax-from-float64-to-float32", lambda x: F.softmax(x, -1, dtype=torch.float32),
         randn(3, 4, dtype=torch.float64)),
    Case("softmax-module", nn.Softmax(dim=1), randn(2, 5), opsets=(13,)),
    Case("log_softmax-module", nn.LogSoftmax(dim=-1), randn(2, 3, 5), opsets=(13,)),
    Case("softmax-large", lambda x: F.softmax(x * 100, dim=-1), randn(3, 4)),
    Case("softmax-1d", lambda x: F.softmax(x, dim=0), randn(6)),
    # glu
    *[Case(f"glu-dim{dim}", lambda x, dim=dim: F.glu(x, dim), randn(2, 4, 6), opsets=(13, 18))
      for dim in (0, 1, -1)],
    Case("glu-module", nn.GLU(), randn(3, 8), opsets=(13, 18)),
    # prelu
    Case("prelu-per-channel-4d", prelu(3), randn(2, 3, 4, 5)),
    Case("prelu-per-channel-2d", prelu(3), randn(4, 3)),
    Case("prelu-per-channel-3d", prelu(3), randn(2, 3, 5)),
    Case("prelu-single", prelu(1), randn(2, 3, 4, 5)),
    Case("prelu-functional", lambda x: F.prelu(x, torch.tensor([0.1, -0.2])), randn(3, 2, 2)),
    # gelu
    Case("gelu-tanh", lambda x: F.gelu(x, approximate="tanh"), randn(3, 4), opsets=(20,)),
    Case("gelu-none", lambda x: F.gelu(x), randn(3, 4), min_opset=9, opsets=(20,)),
    Case("gelu-tanh-module", nn.GELU("tanh"), randn(2, 3, 4), opsets=(20,), atol=1e-4),
    # dropout family in eval: identity
    Case("dropout-eval", nn.Dropout(0.4), randn(3, 4)),
    Case("dropout1d-eval", nn.Dropout1d(0.4), randn(2, 3, 4)),
    Case("dropout2d-eval", nn.Dropout2d(0.4), randn(2, 3, 4, 4)),
    Case("dropout3d-eval", nn.Dropout3d(0.4), randn(2, 3, 2, 2, 2)),
    Case("alpha_dropout-eval", nn.AlphaDropout(0.4), randn(3, 4)),
    Case("feature_alpha_dropout-eval", nn.FeatureAlphaDropout(0.4), randn(2, 3, 4)),
    Case("dropout-inplace-eval", nn.Dropout(0.4, inplace=True), randn(3, 4)),
    Case("alpha_dropout-inplace-eval", nn.AlphaDropout(0.4, inplace=True), randn(3, 4)),
    Case("dropout2d-inplace-eval", nn.Dropout2d(0.4, inplace=True), randn(2, 3, 4, 4)),
    Case("feature_alpha_dropout-inplace-eval", nn.FeatureAlphaDropout(0.4, inplace=True), randn(2, 3, 4, 4)),
    Case("native_dropout-eval", lambda x: torch.native_dropout(x, 0.4, False), randn(3, 4), min_opset=9),
    # dropout family in training: shapes and dtypes (values are random)
    Case("dropout-training", lambda x: F.dropout(x, 0.4, True), randn(3, 4), min_opset=12, check_values=False),
    Case("dropout-inplace-training", lambda x: F.dropout(x * 1, 0.4, True, inplace=True), randn(3, 4),
         min_opset=12, check_values=False),
    Case("dropout2d-training", lambda x: F.dropout2d(x, 0.4, True), randn(2, 3, 4, 4), min_opset=12,
         check_values=False),
    Case("alpha_dropout-training", lambda x: F.alpha_dropout(x, 0.4, True), randn(3, 4), min_opset=12,
         check_values=False),
    Case("native_dropout-training", lambda x: torch.native_dropout(x, 0.4, True), randn(3, 4), min_opset=12,
         check_values=False),
]


@pytest.mark.parametrize("case,opset", params(CASES))
def test_structured_activation(case, opset):
    run_case(case, opset)


def _run(fn, x, opset):
    buffer = io.BytesIO()
    export(Case("f", fn, lambda: (x,)).module(), (x,), buffer, opset_version=opset)
    return run_onnxruntime(buffer.getvalue(), [x.numpy()])


@pytest.mark.parametrize("opset", [12, 26])
def test_dropout_training_statistics(opset):
    x = torch.ones(200, 100)
    out, = _run(lambda x: F.dropout(x, 0.3, True), x, opset)
    zeros = (out == 0).mean()
    assert 0.27 < zeros < 0.33
    assert np.allclose(out[out != 0], 1 / 0.7)


@pytest.mark.parametrize("opset", [12, 26])
def test_feature_dropout_training_statistics(opset):
    x = torch.ones(200, 50, 3, 3)  # 10,000 channel draws: the bounds below are 11 standard errors wide
    out, = _run(lambda x: F.dropout2d(x, 0.3, True), x, opset)
    per_channel = out.reshape(200, 50, 9)
    assert (per_channel == per_channel[..., :1]).all()  # one draw per (sample, channel)
    assert 0.25 < (per_channel[..., 0] == 0).mean() < 0.35
    assert np.allclose(out[out != 0], 1 / 0.7)


@pytest.mark.parametrize("opset", [12, 26])
def test_alpha_dropout_training_statistics(opset):
    x = torch.randn(300, 200)
    out, = _run(lambda x: F.alpha_dropout(x, 0.3, True), x, opset)
    assert abs(out.mean()) < 0.05 and abs(out.std() - 1) < 0.05  # alpha dropout keeps mean 0, std 1
    expected = torch.alpha_dropout(x, 0.3, True).numpy()
    assert len(np.unique(out.round(4))) > 1000 and abs(expected.std() - out.std()) < 0.05


@pytest.mark.parametrize("opset", [9, 11])
def test_dropout_variants_training_below_12(opset):
    with pytest.raises(Exception, match="opset 12"):
        _run(lambda x: F.alpha_dropout(x, 0.3, True), torch.randn(3, 4), opset)
    with pytest.raises(Exception, match="opset 12"):
        _run(lambda x: F.dropout2d(x, 0.3, True), torch.randn(2, 3, 4), opset)


def test_softmax_lowering():
    case = Case("softmax", lambda x: F.softmax(x, dim=1), randn(2, 3, 4))
    assert "Softmax" in exported_op_types(case, 13)
