"""Losses: regression losses, cross entropy / nll (class indices, probabilities, weights,
ignore_index, label smoothing), binary cross entropy, kl_div; one table, run against eager PyTorch
via onnxruntime."""

import pytest
import torch
import torch.nn.functional as F

from tests.optable import Case, exported_op_types, params, run_case

REDUCTIONS = ("none", "mean", "sum")


def pair(*shape):
    return lambda: (torch.randn(*shape), torch.randn(*shape))


def logits_and_classes(n_classes=4, shape=(3,), spatial=(), ignore=None):
    def inputs():
        target = torch.randint(0, n_classes, (*shape, *spatial))
        if ignore is not None:
            target[0] = ignore
        return torch.randn(*shape, n_classes, *spatial), target
    return inputs


def probs_pair(*shape):
    return lambda: (torch.rand(*shape) * 0.98 + 0.01, torch.rand(*shape))


WEIGHT = torch.tensor([0.5, 2.0, 1.0, 3.0])
POS_WEIGHT = torch.tensor([0.2, 1.0, 2.5, 4.0])

CASES = [
    *[Case(f"mse-{r}", lambda x, t, r=r: F.mse_loss(x, t, reduction=r), pair(3, 4, 5)) for r in REDUCTIONS],
    Case("mse-broadcast", lambda x, t: F.mse_loss(x, t.expand_as(x)), lambda: (torch.randn(3, 4), torch.randn(4)),
         min_opset=8),
    *[Case(f"l1-{r}", lambda x, t, r=r: F.l1_loss(x, t, reduction=r), pair(3, 4, 5)) for r in REDUCTIONS],
    *[Case(f"smooth_l1-beta{b}-{r}", lambda x, t, r=r, b=b: F.smooth_l1_loss(x, t, reduction=r, beta=b),
           pair(3, 4, 5)) for b in (1.0, 0.5, 0.0) for r in ("none", "mean")],
    *[Case(f"huber-delta{d}-{r}", lambda x, t, r=r, d=d: F.huber_loss(x, t, reduction=r, delta=d),
           pair(3, 4, 5)) for d in (1.0, 0.3) for r in ("none", "sum")],
    # cross entropy with class indices
    *[Case(f"ce-{r}", lambda x, y, r=r: F.cross_entropy(x, y, reduction=r), logits_and_classes())
      for r in REDUCTIONS],
    *[Case(f"ce-2d-{r}", lambda x, y, r=r: F.cross_entropy(x, y, reduction=r),
           logits_and_classes(shape=(2,), spatial=(3, 5))) for r in REDUCTIONS],
    *[Case(f"ce-weight-{r}", lambda x, y, r=r: F.cross_entropy(x, y, weight=WEIGHT, reduction=r),
           logits_and_classes(shape=(6,))) for r in REDUCTIONS],
    *[Case(f"ce-ignore-{r}", lambda x, y, r=r: F.cross_entropy(x, y, ignore_index=2, reduction=r),
           logits_and_classes(shape=(5,), ignore=2)) for r in REDUCTIONS],
    Case("ce-ignore-default", lambda x, y: F.cross_entropy(x, y), logits_and_classes(shape=(5,), ignore=-100)),
    Case("ce-weight-ignore", lambda x, y: F.cross_entropy(x, y, weight=WEIGHT, ignore_index=1),
         logits_and_classes(shape=(2,), spatial=(4,), ignore=1)),
    *[Case(f"ce-smoothing-{r}", lambda x, y, r=r: F.cross_entropy(x, y, label_smoothing=0.2, reduction=r),
           logits_and_classes(shape=(5,))) for r in REDUCTIONS],
    *[Case(f"ce-smoothing-weight-ignore-{r}",
           lambda x, y, r=r: F.cross_entropy(x, y, weight=WEIGHT, ignore_index=0, label_smoothing=0.1, reduction=r),
           logits_and_classes(shape=(2,), spatial=(3,), ignore=0)) for r in REDUCTIONS],
    # cross entropy with class probabilities
    *[Case(f"ce-probs-{r}", lambda x, t, r=r: F.cross_entropy(x, t.softmax(1), reduction=r), pair(3, 4, 2))
      for r in REDUCTIONS],
    Case("ce-probs-weight-smoothing",
         lambda x, t: F.cross_entropy(x, t.softmax(1), weight=WEIGHT, label_smoothing=0.3), pair(5, 4)),
    # nll
    *[Case(f"nll-{r}", lambda x, y, r=r: F.nll_loss(x.log_softmax(1), y, reduction=r), logits_and_classes())
      for r in REDUCTIONS],
    Case("nll-2d-weight-ignore", lambda x, y: F.nll_loss(x, y, weight=WEIGHT, ignore_index=3),
         logits_and_classes(shape=(2,), spatial=(3, 2), ignore=3)),
    Case("nll-3d-sum", lambda x, y: F.nll_loss(x, y, reduction="sum"),
         logits_and_classes(shape=(2,), spatial=(3, 2, 2))),
    Case("nll2d-op", lambda x, y: torch._C._nn.nll_loss2d(x, y, WEIGHT, 1, -100),
         logits_and_classes(shape=(2,), spatial=(3, 2))),
    # binary cross entropy
    *[Case(f"bce-{r}", lambda p, t, r=r: F.binary_cross_entropy(p, t, reduction=r), probs_pair(3, 4))
      for r in REDUCTIONS],
    Case("bce-weight", lambda p, t: F.binary_cross_entropy(p, t, weight=WEIGHT), probs_pair(3, 4)),
    Case("bce-saturated", lambda p, t: F.binary_cross_entropy(p, t, reduction="none"),
         lambda: (torch.tensor([0.0, 1.0, 0.5, 1.0]), torch.tensor([1.0, 0.0, 0.2, 1.0]))),
    *[Case(f"bce-logits-{r}", lambda x, t, r=r: F.binary_cross_entropy_with_logits(x, t, reduction=r),
           lambda: (torch.randn(3, 4) * 5, torch.rand(3, 4))) for r in REDUCTIONS],
    Case("bce-logits-large", lambda x, t: F.binary_cross_entropy_with_logits(x, t, reduction="none"),
         lambda: (torch.tensor([-200.0, 200.0, 30.0, -30.0]), torch.tensor([1.0, 0.0, 0.5, 0.5]))),
    Case("bce-logits-pos-weight-weight",
         lambda x, t: F.binary_cross_entropy_with_logits(x, t, weight=WEIGHT, pos_weight=POS_WEIGHT),
         lambda: (torch.randn(3, 4) * 3, torch.rand(3, 4))),
    # integer weights as inputs: torch promotes them to the loss dtype
    Case("bce-logits-int-weights",
         lambda x, t, w, pw: F.binary_cross_entropy_with_logits(x, t, weight=w, pos_weight=pw),
         lambda: (torch.randn(3, 4), torch.rand(3, 4), torch.tensor([3]), torch.randint(0, 3, (4,)))),
    Case("bce-int-weight", lambda p, t, w: F.binary_cross_entropy(p, t, weight=w),
         lambda: (*probs_pair(3, 4)(), torch.tensor([2]))),
    # kl_div
    *[Case(f"kl_div-{r}", lambda x, t, r=r: F.kl_div(x, t, reduction=r),
           lambda: (torch.randn(3, 4).log_softmax(1), torch.rand(3, 4).softmax(1))) for r in REDUCTIONS],
    Case("kl_div-batchmean", lambda x, t: F.kl_div(x, t, reduction="batchmean"),
         lambda: (torch.randn(3, 4).log_softmax(1), torch.rand(3, 4).softmax(1))),
    Case("kl_div-zero-target", lambda x, t: F.kl_div(x, t, reduction="none"),
         lambda: (torch.randn(4).log_softmax(0), torch.tensor([0.0, 0.5, 0.5, 0.0]))),
    *[Case(f"kl_div-log_target-{r}", lambda x, t, r=r: F.kl_div(x, t, reduction=r, log_target=True),
           lambda: (torch.randn(3, 4).log_softmax(1), torch.randn(3, 4).log_softmax(1))) for r in ("none", "sum")],
]


# Where and OneHot, used by every loss past mse and l1, exist from opset 9
for _case in CASES:
    if not _case.name.startswith(("mse-", "l1")):
        _case.min_opset = 9
    if _case.name.startswith(("ce-", "nll")):
        _case.opsets = (11, 12)


@pytest.mark.parametrize("case,opset", params(CASES))
def test_loss(case, opset):
    run_case(case, opset)


STRUCTURE = [
    (Case("ce", lambda x, y: F.cross_entropy(x, y, weight=WEIGHT, ignore_index=1), logits_and_classes()), 12,
     "SoftmaxCrossEntropyLoss"),
    (Case("nll", lambda x, y: F.nll_loss(x, y), logits_and_classes(spatial=(2,))), 12, "NegativeLogLikelihoodLoss"),
    (Case("ce-smoothing", lambda x, y: F.cross_entropy(x, y, label_smoothing=0.1), logits_and_classes()), 12,
     "OneHot"),
    (Case("ce", lambda x, y: F.cross_entropy(x, y), logits_and_classes()), 11, "OneHot"),
]


@pytest.mark.parametrize("case,opset,op_type", STRUCTURE, ids=lambda v: getattr(v, "name", str(v)))
def test_loss_lowering(case, opset, op_type):
    assert op_type in exported_op_types(case, opset)
