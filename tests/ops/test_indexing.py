"""Indexing ops and in-place writes into views: one table, run against eager PyTorch via onnxruntime."""

import io

import pytest
import torch

from tests.optable import Case, below_min_params, params, run_below_min, run_case, sample
from torchscript_onnx import export
from torchscript_onnx.pipeline.capture import capture
from torchscript_onnx.builder.options import TrainingMode

F32, I64, I32, BOOL = torch.float32, torch.int64, torch.int32, torch.bool
ALL = (F32, I64, BOOL)
DYN = dict(input_names=["x"], dynamic_axes={"x": {0: "batch"}})
DYN2 = dict(input_names=["x", "i"], dynamic_axes={"x": {0: "batch"}})


def typed(name, fn, shape=(4, 3, 5), dtypes=ALL, extra=lambda: (), **options):
    """One case per dtype: a ``sample`` of ``shape`` followed by the ``extra`` inputs."""
    options.setdefault("min_opset", 9)
    cases = []
    for dtype in dtypes:
        def inputs(dtype=dtype):
            return (sample(dtype, "any", shape),) + tuple(extra())
        cases.append(Case(f"{name}-{str(dtype).replace('torch.', '')}", fn, inputs, **options))
    return cases


def dynamic(name, fn, shape=(4, 3, 5), other=(6, 3, 5), extra=lambda: (), **options):
    options.setdefault("min_opset", 9)
    return Case(f"{name}-dynamic", fn, lambda: (torch.randn(*shape),) + tuple(extra()),
                export_options=DYN if not extra() else DYN2,
                other_inputs=lambda: [(torch.randn(*other),) + tuple(extra())], **options)


def _x(*shape):
    return lambda: (torch.randn(*shape),)


def _idx(*values):
    return lambda: (torch.tensor(values),)


def _mask(*shape):
    return lambda: (torch.rand(*shape) > 0.5,)


# -- in-place writes (traced as writes into views; rewritten by prepare/inplace.py) ----------------

def _set_slice(x, y):
    x = x.clone()
    x[1:3] = y
    return x


def _set_select_and_alias(x):
    x = x.clone()
    row = x[0]  # an alias: must see the later writes
    x[:, 0] = 5
    x[0, 1:] *= 2
    return x, row


def _set_mask(x):
    x = x.clone()
    x[x > 0.5] = 0
    return x


def _set_mask_values(x, v):
    x = x.clone()
    x[x > 0] = v[: int((x > 0).sum())]
    return x


def _index_put_(x, i, v):
    x = x.clone()
    x.index_put_((i,), v)
    return x


def _masked_fill_(x):
    x = x.clone()
    x.masked_fill_(x < 0, -1.0)
    return x


def _set_transposed(x):
    x = x.clone()
    x.t()[1] = 7
    return x


def _set_flat_view(x):
    x = x.clone()
    x.view(-1)[2:5] = 0
    return x


def _set_diagonal(x):
    x = x.clone()
    x.diagonal().fill_(0)
    return x


def _set_narrow(x):
    x = x.clone()
    x.narrow(1, 1, 2).zero_()
    return x


def _set_step(x):
    x = x.clone()
    x[::2] = 1
    return x


def _set_permuted(x):
    x = x.clone()
    x.permute(2, 0, 1)[0] += 1
    return x


def _set_unsqueezed(x):
    x = x.clone()
    x.unsqueeze(0)[0, 1] = 3
    return x


def _set_twice_through_old_view(x):
    x = x.clone()
    head = x[:2]
    x[3] = 1
    head[0] = 2  # writes through a view made before the other write
    return x, head


def _set_batch(x):
    x = x.clone()
    x[:, 1:3] = 0
    return x


def _set_runtime_bounds(x):
    x = x.clone()
    x[:, :, x.size(0) - 3:] = 0  # 1: at batch 4, 3: at batch 6
    return x


def _set_tensor_index_slice(x, i):
    x = x.clone()
    x[:, i] = 0
    return x


def _set_negative_select(x):
    x = x.clone()
    x[-1] = 1
    x[:, -1] = 2
    return x


def _set_adjacent(x, i, j, v):
    x = x.clone()
    x[:, i, j] = v
    return x


def _set_reshaped_copy(x):
    x = x.clone()
    y = x.t().reshape(-1)  # a copy: the write must not reach x
    y[0] = 100
    z = x.reshape(-1)  # a view: the write reaches x
    z[1] = 50
    return x, y


def _inplace_on_input(x):
    x[0] = 1
    return x * 2



def Case9(*args, **options):
    options.setdefault("min_opset", 9)
    return Case(*args, **options)


CASES = [
    # select / slice
    *typed("select", lambda x: x[1], min_opset=7),
    *typed("select_neg", lambda x: x[:, -1], min_opset=7),
    dynamic("select_last", lambda x: x[-1], opsets=(11,), min_opset=7),
    dynamic("select_first", lambda x: x[0, 1], min_opset=7),
    *typed("slice", lambda x: x[1:3, :, 2:], min_opset=7),
    Case9("slice_neg", lambda x: x[-3:-1, -2:], _x(4, 5), min_opset=7),
    Case9("slice_beyond", lambda x: x[1:100, :7], _x(4, 5), min_opset=7),
    Case9("slice_empty", lambda x: x[3:1], _x(4, 5), min_opset=7),
    *typed("slice_step", lambda x: x[::2, :, 1::3], opsets=(10,), min_opset=7),
    dynamic("slice", lambda x: x[1:, 1:], min_opset=7),
    dynamic("slice_step_batch", lambda x: x[::2], min_opset=10),
    dynamic("slice_size", lambda x: x[:, :, : x.size(0)], min_opset=10, other=(3, 3, 5)),
    Case9("ellipsis_none", lambda x: x[None, ..., 1, ::2], _x(4, 5), opsets=(10,), min_opset=7),
    # advanced indexing reads
    *typed("index_list", lambda x: x[[0, 2]], min_opset=7),
    *typed("index_tensor", lambda x, i: x[i], extra=_idx(3, -1, 0), opsets=(11,)),
    *typed("index_dim1", lambda x, i: x[:, i], extra=_idx(2, 0, -3, 2), opsets=(11,)),
    Case9("index_ellipsis", lambda x, i: x[..., i], lambda: (torch.randn(2, 3, 5), torch.tensor([4, 1]))),
    Case9("index_2d", lambda x, i: x[i], lambda: (torch.randn(4, 3), torch.tensor([[0, 1], [3, 3]]))),
    Case9("index_int32", lambda x, i: x[i], lambda: (torch.randn(4, 3), torch.tensor([1, 2], dtype=torch.int32))),
    *typed("index_pair", lambda x, i, j: x[i, j], extra=lambda: (torch.tensor([0, 3, 1]), torch.tensor([2, -1, 0]))),
    Case9("index_adjacent", lambda x, i, j: x[:, i, j],
         lambda: (torch.randn(2, 3, 4, 5), torch.tensor([[0], [2]]), torch.tensor([1, 3]))),
    Case9("index_apart", lambda x, i, j: x[i, :, j],
         lambda: (torch.randn(2, 3, 4), torch.tensor([0, 1, 1]), torch.tensor([3, 0, 2]))),
    *typed("index_mask", lambda x, m: x[m], shape=(4, 3), extra=_mask(4, 3)),
    Case9("index_mask_rows", lambda x, m: x[m], lambda: (torch.randn(4, 3), torch.tensor([True, False, True, True]))),
    Case9("index_mask_dim1", lambda x, m: x[:, m], lambda: (torch.randn(2, 3, 4), torch.tensor([True, False, True]))),
    Case9("index_mask_lead", lambda x, m: x[m], lambda: (torch.randn(2, 3, 4), torch.rand(2, 3) > 0.3)),
    Case9("index_mask_and_index", lambda x, m, i: x[m, i],
         lambda: (torch.randn(4, 3), torch.tensor([True, False, True, True]), torch.tensor([0, 2, 1]))),
    # data-dependent sizes stay runtime values even when the input shapes are static
    Case9("mask_then_size", lambda x: x[x > 0].reshape(x[x > 0].size(0), 1), _x(3, 4),
          other_inputs=lambda: [(torch.randn(3, 4),), (torch.randn(3, 4),)]),
    Case9("nonzero_then_size", lambda x: torch.zeros(torch.nonzero(x > 0).size(0)) + 1, _x(3, 4),
          other_inputs=lambda: [(torch.randn(3, 4),)]),
    Case9("masked_select_then_size", lambda x: x.masked_select(x > 0).view(1, x.masked_select(x > 0).size(0)),
          _x(3, 4), other_inputs=lambda: [(torch.randn(3, 4),)]),
    Case9("index_uint8_mask", lambda x: x[(x > 0).to(torch.uint8).bool()], _x(3, 4)),
    dynamic("index", lambda x, i: x[i], extra=_idx(1, 0, 2), opsets=(11,)),
    dynamic("index_mask", lambda x: x[x > 0]),
    dynamic("index_dim1_pair", lambda x, i: x[:, i, i], extra=_idx(1, 2)),
    *typed("index_select", lambda x, i: x.index_select(1, i), extra=_idx(2, 0, 2), min_opset=7),
    dynamic("index_select", lambda x, i: x.index_select(0, i), extra=_idx(1, 0), min_opset=7),
    *typed("take", lambda x, i: x.take(i), extra=lambda: (torch.tensor([[0, 7], [-1, 20]]),)),
    *typed("take_along_dim", lambda x, i: torch.take_along_dim(x, i, 1),
           extra=lambda: (torch.randint(0, 3, (4, 2, 5)),), min_opset=11),
    Case9("take_along_dim_bcast", lambda x, i: torch.take_along_dim(x, i, 2),
         lambda: (torch.randn(4, 3, 5), torch.randint(-5, 5, (1, 3, 2))), min_opset=11),
    Case9("take_along_dim_flat", lambda x, i: torch.take_along_dim(x, i),
          lambda: (torch.randn(3, 4), torch.tensor([0, 11]))),
    *typed("gather", lambda x, i: x.gather(1, i), shape=(3, 4), extra=lambda: (torch.randint(0, 4, (3, 4)),),
           dtypes=(F32, I64), opsets=(11,)),
    Case9("gather_smaller", lambda x, i: x.gather(0, i), lambda: (torch.randn(4, 3), torch.randint(0, 4, (2, 2))),
         min_opset=11),
    Case9("gather_bool", lambda x, i: x.gather(1, i), lambda: (torch.rand(3, 4) > 0.5, torch.randint(0, 4, (3, 2))),
         min_opset=11),
    # writes: index_put and friends
    *typed("index_put", lambda x, i: x.index_put((i,), x[0, 0]), extra=_idx(2, 0, -1)),
    *typed("index_put_mask", lambda x: x.index_put((x > 0,), x[0, 0, 0])),
    Case9("index_put_mask_bool", lambda x, m: x.index_put((m,), torch.tensor(True)),
         lambda: (torch.rand(3, 4) > 0.5, torch.rand(3, 4) > 0.5)),
    Case9("index_put_rows", lambda x, i, v: x.index_put((i,), v),
         lambda: (torch.randn(4, 3), torch.tensor([3, 1]), torch.randn(2, 3))),
    Case9("index_put_pair", lambda x, i, j, v: x.index_put((i, j), v),
         lambda: (torch.randn(4, 3), torch.tensor([3, 1]), torch.tensor([0, -1]), torch.randn(2))),
    Case9("index_put_adjacent", _set_adjacent,
         lambda: (torch.randn(2, 4, 3), torch.tensor([3, 1]), torch.tensor([0, 2]), torch.randn(2, 2))),
    Case9("index_put_acc", lambda x, i, v: x.index_put((i,), v, accumulate=True),
         lambda: (torch.randn(4, 3), torch.tensor([3, 1]), torch.randn(2, 3)), opsets=(16,)),
    Case9("index_put_acc_repeat", lambda x, i, v: x.index_put((i,), v, accumulate=True),
         lambda: (torch.randn(4, 3), torch.tensor([1, 1, 2]), torch.randn(3, 3)), opsets=(11, 16)),
    Case9("index_put_mask_values", _set_mask_values, lambda: (torch.randn(3, 4), torch.randn(12))),
    Case9("index_put_mask_acc", lambda x, m: x.index_put((m,), torch.tensor(2.0), accumulate=True),
         lambda: (torch.randn(3, 4), torch.rand(3, 4) > 0.5)),
    dynamic("index_put", lambda x, i: x.index_put((i,), torch.tensor(0.0)), extra=_idx(1, 2)),
    *typed("index_fill", lambda x, i: x.index_fill(1, i, 2), extra=_idx(0, 2)),
    Case9("index_fill_tensor", lambda x, i: x.index_fill(0, i, x[0, 0]),
          lambda: (torch.randn(3, 4), torch.tensor([-1]))),
    dynamic("index_fill", lambda x, i: x.index_fill(2, i, -1.0), extra=_idx(4)),
    *typed("index_copy", lambda x, i, s: x.index_copy(1, i, s.to(x.dtype)),
           extra=lambda: (torch.tensor([2, 0]), torch.randn(4, 2, 5))),
    *typed("index_add", lambda x, i, s: x.index_add(0, i, s.to(x.dtype)), dtypes=(F32, I64),
           extra=lambda: (torch.tensor([2, 0]), torch.randn(2, 3, 5) * 4), opsets=(16,)),
    Case9("index_add_alpha", lambda x, i, s: x.index_add(1, i, s, alpha=2),
         lambda: (torch.randn(2, 4), torch.tensor([3, 0]), torch.randn(2, 2))),
    Case9("index_add_repeat", lambda x, i, s: x.index_add(0, i, s),
         lambda: (torch.randn(3, 2), torch.tensor([1, 1]), torch.randn(2, 2)), opsets=(16,)),
    # masks
    *typed("masked_fill", lambda x, m: x.masked_fill(m, 1), extra=_mask(4, 3, 5), min_opset=9),
    Case9("masked_fill_bcast", lambda x, m: x.masked_fill(m, -2.5), lambda: (torch.randn(3, 4), torch.rand(4) > 0.5),
         min_opset=9),
    Case9("masked_fill_tensor", lambda x, m: x.masked_fill(m, x[0, 0]),
          lambda: (torch.randn(3, 4), torch.rand(3, 4) > 0.5),
         min_opset=9),
    dynamic("masked_fill", lambda x: x.masked_fill(x > 0, 0.0), min_opset=9),
    *typed("masked_select", lambda x, m: x.masked_select(m), extra=_mask(4, 3, 5), min_opset=9),
    Case9("masked_select_bcast", lambda x, m: x.masked_select(m), lambda: (torch.randn(3, 4), torch.rand(4) > 0.5),
         min_opset=9),
    *typed("masked_scatter", lambda x, m, s: x.masked_scatter(m, s.to(x.dtype)), min_opset=11,
           extra=lambda: (torch.rand(4, 3, 5) > 0.5, torch.randn(70) * 3)),
    Case9("masked_scatter_bcast", lambda x, m, s: x.masked_scatter(m, s),
         lambda: (torch.randn(3, 4), torch.rand(4) > 0.5, torch.randn(3, 5)), min_opset=11),
    # scatter
    *typed("scatter", lambda x, i, s: x.scatter(1, i, s.to(x.dtype)), shape=(3, 4), min_opset=9,
           extra=lambda: (torch.tensor([[0, 2], [1, 3], [3, 0]]), torch.randn(3, 2) * 3), opsets=(11,)),
    Case9("scatter_value", lambda x, i: x.scatter(0, i, 1.5),
         lambda: (torch.randn(3, 4), torch.tensor([[0, 2, 1, 0]])), min_opset=9, opsets=(11,)),
    Case9("scatter_big_src", lambda x, i, s: x.scatter(1, i, s),
         lambda: (torch.randn(3, 4), torch.tensor([[0], [3], [1]]), torch.randn(3, 4)), min_opset=9),
    Case9("scatter_reduce_add", lambda x, i, s: x.scatter(1, i, s, reduce="add"),
         lambda: (torch.randn(3, 4), torch.tensor([[0, 0], [1, 3], [2, 2]]), torch.randn(3, 2)), opsets=(16,)),
    Case9("scatter_reduce_mul", lambda x, i, s: x.scatter(1, i, s, reduce="multiply"),
         lambda: (torch.randn(3, 4), torch.tensor([[0, 0], [1, 3], [2, 2]]), torch.randn(3, 2)), min_opset=9,
         opsets=(16,)),
    *typed("scatter_add", lambda x, i, s: x.scatter_add(0, i, s.to(x.dtype)), shape=(3, 4), dtypes=(F32, I64),
           extra=lambda: (torch.tensor([[0, 1, 2, 0]]), torch.randn(1, 4) * 3), min_opset=9, opsets=(16,)),
    Case9("scatter_add_repeat", lambda x, i, s: x.scatter_add(1, i, s),
         lambda: (torch.randn(3, 4), torch.tensor([[0, 0], [1, 3], [2, 2]]), torch.randn(3, 2)), opsets=(16,)),
    Case9("scatter_add_dynamic", lambda x, i, s: x.scatter_add(0, i, s),
          lambda: (torch.randn(4, 3), torch.tensor([[0, 1, 1], [1, 1, 3]]), torch.randn(2, 3)), opsets=(16,),
          export_options=dict(input_names=["x", "i", "s"], dynamic_axes={"x": {0: "n"}, "i": {0: "k"}, "s": {0: "k"}}),
          other_inputs=lambda: [(torch.randn(6, 3), torch.tensor([[5, 1, 1]]), torch.randn(1, 3))]),
    *[Case(f"scatter_reduce_{mode}{'' if keep else '_exclude'}",
           lambda x, i, s, mode=mode, keep=keep: x.scatter_reduce(1, i, s, mode, include_self=keep),
           lambda: (torch.randn(3, 4), torch.tensor([[0, 0], [1, 3], [2, 2]]), torch.randn(3, 2)),
           # below ScatterElements' reduction (16; max/min 18) a one-hot reduction; mean needs 16
           min_opset=16 if mode == "mean" else 9, opsets=(16, 18))
      for mode in ("sum", "prod", "mean", "amax", "amin") for keep in (True, False)],
    Case9("scatter_reduce_amax_int", lambda x, i, s: x.scatter_reduce(0, i, s, "amax", include_self=False),
         lambda: (torch.arange(6).view(2, 3), torch.tensor([[1, 1, 0]]), torch.tensor([[7, -3, 2]])), min_opset=9,
         opsets=(13, 18)),
    # nonzero, unique
    *typed("nonzero", lambda x: torch.nonzero(x), shape=(3, 4), min_opset=9),
    Case9("argwhere", lambda x: torch.argwhere(x > 0), _x(2, 3, 4), min_opset=9),
    Case9("nonzero_tuple", lambda x: torch.nonzero(x > 0, as_tuple=True), _x(3, 4), min_opset=9),
    dynamic("nonzero", lambda x: torch.nonzero(x > 0), min_opset=9),
    *typed("unique", lambda x: torch.unique(x, return_inverse=True, return_counts=True), shape=(3, 4),
           dtypes=(F32, I64), min_opset=11),
    Case9("unique_legacy", lambda x: torch._unique(x, return_inverse=True), lambda: (torch.randint(0, 4, (2, 5)),),
          min_opset=11),
    Case9("unique_unsorted", lambda x: torch.unique(x, sorted=False, return_counts=True),
          lambda: (torch.tensor([3, 1, 2, 3, 1, 5]),), min_opset=11),
    *typed("unique_narrow", lambda x: torch.unique(x, return_inverse=True, return_counts=True), shape=(3, 4),
           dtypes=(I32, BOOL, torch.float16, torch.int16), min_opset=11),
    Case9("nonzero_int8", lambda x: torch.nonzero(x), lambda: (sample(torch.int8, "any", (3, 4)),)),
    Case9("masked_fill_int16", lambda x: x.masked_fill(x > 0, 3), lambda: (sample(torch.int16, "any", (3, 4)),)),
    Case9("sort_bool", lambda x: x.float().sort(stable=True)[1] + x.sort(stable=True)[1] * 0,
          lambda: (torch.rand(3, 5) > 0.5,), min_opset=7, opsets=(11,)),
    Case9("argsort_bool", lambda x: x.argsort(stable=True), lambda: (torch.rand(3, 5) > 0.5,), min_opset=7,
          opsets=(11,)),
    *[Case9(f"topk_{str(dt)[6:]}", lambda x: x.topk(2), lambda dt=dt: (torch.randperm(12).view(3, 4).to(dt),),
            min_opset=11) for dt in (I32, torch.int8, torch.int16)],
    Case9("unique_plain", lambda x: torch.unique(x), lambda: (torch.randint(0, 4, (10,)),), min_opset=11),
    Case9("unique_dim", lambda x: torch.unique(x, dim=0, return_inverse=True, return_counts=True),
         lambda: (torch.tensor([[1, 2], [0, 1], [1, 2]]),), min_opset=11),
    Case9("unique_consecutive", lambda x: torch.unique_consecutive(x), lambda: (torch.tensor([1, 1, 2, 2, 3, 1, 1]),)),
    Case9("unique_consecutive_all", lambda x: torch.unique_consecutive(x, return_inverse=True, return_counts=True),
         lambda: (torch.tensor([[1.0, 1.0, 2.0], [2.0, 3.0, 3.0]]),), min_opset=11),
    # sorting
    *typed("topk", lambda x: x.topk(2, 1), dtypes=(F32,), opsets=(10, 11), min_opset=7),
    Case9("topk_int", lambda x: x.topk(2, 1), lambda: (torch.randperm(12).view(3, 4),), min_opset=11),
    Case9("topk_smallest", lambda x: x.topk(3, largest=False), _x(3, 6), opsets=(10, 11), min_opset=7),
    dynamic("topk", lambda x: x.topk(2, -1), opsets=(10, 11), min_opset=7),
    Case9("sort", lambda x: x.sort(1), _x(3, 6), opsets=(10, 11), min_opset=7),
    Case9("sort_desc", lambda x: x.sort(0, descending=True), _x(3, 6), opsets=(10, 11), min_opset=7),
    Case9("sort_stable", lambda x: torch.sort(x, stable=True, dim=1), lambda: (torch.randint(0, 3, (3, 6)),),
         min_opset=11),
    Case9("sort_int", lambda x: x.sort(), lambda: (torch.randperm(8).view(2, 4),), min_opset=11),
    dynamic("sort_batch", lambda x: x.sort(0), min_opset=10, opsets=(11,)),
    Case9("argsort", lambda x: x.argsort(1, descending=True), _x(3, 6), opsets=(10, 11), min_opset=7),
    Case9("searchsorted", lambda s, x: torch.searchsorted(s, x), lambda: (torch.arange(5.0), torch.randn(3, 4) * 3),
         min_opset=9),
    Case9("searchsorted_right", lambda s, x: torch.searchsorted(s, x, right=True),
         lambda: (torch.tensor([0, 1, 1, 3]), torch.tensor([[1, 3], [0, 5]])), min_opset=9),
    Case9("searchsorted_nd", lambda s, x: torch.searchsorted(s, x, side="right", out_int32=True),
         lambda: (torch.sort(torch.randn(2, 6))[0], torch.randn(2, 3)), min_opset=9),
    Case9("bucketize", lambda x, b: torch.bucketize(x, b), lambda: (torch.randn(3, 4), torch.tensor([-1.0, 0.0, 0.5])),
         min_opset=9),
    Case9("bucketize_scalar", lambda b: torch.bucketize(0.3, b), lambda: (torch.tensor([-1.0, 0.0, 0.5]),)),
    Case9("searchsorted_scalar", lambda s: torch.searchsorted(s, 2), lambda: (torch.tensor([0, 1, 3, 5]),)),
    Case9("bucketize_right", lambda x, b: torch.bucketize(x, b, right=True, out_int32=True),
         lambda: (torch.tensor([[0, 1, 2]]), torch.tensor([0, 1, 1, 4])), min_opset=9),
    Case9("one_hot", lambda i: torch.nn.functional.one_hot(i, 5), lambda: (torch.tensor([[0, 4], [2, 1]]),)),
    Case9("one_hot_auto", lambda i: torch.nn.functional.one_hot(i), lambda: (torch.tensor([0, 3, 2]),), min_opset=9),
    # in-place writes into views
    Case9("set_slice", _set_slice, lambda: (torch.randn(4, 3), torch.randn(3)), min_opset=8),
    Case9("set_select_alias", _set_select_and_alias, _x(3, 4), min_opset=8),
    Case9("set_mask", _set_mask, _x(3, 4), min_opset=9),
    Case9("index_put_", _index_put_, lambda: (torch.randn(4, 3), torch.tensor([0, 2]), torch.tensor(1.0))),
    Case9("masked_fill_", _masked_fill_, _x(3, 4), min_opset=9),
    Case9("set_transposed", _set_transposed, _x(3, 4), min_opset=8),
    Case9("set_flat_view", _set_flat_view, _x(3, 4), min_opset=8),
    Case9("set_diagonal", _set_diagonal, _x(3, 4), min_opset=9, opsets=(11,)),
    Case9("set_narrow", _set_narrow, _x(3, 4), min_opset=8),
    Case9("set_step", _set_step, _x(5, 2), min_opset=9, opsets=(11,)),
    Case9("set_permuted", _set_permuted, _x(2, 3, 4), min_opset=7),
    Case9("set_unsqueezed", _set_unsqueezed, _x(3, 4), min_opset=8),
    Case9("set_through_old_view", _set_twice_through_old_view, _x(4, 3), min_opset=8),
    Case9("set_negative_select", _set_negative_select, _x(3, 4), min_opset=8),
    Case9("set_reshaped_copy", _set_reshaped_copy, _x(3, 4), min_opset=7),
    Case9("set_input", _inplace_on_input, _x(3, 4), min_opset=8),
    Case9("set_tensor_index_slice", _set_tensor_index_slice, lambda: (torch.randn(3, 4), torch.tensor([0, 3]))),
    dynamic("set_tensor_index", _set_tensor_index_slice, extra=_idx(0, 2)),
    dynamic("set_pair", _set_adjacent, shape=(2, 4, 3), other=(5, 4, 3),
            extra=lambda: (torch.tensor([3, 1]), torch.tensor([0, 2]), torch.randn(2))),
    dynamic("index_add_repeat", lambda x, i: x.index_add(1, i, torch.ones_like(x[:, :2])), extra=_idx(2, 2),
            opsets=(16,)),
    dynamic("set_runtime_bounds", _set_runtime_bounds, min_opset=10),
    dynamic("set_batch", _set_batch, min_opset=8),
    Case9("set_select_dynamic", _set_negative_select, _x(3, 4), export_options=DYN, min_opset=8,
         other_inputs=lambda: [(torch.randn(5, 4),)], opsets=(11,)),
]


@pytest.mark.parametrize("case,opset", params(CASES))
def test_indexing_op(case, opset):
    run_case(case, opset)


@pytest.mark.parametrize("case,opset", below_min_params(CASES))
def test_indexing_op_below_min_opset(case, opset):
    run_below_min(case, opset)


def test_remove_mutation_leaves_writes_into_views():
    """torch's own pass keeps copy_ into a slice view: the reason prepare/inplace.py exists."""
    captured = capture(Case("m", _set_slice, None).module(), (torch.randn(4, 3), torch.randn(3)), TrainingMode.EVAL)
    graph = captured.graph
    torch._C._jit_pass_inline(graph)
    torch._C._jit_pass_remove_mutation(graph)
    assert "aten::copy_" in [n.kind() for n in graph.nodes()]


def _write_into_strided(x):
    y = x.clone()
    y.as_strided((2, 2), (4, 1)).add_(1)
    return y


def _write_into_chunk(x):
    x = x.clone()
    a, b = x.chunk(2)
    a.add_(1)
    return x


@pytest.mark.parametrize("fn", [_write_into_strided, _write_into_chunk])
def test_write_into_uninvertible_view_is_a_clear_error(fn):
    with pytest.raises(Exception, match="write into the base tensor instead"):
        export(Case("m", fn, None).module(), (torch.randn(4, 4),), io.BytesIO(), opset_version=17)


class _ScriptedWrites(torch.nn.Module):
    def forward(self, x):
        y = x.clone()
        y.add_(1)  # scripted graphs keep reading `y` after the write
        y[0] = y[1]
        y[:, 1:3] *= 2
        return y


@pytest.mark.parametrize("opset", [9, 17])
def test_scripted_writes_into_views(opset):
    from torchscript_onnx.verify import verify

    verify(torch.jit.script(_ScriptedWrites()), (torch.randn(3, 4),), opset_version=opset,
           other_inputs=[(torch.randn(5, 4),)], input_names=["x"], dynamic_axes={"x": {0: "n"}})


class _ScriptedListSlice(torch.nn.Module):
    def forward(self, x):
        rows, cols = x.shape[1:]  # aten::slice on a list of sizes
        return x.reshape(rows * cols, -1)


@pytest.mark.parametrize("opset", [9, 17])
def test_scripted_list_slice(opset):
    from torchscript_onnx.verify import verify

    verify(torch.jit.script(_ScriptedListSlice()), (torch.randn(2, 3, 4),), opset_version=opset,
           other_inputs=[(torch.randn(3, 5, 4),)], input_names=["x"], dynamic_axes={"x": {0: "b", 1: "n"}})
