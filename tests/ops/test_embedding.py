"""Embeddings: embedding (padding_idx, max_norm), embedding_bag (sum/mean/max, offsets,
per_sample_weights, include_last_offset, padding_idx). One table, against eager PyTorch.

embedding is a Gather (opset 7 on); embedding_bag's mask lowering needs opset 9 and changes with
the Slice (10), ReduceSum (13) and other Reduce (18) schemas; a renormalized weight read whole
(tied weights with max_norm) takes ScatterND from opset 11.
"""

import pytest
import torch
from torch import nn

from tests.optable import Case, below_min_params, params, run_below_min, run_case

BAG_OPSETS = (10, 11, 13, 18)
VOCAB, DIM = 10, 3


def _embedding(**kwargs) -> nn.Module:
    torch.manual_seed(0)
    return nn.Embedding(VOCAB, DIM, **kwargs)


class Bag(nn.Module):
    def __init__(self, **kwargs):
        super().__init__()
        torch.manual_seed(0)
        self.bag = nn.EmbeddingBag(VOCAB, DIM, **kwargs)

    def forward(self, indices, offsets=None, per_sample_weights=None):
        return self.bag(indices, offsets, per_sample_weights=per_sample_weights)


class Tied(nn.Module):
    """An embedding with max_norm whose weight a decoder reads too: it sees the renormalized rows."""

    def __init__(self):
        super().__init__()
        self.embedding = _embedding(max_norm=1.0)

    def forward(self, ids):
        return self.embedding(ids) @ self.embedding.weight.t()


def _ids(*shape, dtype=torch.int64) -> torch.Tensor:
    return torch.randint(0, VOCAB, shape, dtype=dtype)


def _dynamic(*names_axes) -> dict:
    names = [n for n, _ in names_axes]
    return {"input_names": names, "dynamic_axes": {n: {a: f"{n}_{a}" for a in axes} for n, axes in names_axes}}


def embedding_case(name, model, dtype=torch.int64, **kwargs) -> Case:
    return Case(name, model, lambda: (_ids(2, 5, dtype=dtype),), min_opset=7,
                export_options=_dynamic(("ids", (0, 1))), other_inputs=lambda: [(_ids(3, 7, dtype=dtype),)], **kwargs)


def bag_case(name, last=False, weights=False, **bag) -> Case:
    # bags of 2, 0 (empty), 3 and 3 indices; the other size has bags of 1 and 2
    def inputs():
        offsets = torch.tensor([0, 2, 2, 5] + ([8] if last else []))
        return (_ids(8), offsets) + ((torch.rand(8),) if weights else ())

    def other():
        offsets = torch.tensor([0, 1] + ([3] if last else []))
        return [(_ids(3), offsets) + ((torch.rand(3),) if weights else ())]

    names = [("indices", (0,)), ("offsets", (0,))] + ([("weights", (0,))] if weights else [])
    return Case(f"embedding_bag_{name}", Bag(include_last_offset=last, **bag), inputs, min_opset=9,
                opsets=BAG_OPSETS, export_options=_dynamic(*names), other_inputs=other)


CASES = [
    embedding_case("embedding", _embedding()),
    embedding_case("embedding_int32_indices", _embedding(), dtype=torch.int32),
    embedding_case("embedding_padding_idx", _embedding(padding_idx=0)),
    embedding_case("embedding_max_norm", _embedding(max_norm=1.0)),
    embedding_case("embedding_max_norm_l1", _embedding(max_norm=1.5, norm_type=1.0)),
    embedding_case("embedding_max_norm_p3_padding_idx", _embedding(max_norm=0.8, norm_type=3.0, padding_idx=2)),
    # the decoder reads the whole renormalized weight: embedding_renorm_ builds it (opset 9)
    Case("embedding_max_norm_tied", Tied(), lambda: (_ids(2, 5),), min_opset=9, opsets=(11,),
         export_options=_dynamic(("ids", (0, 1))), other_inputs=lambda: [(_ids(3, 7),)]),
    Case("embedding_functional_1d", lambda ids, w: nn.functional.embedding(ids, w),
         lambda: (_ids(6), torch.randn(VOCAB, 4)), min_opset=7),
    Case("embedding_double", _embedding().double(), lambda: (_ids(4),), min_opset=7),
    *[bag_case(mode, mode=mode) for mode in ("sum", "mean", "max")],
    *[bag_case(f"{mode}_include_last_offset", last=True, mode=mode) for mode in ("sum", "mean", "max")],
    *[bag_case(f"{mode}_padding_idx", mode=mode, padding_idx=3) for mode in ("sum", "mean", "max")],
    bag_case("per_sample_weights", weights=True, mode="sum"),
    bag_case("per_sample_weights_include_last_offset", last=True, weights=True, mode="sum"),
    bag_case("max_norm", mode="mean", max_norm=1.0),
    bag_case("max_max_norm", mode="max", max_norm=0.5, norm_type=1.0),
    # 2-D input: F.embedding_bag makes the offsets with arange
    Case("embedding_bag_2d", Bag(mode="mean"), lambda: (_ids(3, 4),), min_opset=9, opsets=BAG_OPSETS,
         export_options=_dynamic(("ids", (0, 1))), other_inputs=lambda: [(_ids(2, 6),)]),
    Case("_embedding_bag", lambda ids, offsets, w: torch.ops.aten._embedding_bag(w, ids, offsets, False, 1)[0],
         lambda: (_ids(7), torch.tensor([0, 3, 4]), torch.randn(VOCAB, 5)), min_opset=9, opsets=BAG_OPSETS),
    Case("embedding_bag_functional", lambda ids, offsets, w: nn.functional.embedding_bag(ids, w, offsets, mode="max"),
         lambda: (_ids(7), torch.tensor([0, 3, 4]), torch.randn(VOCAB, 5)), min_opset=9, opsets=BAG_OPSETS),
]


@pytest.mark.parametrize("case,opset", params(CASES))
def test_embedding(case, opset):
    run_case(case, opset)


@pytest.mark.parametrize("case,opset", below_min_params(CASES))
def test_embedding_below_min_opset(case, opset):
    run_below_min(case, opset)


def test_embedding_renorm_result():
    """embedding_renorm_'s own result: the weight with the looked-up rows renormalized."""

    def renorm(weight, ids):
        return torch.embedding_renorm_(weight.clone(), ids, 1.0, 2.0)

    for opset in (9, 11, 17):
        case = Case("embedding_renorm", renorm, lambda: (torch.randn(VOCAB, 4) * 2, _ids(5)), min_opset=9)
        run_case(case, opset)

