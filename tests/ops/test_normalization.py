"""Normalization: batch norm (eval and training, without affine or running stats), instance norm,
group norm, layer norm, rms norm, local response norm, F.normalize; one table, run against eager
PyTorch via onnxruntime."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from torchscript_onnx import TrainingMode
from tests.optable import Case, below_min_params, exported_op_types, params, run_below_min, run_case

TRAINING = {"training": TrainingMode.TRAINING}


def randn(*shape, dtype=torch.float32):
    return lambda: (torch.randn(*shape, dtype=dtype) * 2 + 0.5,)


class AlwaysTraining(nn.Module):
    """Runs its layer in training mode in eager too, so eager and TrainingMode.TRAINING agree."""

    def __init__(self, layer: nn.Module):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        self.layer.train()
        return self.layer(x)


def seeded(module: nn.Module) -> nn.Module:
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, tensor in [*module.named_parameters(), *module.named_buffers()]:
            if tensor.dtype.is_floating_point:
                tensor.copy_(torch.rand(tensor.shape, generator=generator) + 0.5 if "var" in name
                             else torch.randn(tensor.shape, generator=generator))
    return module


BN = {1: (nn.BatchNorm1d, (4, 3, 5)), 2: (nn.BatchNorm2d, (2, 3, 4, 5)), 3: (nn.BatchNorm3d, (2, 3, 2, 3, 4))}
IN = {1: (nn.InstanceNorm1d, (2, 3, 5)), 2: (nn.InstanceNorm2d, (2, 3, 4, 5)), 3: (nn.InstanceNorm3d, (2, 3, 2, 3, 4))}

CASES = [
    # batch norm: eval / training x affine x running stats, 1d/2d/3d
    *[Case(f"batch_norm{d}d-{mode}-affine{affine}-stats{stats}",
           (seeded(cls(3, affine=affine, track_running_stats=stats)) if mode == "eval"
            else AlwaysTraining(seeded(cls(3, affine=affine, track_running_stats=stats)))),
           randn(*shape), export_options={} if mode == "eval" else TRAINING)
      for d, (cls, shape) in BN.items() for mode in ("eval", "training")
      for affine in (True, False) for stats in (True, False)],
    Case("batch_norm1d-2d-input-eval", seeded(nn.BatchNorm1d(3)), randn(4, 3)),
    Case("batch_norm1d-2d-input-training", AlwaysTraining(seeded(nn.BatchNorm1d(3))), randn(4, 3),
         export_options=TRAINING),
    Case("batch_norm-float64", seeded(nn.BatchNorm2d(3)).double(), randn(2, 3, 4, 4, dtype=torch.float64)),
    Case("batch_norm-functional-training", lambda x: F.batch_norm(x, None, None, training=True, eps=1e-3),
         randn(2, 3, 4)),
    # instance norm: affine, running stats (used in eval only when tracked)
    *[Case(f"instance_norm{d}d-affine{affine}-stats{stats}", seeded(cls(3, affine=affine, track_running_stats=stats)),
           randn(*shape)) for d, (cls, shape) in IN.items() for affine in (True, False) for stats in (True, False)],
    Case("instance_norm-training-stats", AlwaysTraining(seeded(nn.InstanceNorm2d(3, affine=True,
                                                                                  track_running_stats=True))),
         randn(2, 3, 4, 5), export_options=TRAINING),
    Case("instance_norm-functional-eps", lambda x: F.instance_norm(x, eps=0.1), randn(2, 3, 6)),
    # group norm
    Case("group_norm", seeded(nn.GroupNorm(2, 6)), randn(2, 6, 4, 5)),
    Case("group_norm-no-affine", nn.GroupNorm(3, 6, affine=False), randn(2, 6, 5)),
    Case("group_norm-one-group", seeded(nn.GroupNorm(1, 4)), randn(2, 4, 3, 3)),
    Case("group_norm-per-channel", seeded(nn.GroupNorm(4, 4, eps=1e-3)), randn(2, 4, 3, 2, 2)),
    Case("group_norm-2d-input", seeded(nn.GroupNorm(2, 4)), randn(5, 4)),
    Case("group_norm-dynamic", seeded(nn.GroupNorm(2, 4)), randn(2, 4, 3, 3),
         export_options={"input_names": ["x"], "dynamic_axes": {"x": [0, 2, 3]}},
         other_inputs=lambda: [(torch.randn(3, 4, 5, 2),)]),
    # layer norm and rms norm
    Case("layer_norm", seeded(nn.LayerNorm(5)), randn(2, 3, 5), opsets=(17,)),
    Case("layer_norm-2dims", seeded(nn.LayerNorm([3, 5])), randn(2, 3, 5), opsets=(17,)),
    Case("layer_norm-no-affine", nn.LayerNorm(5, elementwise_affine=False), randn(2, 3, 5), opsets=(17,)),
    Case("layer_norm-no-bias", seeded(nn.LayerNorm(5, bias=False)), randn(2, 3, 5), opsets=(17,)),
    Case("rms_norm", seeded(nn.RMSNorm(5)), randn(2, 3, 5), opsets=(23,)),
    Case("rms_norm-eps", seeded(nn.RMSNorm([3, 5], eps=1e-2)), randn(2, 3, 5), opsets=(23,)),
    Case("rms_norm-no-affine", nn.RMSNorm(5, elementwise_affine=False), randn(2, 3, 5), opsets=(23,)),
    # local response norm (traces to pad, avg_pool, pow)
    Case("local_response_norm-3d", nn.LocalResponseNorm(3), randn(2, 5, 6), opsets=(11,)),
    Case("local_response_norm-4d", nn.LocalResponseNorm(2, alpha=1e-3, beta=0.5, k=2.0), randn(2, 6, 4, 4),
         opsets=(11,)),
    # F.normalize
    *[Case(f"normalize-p{p}-dim{dim}", lambda x, p=p, dim=dim: F.normalize(x, p=p, dim=dim), randn(2, 3, 4))
      for p in (2.0, 1.0, 3.0) for dim in (1, -1)],
    Case("normalize-eps", lambda x: F.normalize(x, eps=10.0), randn(3, 4)),
    Case("normalize-zero-row", lambda x: F.normalize(x * torch.tensor([[0.0], [1.0]])), randn(2, 4)),
]
for _case in CASES:
    if _case.name.startswith("group_norm"):  # GroupNormalization-21
        _case.opsets = (21,)
    if _case.name.startswith("normalize"):  # F.normalize calls expand_as: ONNX Expand from opset 8
        _case.min_opset = 8


def weight_norm(layer: nn.Module, dim, parametrized: bool = False) -> nn.Module:
    """``layer`` with its weight as g * v / ||v|| (aten::_weight_norm in the graph)."""
    if parametrized:
        return nn.utils.parametrizations.weight_norm(layer, dim=dim)
    return nn.utils.weight_norm(layer, dim=dim)


# ReduceL2 takes its axes as an input from opset 18.
WEIGHT_NORM = [
    Case("weight_norm-linear-dim0", weight_norm(nn.Linear(3, 4), 0), randn(2, 3), opsets=(18,)),
    Case("weight_norm-conv1d-dim2", weight_norm(nn.Conv1d(3, 4, 3), 2), randn(2, 3, 6), opsets=(18,)),
    Case("weight_norm-conv2d-all-dims", weight_norm(nn.Conv2d(2, 3, 2), None), randn(1, 2, 4, 4), opsets=(18,)),
    Case("weight_norm-conv1d-negative-dim", weight_norm(nn.Conv1d(3, 4, 3), -2), randn(2, 3, 6), opsets=(18,)),
    Case("weight_norm-parametrized", weight_norm(nn.Conv1d(3, 4, 5, padding=2, groups=1), 2, parametrized=True),
         randn(2, 3, 7), opsets=(18,)),
]
CASES += WEIGHT_NORM


@pytest.mark.parametrize("case,opset", params(CASES))
def test_normalization(case, opset):
    run_case(case, opset)


@pytest.mark.parametrize("case,opset", below_min_params(CASES))
def test_normalization_below_min_opset(case, opset):
    run_below_min(case, opset)


def weight_norm_of_inputs(dim: int):
    """torch._weight_norm on graph inputs (weight_norm's hooks do not script; the op does)."""
    source = f"def fn(v, g):\n    return torch._weight_norm(v, g, {dim})\n"
    return torch.jit.CompilationUnit(source).fn


# (v shape, g shape, dim): g keeps v's size along dim and 1 elsewhere; dim -1 is "all dims"
WEIGHT_NORM_INPUTS = [((4, 3, 5), (4, 1, 1), 0), ((4, 3, 5), (1, 1, 5), 2), ((4, 3, 5), (1, 3, 1), -2),
                      ((3, 2), (), -1)]


@pytest.mark.parametrize("opset", (9, 18, 26))
@pytest.mark.parametrize("v_shape,g_shape,dim", WEIGHT_NORM_INPUTS)
def test_weight_norm_scripted(v_shape, g_shape, dim, opset):
    case = Case(f"weight_norm-{dim}", weight_norm_of_inputs(dim),
                lambda: (torch.randn(v_shape), torch.rand(g_shape) + 0.5))
    run_case(case, opset, script=True)


LOWERING = [
    (Case("instance_norm", nn.InstanceNorm2d(3), randn(2, 3, 4, 4)), 9, "InstanceNormalization"),
    (Case("batch_norm", seeded(nn.BatchNorm2d(3)), randn(2, 3, 4, 4)), 9, "BatchNormalization"),
    (Case("layer_norm", nn.LayerNorm(4), randn(2, 3, 4)), 17, "LayerNormalization"),
    (Case("rms_norm", nn.RMSNorm(4), randn(2, 3, 4)), 23, "RMSNormalization"),
    (Case("group_norm", nn.GroupNorm(2, 4), randn(2, 4, 3)), 21, "GroupNormalization"),
    (Case("group_norm", nn.GroupNorm(2, 4), randn(2, 4, 3)), 20, "InstanceNormalization"),  # each group an instance
]


@pytest.mark.parametrize("case,opset,op_type", LOWERING, ids=lambda v: getattr(v, "name", str(v)))
def test_normalization_lowering(case, opset, op_type):
    assert op_type in exported_op_types(case, opset)
