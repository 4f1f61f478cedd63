"""Activation functions: one table, run against eager PyTorch via onnxruntime."""

import pytest
import torch
import torch.nn.functional as F

from tests.optable import Case, below_min_params, exported_op_types, params, per_dtype, run_below_min, run_case, sample

F32, F64, I64, I32, I8 = torch.float32, torch.float64, torch.int64, torch.int32, torch.int8


def _inplace(fn):
    def model(x):
        y = x.clone()
        fn(y)
        return y

    return model


def _wide(shape=(2, 3, 4, 5)):
    return lambda: (torch.randn(shape) * 3,)


CASES = [
    *per_dtype("relu", torch.relu, (F32, F64, I64, I32, I8), opsets=(9, 12, 14)),
    *per_dtype("relu6", F.relu6, (F32, I64, I32), opsets=(11, 12)),
    *per_dtype("hardtanh", F.hardtanh, (F32, I64), opsets=(11, 12)),
    Case("hardtanh_bounds", lambda x: F.hardtanh(x, -2.0, 0.5), _wide(), opsets=(11,)),
    Case("relu_inplace", _inplace(lambda y: F.relu(y, inplace=True)), _wide()),
    Case("relu_method_inplace", _inplace(torch.relu_), _wide()),
    Case("sigmoid_inplace", _inplace(torch.Tensor.sigmoid_), _wide()),
    Case("hardtanh_inplace", _inplace(lambda y: F.hardtanh(y, inplace=True)), _wide(), opsets=(11,)),
    Case("leaky_relu_inplace", _inplace(lambda y: F.leaky_relu(y, 0.2, inplace=True)), _wide()),
    Case("leaky_relu", lambda x: F.leaky_relu(x, 0.1), _wide()),
    Case("leaky_relu_default", F.leaky_relu, _wide()),
    Case("rrelu_eval", lambda x: F.rrelu(x, 0.1, 0.3, training=False), _wide()),
    Case("rrelu_module_eval", torch.nn.RReLU(0.1, 0.3), _wide()),
    Case("rrelu_training", lambda x: F.rrelu(x, 0.1, 0.3, training=True), _wide(), min_opset=9, opsets=(21,),
         check_values=False).xfail([26], "onnxruntime has no RandomUniformLike-22 kernel"),
    *per_dtype("sigmoid", torch.sigmoid, (F32, F64, I64)),
    Case("log_sigmoid", F.logsigmoid, lambda: (torch.randn(3, 4) * 30,)),
    Case("softplus", F.softplus, lambda: (torch.randn(3, 4) * 10,)),
    Case("softplus_beta", lambda x: F.softplus(x, beta=2.0), lambda: (torch.randn(3, 4) * 10,)),
    Case("softplus_threshold", lambda x: F.softplus(x, beta=0.5, threshold=1.0), lambda: (torch.randn(3, 4) * 5,),
         min_opset=9),
    Case("softsign", F.softsign, _wide()),
    Case("hardsigmoid", F.hardsigmoid, _wide()),
    Case("hardswish", F.hardswish, _wide(), opsets=(14,)),
    Case("hardswish_module", torch.nn.Hardswish(), _wide(), opsets=(14,)),
    Case("elu", F.elu, _wide()),
    Case("elu_alpha", lambda x: F.elu(x, alpha=0.5), _wide()),
    Case("elu_scaled", lambda x: torch.ops.aten.elu(x, 1.5, 2.0, 0.5), _wide(), min_opset=9),
    Case("selu", F.selu, _wide()),
    Case("celu", F.celu, _wide(), opsets=(12,)),
    Case("celu_alpha", lambda x: F.celu(x, alpha=2.0), _wide(), opsets=(12,)),
    Case("celu_float64", lambda x: F.celu(x, alpha=0.5), lambda: (torch.randn(3, 4, dtype=F64),), opsets=(12,)),
    Case("gelu", F.gelu, _wide(), min_opset=9, opsets=(20,)),
    Case("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), _wide(), opsets=(20,)),
    Case("gelu_module", torch.nn.GELU(), _wide(), min_opset=9, opsets=(20,)),
    Case("silu", F.silu, _wide()),
    Case("silu_module", torch.nn.SiLU(), _wide()),
    Case("mish", F.mish, _wide(), opsets=(18,)),
    Case("prelu_channels", torch.nn.PReLU(5), lambda: (torch.randn(2, 5, 3, 4),)),
    Case("prelu_channels_3d", torch.nn.PReLU(5), lambda: (torch.randn(2, 5, 3),)),
    Case("prelu_channels_2d", torch.nn.PReLU(5), lambda: (torch.randn(4, 5),)),
    Case("prelu_single", torch.nn.PReLU(), lambda: (torch.randn(2, 5, 3, 4),)),
    Case("prelu_single_1d", torch.nn.PReLU(), lambda: (torch.randn(6),)),
    Case("threshold", lambda x: F.threshold(x, 0.5, -2.0), _wide(), min_opset=9),
    Case("threshold_int", lambda x: F.threshold(x, 1, -5), lambda: (sample(I64),), min_opset=9),
    Case("threshold_int_float", lambda x: F.threshold(x, -0.5, 7), lambda: (sample(I64),), min_opset=9),
    Case("hardshrink", F.hardshrink, _wide(), min_opset=9),
    Case("hardshrink_lambd", lambda x: F.hardshrink(x, 1.5), _wide(), min_opset=9),
    Case("softshrink", lambda x: F.softshrink(x, 1.0), _wide(), min_opset=9),
    Case("tanhshrink", F.tanhshrink, _wide()),
    Case("logit", torch.logit, lambda: (torch.rand(3, 4) * 0.98 + 0.01,)),
    Case("logit_eps", lambda x: torch.logit(x, eps=0.1), lambda: (torch.rand(3, 4),)),
    *[Case(f"{name}-float16", fn, lambda: (sample(torch.float16),), rtol=1e-2, atol=1e-2, opsets=opsets,
           min_opset=min_opset)
      for name, fn, opsets, min_opset in (("relu", torch.relu, (14,), 7), ("gelu", F.gelu, (20,), 9),
                                          ("hardswish", F.hardswish, (14,), 7), ("mish", F.mish, (18,), 7),
                                          ("celu", F.celu, (12,), 7), ("softplus", F.softplus, (), 7),
                                          ("elu", F.elu, (), 7), ("sigmoid", torch.sigmoid, (), 7))],
    # float64: onnxruntime lacks float64 kernels for most activations; those lower to Relu/Exp/Log
    *[Case(f"{name}-float64", fn, lambda: (sample(F64) * 3,), rtol=1e-7, atol=1e-9, opsets=opsets, min_opset=min_opset)
      for name, fn, opsets, min_opset in (
          ("leaky_relu", F.leaky_relu, (), 7), ("elu", F.elu, (), 7), ("selu", F.selu, (), 7),
          ("hardsigmoid", F.hardsigmoid, (), 7), ("hardswish", F.hardswish, (14,), 7),
          ("softplus", F.softplus, (), 7), ("softplus_beta", lambda x: F.softplus(x, 2.0, 1.0), (), 9),
          ("log_sigmoid", F.logsigmoid, (), 7), ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), (20,), 7),
          ("mish", F.mish, (18,), 7), ("silu", F.silu, (), 7), ("rrelu_eval", lambda x: F.rrelu(x), (), 7),
          ("celu", F.celu, (12,), 7), ("hardshrink", F.hardshrink, (), 9), ("tanhshrink", F.tanhshrink, (), 7),
          ("elu_scaled", lambda x: torch.ops.aten.elu(x, 1.5, 2.0, 0.5), (), 9))],
    Case("prelu-float64", torch.nn.PReLU(5).double(), lambda: (sample(F64, shape=(2, 5, 3)),), rtol=1e-7, atol=1e-9),
    Case("gelu-float64", F.gelu, lambda: (sample(F64),), min_opset=9, opsets=(20,)).xfail(
        [9, 20, 26], "onnxruntime has no float64 Erf kernel"),
    Case("softmax", lambda x: F.softmax(x, dim=-1), _wide(), opsets=(13,)),
    Case("softmax_dim1", lambda x: F.softmax(x, dim=1), _wide(), opsets=(13,)),
    Case("softmax_dtype", lambda x: F.softmax(x, dim=1, dtype=torch.float64), _wide(), opsets=(13,)),
    Case("log_softmax", lambda x: F.log_softmax(x, dim=0), _wide(), opsets=(13,)),
    Case("log_softmax_last", lambda x: F.log_softmax(x, dim=3), _wide(), opsets=(13,)),
    Case("softmax_0d", lambda x: F.softmax(x, dim=0), lambda: (torch.tensor(1.5),), opsets=(13,)),
]


@pytest.mark.parametrize("case,opset", params(CASES))
def test_activation(case, opset):
    run_case(case, opset)


@pytest.mark.parametrize("case,opset", below_min_params(CASES))
def test_activation_below_min_opset(case, opset):
    run_below_min(case, opset)


# (case, opset, op types the export must contain, op types it must not contain)
NATIVE = [
    (Case("gelu", F.gelu, _wide()), 20, {"Gelu"}, {"Erf"}),
    (Case("gelu", F.gelu, _wide()), 19, {"Erf"}, {"Gelu"}),
    (Case("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), _wide()), 20, {"Gelu"}, {"Tanh"}),
    (Case("hardswish", F.hardswish, _wide()), 14, {"HardSwish"}, {"HardSigmoid"}),
    (Case("hardswish", F.hardswish, _wide()), 13, {"HardSigmoid", "Mul"}, {"HardSwish"}),
    (Case("mish", F.mish, _wide()), 18, {"Mish"}, {"Softplus"}),
    (Case("mish", F.mish, _wide()), 17, {"Softplus", "Tanh"}, {"Mish"}),
    (Case("celu", F.celu, _wide()), 12, {"Celu"}, {"Elu"}),
    (Case("celu", F.celu, _wide()), 11, {"Elu"}, {"Celu"}),
    (Case("relu_int64", torch.relu, lambda: (sample(I64),)), 14, {"Clip"}, {"Relu"}),
    (Case("leaky_relu-float64", F.leaky_relu, lambda: (sample(F64),)), 13, {"Relu"}, {"LeakyRelu"}),
    (Case("selu", F.selu, _wide()), 7, {"Selu"}, set()),
]


@pytest.mark.parametrize("case,opset,present,absent", NATIVE, ids=lambda v: v.name if isinstance(v, Case) else None)
def test_activation_lowering(case, opset, present, absent):
    op_types = set(exported_op_types(case, opset))
    assert present <= op_types and not (absent & op_types), sorted(op_types)
