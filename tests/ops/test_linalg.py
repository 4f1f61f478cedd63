"""Linear algebra: one table of cases, run against eager PyTorch through onnxruntime."""

from __future__ import annotations

import pytest
import torch

from tests.optable import Case, below_min_params, params, run_below_min, run_case


def f32(*shapes):
    return lambda: tuple(torch.randn(*s) for s in shapes)


def i64(*shapes):
    return lambda: tuple(torch.randint(-4, 5, s) for s in shapes)


def i32(*shapes):
    return lambda: tuple(torch.randint(-4, 5, s, dtype=torch.int32) for s in shapes)


def well_conditioned(*shape):
    """Square matrices with a clear determinant (random plus a multiple of the identity)."""
    return lambda: (torch.randn(*shape) + 3 * torch.eye(shape[-1]),)


REDUCE = (13, 18)  # ReduceSum / other reductions take axes as inputs
DYN = {"input_names": ["a", "b"], "dynamic_axes": {"a": {0: "n"}}}

CASES = [
    Case("mv", torch.mv, f32((3, 4), (4,))),
    Case("mv_int", torch.mv, i64((3, 4), (4,)), min_opset=9),
    Case("dot", torch.dot, f32((5,), (5,))),
    Case("dot_int32", torch.dot, i32((5,), (5,)), min_opset=9),
    Case("vdot", torch.vdot, f32((5,), (5,))),
    Case("addmv", lambda s, m, v: torch.addmv(s, m, v, beta=0.5, alpha=2.0), f32((3,), (3, 4), (4,))),
    Case("addmv_beta0_nan", lambda s, m, v: torch.addmv(s * float("nan"), m, v, beta=0), f32((3,), (3, 4), (4,))),
    Case("addmv_int", lambda s, m, v: torch.addmv(s, m, v, beta=2, alpha=3), i64((3,), (3, 4), (4,)), min_opset=9),
    Case("baddbmm", lambda s, a, b: torch.baddbmm(s, a, b, beta=0.5, alpha=1.5), f32((2, 3, 5), (2, 3, 4), (2, 4, 5))),
    Case("baddbmm_broadcast_self", torch.baddbmm, f32((5,), (2, 3, 4), (2, 4, 5))),
    # beta and alpha as 0-d tensor inputs (Scalar arguments at runtime), checked at other values too
    Case("baddbmm_runtime_scalars", lambda s, a, b, beta, alpha: torch.baddbmm(s, a, b, beta=beta, alpha=alpha),
         lambda: (*f32((2, 3, 5), (2, 3, 4), (2, 4, 5))(), torch.tensor(3.5), torch.tensor(5)),
         other_inputs=lambda: [(*f32((2, 3, 5), (2, 3, 4), (2, 4, 5))(), torch.tensor(-0.5), torch.tensor(2))]),
    Case("addmm_runtime_scalars", lambda s, a, b, beta, alpha: torch.addmm(s, a, b, beta=beta, alpha=alpha),
         lambda: (*f32((3, 5), (3, 4), (4, 5))(), torch.tensor(0.0), torch.tensor(1.5)),
         other_inputs=lambda: [(*f32((3, 5), (3, 4), (4, 5))(), torch.tensor(2.0), torch.tensor(-1.0))]),
    Case("addbmm", lambda s, a, b: torch.addbmm(s, a, b, alpha=2.0), f32((3, 5), (2, 3, 4), (2, 4, 5)),
         opsets=REDUCE),
    Case("addbmm_int", torch.addbmm, i64((3, 5), (2, 3, 4), (2, 4, 5)), min_opset=9, opsets=REDUCE),
    Case("outer", torch.outer, f32((3,), (4,))),
    Case("outer_int_float", torch.outer, lambda: (torch.arange(3), torch.randn(4))),
    Case("outer_bool", torch.outer, lambda: (torch.randn(3) > 0, torch.randn(4) > 0)),
    Case("ger", torch.ger, i64((3,), (2,))),
    Case("addr", lambda s, a, b: torch.addr(s, a, b, beta=2.0, alpha=0.5), f32((3, 4), (3,), (4,))),
    Case("addr_int", torch.addr, i64((3, 4), (3,), (4,))),
    Case("inner_1d", torch.inner, f32((4,), (4,))),
    Case("inner_nd", torch.inner, f32((2, 3, 4), (5, 4))),
    Case("multi_dot", lambda a, b, c: torch.linalg.multi_dot([a, b, c]), f32((2, 3), (3, 4), (4, 5))),
    Case("chain_matmul", lambda a, b: torch.chain_matmul(a, b), f32((2, 3), (3, 4))),
    Case("trace", torch.trace, f32((3, 4)), min_opset=9, opsets=REDUCE),
    Case("trace_int", torch.trace, i32((4, 4)), min_opset=9, opsets=REDUCE),
    Case("vecdot", lambda a, b: torch.linalg.vecdot(a, b, dim=0), f32((3, 4), (3, 4)), opsets=REDUCE),
    Case("einsum_matmul", lambda a, b: torch.einsum("ij,jk->ik", a, b), f32((3, 4), (4, 5)), min_opset=12),
    Case("einsum_batch_trace", lambda a: torch.einsum("bii->b", a), f32((2, 3, 3)), min_opset=12),
    Case("einsum_ellipsis_spaces", lambda a, b: torch.einsum("... i, ... i -> ...", a, b), f32((2, 3, 4), (2, 3, 4)),
         min_opset=12),
    Case("einsum_outer_int", lambda a, b: torch.einsum("i,j->ij", a, b), i64((3,), (4,)), min_opset=12),
    Case("einsum_int8", lambda a, b: torch.einsum("ij,j->i", a, b),
         lambda: (torch.randint(-3, 3, (3, 4), dtype=torch.int8), torch.randint(-3, 3, (4,), dtype=torch.int8)),
         min_opset=12),
    Case("einsum_dynamic", lambda a, b: torch.einsum("nk,km->nm", a, b), f32((3, 4), (4, 2)), min_opset=12,
         export_options=DYN, other_inputs=lambda: [(torch.randn(6, 4), torch.randn(4, 2))]),
    Case("tensordot", lambda a, b: torch.tensordot(a, b, dims=([1, 2], [0, 1])), f32((2, 3, 4), (3, 4, 5))),
    Case("tensordot_int_dims", lambda a, b: torch.tensordot(a, b, dims=1), f32((2, 3), (3, 4, 5))),
    Case("tensordot_permuted", lambda a, b: torch.tensordot(a, b, dims=([0], [2])), f32((3, 2, 4), (5, 2, 3))),
    Case("tensordot_int", lambda a, b: torch.tensordot(a, b, dims=([1], [0])), i64((2, 3), (3, 4)), min_opset=9),
    Case("tensordot_dynamic", lambda a, b: torch.tensordot(a, b, dims=([1], [0])), f32((2, 3), (3, 4)),
         export_options=DYN, other_inputs=lambda: [(torch.randn(5, 3), torch.randn(3, 4))]),
    Case("cross", lambda a, b: torch.cross(a, b, dim=1), f32((4, 3), (4, 3))),
    Case("cross_dim0_int", lambda a, b: torch.cross(a, b, dim=0), i64((3, 2), (3, 2))),
    Case("linalg_cross", torch.linalg.cross, f32((2, 4, 3), (2, 4, 3))),
    Case("linalg_cross_broadcast", torch.linalg.cross, f32((2, 1, 3), (1, 4, 3))),
    Case("det", torch.det, well_conditioned(3, 3), min_opset=11),
    Case("linalg_det_batch", torch.linalg.det, well_conditioned(2, 4, 4), min_opset=11),
    Case("logdet", torch.logdet, lambda: (torch.randn(2, 3, 3) @ torch.randn(2, 3, 3).transpose(1, 2)
                                          + torch.eye(3),), min_opset=11, rtol=1e-3, atol=1e-4),
    Case("slogdet", torch.linalg.slogdet, well_conditioned(2, 3, 3), min_opset=11),
    Case("cdist", torch.cdist, f32((2, 3, 4), (2, 5, 4)), opsets=REDUCE),
    Case("cdist_2d", torch.cdist, f32((3, 4), (5, 4)), opsets=REDUCE),
    Case("cdist_p1", lambda a, b: torch.cdist(a, b, p=1.0), f32((3, 4), (5, 4)), opsets=REDUCE),
    Case("cdist_p3", lambda a, b: torch.cdist(a, b, p=3.0), f32((3, 4), (5, 4)), opsets=REDUCE),
    Case("cdist_inf", lambda a, b: torch.cdist(a, b, p=float("inf")), f32((3, 4), (5, 4)), opsets=REDUCE),
    Case("cosine_similarity", torch.cosine_similarity, f32((3, 4), (3, 4)), opsets=REDUCE),
    Case("cosine_similarity_dim", lambda a, b: torch.cosine_similarity(a, b, dim=-1), f32((2, 3, 4), (3, 4)),
         opsets=REDUCE),
    Case("cosine_similarity_zero", lambda a, b: torch.cosine_similarity(a * 0, b, dim=0), f32((3, 4), (3, 4)),
         opsets=REDUCE),
    Case("pairwise_distance", torch.pairwise_distance, f32((3, 4), (3, 4)), opsets=REDUCE),
    Case("pairwise_distance_p1_keepdim", lambda a, b: torch.pairwise_distance(a, b, p=1, keepdim=True),
         f32((3, 4), (4,)), opsets=REDUCE),
]


@pytest.mark.parametrize("case, opset", params(CASES))
def test_linalg(case, opset):
    run_case(case, opset)


@pytest.mark.parametrize("case, opset", below_min_params(CASES))
def test_linalg_below_min_opset(case, opset):
    run_below_min(case, opset)
