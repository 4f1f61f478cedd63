"""Sizes, counts and indices known only at runtime in more ops: expand by a size tensor that may
hold -1, setitem of a small constant into a slice sized at runtime, repeat_interleave by a count
tensor of runtime length. Each case is exported traced and scripted and rerun at other sizes
against eager PyTorch through onnxruntime."""

import io
from typing import List

import onnx
import pytest
import torch
import torch.nn.functional as F

from tests.optable import Case, run_case, scripted
from torchscript_onnx import MAX_OPSET, export


def _case(name, fn, inputs, others=(), axes=None, opsets=(9, 13, MAX_OPSET), **options):
    """``inputs``/``others``: functions giving input tuples; ``axes``: dynamic axes per input."""
    options.setdefault("min_opset", 9)
    export_options = {}
    if axes:
        names = [f"in{k}" for k in range(len(axes))]
        export_options = dict(input_names=names, dynamic_axes={n: a for n, a in zip(names, axes) if a})
    return Case(name, fn, inputs, other_inputs=lambda: [o() for o in others], opsets=opsets,
                export_options=export_options, **options)


# -- expand ------------------------------------------------------------------------------------

def expand_by_tensor(x, size):
    return x.expand(size)


def expand_by_item(x, k):
    return x.expand(int(k), 2)


def expand_keep_and_size(x):
    return x.expand(2, -1, x.size(0))


def expand_as_runtime(x):
    table = torch.tensor([[4], [5], [6]])
    return table.expand_as(x)


def set_tail_columns(x):
    x[:, x.size(0):] = torch.tensor([7.0, 8.0, 9.0])
    return x


def set_tail_zero(x):
    x[:, x.size(0):] = 0
    return x


# -- repeat_interleave -------------------------------------------------------------------------

def repeat_each_by_tensor(x, repeats):
    return torch.repeat_interleave(x, repeats, dim=1)


def repeat_rows_by_tensor(x, repeats):
    return torch.repeat_interleave(x, repeats, dim=0)


def add_at_slice_and_index(x, update):
    x = x.clone()
    x[1:2, 1:3, torch.tensor([1])] += update
    return x


def add_at_index_slice_and_int(x, update):
    x = x.clone()
    x[1:3, torch.tensor([0, 2]), 2] += update
    return x


# -- scatter: index_add, scatter_add, scatter_reduce ----------------------------------------------

class AddRows(torch.nn.Module):
    """index_add_ of fixed rows into an input whose sizes vary (``times``: repeated in a loop)."""

    def __init__(self, times=1):
        super().__init__()
        self.times = times
        self.index = torch.tensor([0, 2, 3, 1, 2])
        self.rows = torch.arange(15.0).reshape(1, 5, 3)

    def forward(self, x):
        x = x.clone()
        for _ in range(self.times):
            x.index_add_(1, self.index, self.rows)
        return x


def scatter_add_rows(x, index, src):
    return x.scatter_add(0, index, src)


def reduce_all_ways(src, index, x):
    return (x.scatter_reduce(0, index, src, "amax"), x.scatter_reduce(0, index, src, "sum"),
            x.scatter_reduce(0, index, src, "amin"), x.scatter_reduce(0, index, src, "prod"))


def reduce_excluding_self(src, index, x):
    return (x.scatter_reduce(1, index, src, "amax", include_self=False),
            x.scatter_reduce(1, index, src, "prod", include_self=False))


def scatter_multiply(src, index, x):
    return x.scatter(1, index, src, reduce="multiply")


def contract_two(x, y):
    return torch.tensordot(x, y, dims=([2, 3], [0, 1]))


def contract_mixed(x, y):
    return torch.tensordot(x, y, dims=([0, 2], [2, 1]))


# -- pad: integers before opset 11 (Pad takes floating types only) ------------------------------

def pad_sides(x):
    return F.pad(x, (1, 1))


def pad_with_value(x):
    return F.pad(x, (1, 2, 0, 1), value=-3.0)


def pad_reflect(x):
    return F.pad(x, (1, 2), mode="reflect")


# -- arithmetic on small integers -------------------------------------------------------------

def power(x, y):
    return x.pow(y)


def true_divide_transposed(x, y):
    x, y = x.transpose(1, 2), y.transpose(1, 2)
    return x / y, torch.true_divide(x, y)


def _small_ints(dtype, exponent_dtype=None):
    return lambda: (torch.tensor([2, 3, 5], dtype=dtype), torch.tensor([3], dtype=exponent_dtype or dtype))


def _ints(*values):
    return torch.tensor(values)


CASES = [
    # a 0-d size of -1 keeps the dim; a 1-D size tensor gives the rank
    _case("expand_by_tensor_minus_one", expand_by_tensor, lambda: (torch.randn(3), _ints(-1).reshape(())),
          [lambda: (torch.randn(5), _ints(-1).reshape(()))], axes=[[0], []]),
    # an int read off a tensor at runtime may be -1 too
    _case("expand_by_item", expand_by_item, lambda: (torch.randn(3, 1), _ints(-1).reshape(())),
          [lambda: (torch.randn(5, 1), _ints(5).reshape(())), lambda: (torch.randn(2, 1), _ints(-1).reshape(()))],
          axes=[[0], []]),
    _case("expand_keep_and_size", expand_keep_and_size, lambda: (torch.randn(3, 1),),
          [lambda: (torch.randn(5, 1),)], axes=[[0]]),
    _case("expand_as_runtime", expand_as_runtime, lambda: (torch.randn(3, 2),),
          [lambda: (torch.randn(3, 6),)], axes=[[0, 1]]),
    # the trace records the broadcast of the constant at the traced slice's size
    _case("set_tail_columns", set_tail_columns, lambda: (torch.ones(2, 5, 3),),
          [lambda: (torch.randn(3, 4, 3),), lambda: (torch.randn(1, 6, 3),)], axes=[[0, 1, 2]],
          opsets=(11, 13, MAX_OPSET), min_opset=10),
    _case("set_tail_zero", set_tail_zero, lambda: (torch.ones(2, 5),),
          [lambda: (torch.randn(3, 4),), lambda: (torch.randn(1, 2),)], axes=[[0, 1]], min_opset=10),
    # repeats of runtime length: one count broadcast over the dim, or one count per element
    _case("repeat_interleave_one_count", repeat_each_by_tensor, lambda: (_ints([1, 2, 4], [3, 4, 7]), _ints(2)),
          [lambda: (_ints([7, 8], [5, 6]), _ints(4)), lambda: (_ints([7, 8, 1, 1], [5, 6, 2, 2]), _ints(0))],
          axes=[[1], [0]], min_opset=11),
    _case("repeat_interleave_counts", repeat_rows_by_tensor, lambda: (torch.randn(3, 2), _ints(2, 0, 3)),
          [lambda: (torch.randn(2, 2), _ints(1, 4)), lambda: (torch.randn(4, 2), _ints(3))],
          axes=[[0], [0]], min_opset=11),
    # index_put's lowering meets an empty constant on the way (serialized without a memoryview cast)
    _case("add_at_slice_and_index", add_at_slice_and_index,
          lambda: (torch.randn(3, 4, 5), torch.tensor([10.0, 15.0]).view(1, 2, 1)), min_opset=11),
    _case("add_at_index_slice_and_int", add_at_index_slice_and_int,
          lambda: (torch.randn(3, 4, 5), torch.tensor([10.0, 15.0]).view(2, 1)), min_opset=11),
    # index_add: source matches self on every dim but the indexed one, whatever the runtime sizes
    _case("index_add_dynamic", AddRows(), lambda: (torch.ones(1, 4, 3),),
          [lambda: (torch.randn(1, 6, 3),)], axes=[[0, 1]]),
    _case("index_add_in_loop", AddRows(3), lambda: (torch.ones(1, 4, 3),), opsets=(9, 13)),
    # scatter_add with an index (and a larger src) of runtime sizes: src cut to the index at runtime
    _case("scatter_add_runtime_index", scatter_add_rows,
          lambda: (torch.zeros(3, 5), _ints([0, 1, 2, 0], [1, 0, 2, 1]), torch.ones(3, 5)),
          [lambda: (torch.zeros(3, 5), _ints([2, 2], [0, 1], [1, 1]), torch.randn(4, 3)),
           lambda: (torch.zeros(3, 5), _ints([0, 1, 2, 0, 0]), torch.randn(1, 5))],
          axes=[[], [0, 1], [0, 1]], opsets=(11, 13, 16), min_opset=11),
    # scatter_reduce below ScatterElements' reductions (16, max/min 18): exact one-hot reductions
    _case("scatter_reduce_all_ways", reduce_all_ways,
          lambda: (torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), _ints(0, 1, 0, 1, 2, 1), torch.tensor([1.0, 2.0, 3.0, 8.0])),
          opsets=(9, 13, 16, 17, 18)),
    _case("scatter_reduce_ints", reduce_all_ways, lambda: (_ints(5, -2, 3, 4, 1, 6), _ints(0, 1, 0, 1, 2, 1), _ints(1, 2, 3, 8)),
          opsets=(9, 13, 16, 17, 18)),
    _case("scatter_reduce_empty", reduce_all_ways,
          lambda: (torch.tensor([]), torch.tensor([], dtype=torch.int64), torch.tensor([])), opsets=(9, 16, 17, 18)),
    _case("scatter_reduce_excluding_self", reduce_excluding_self,
          lambda: (torch.randn(3, 4), _ints([0, 4, 4, 1], [2, 2, 2, 2]), torch.randn(3, 5)), opsets=(9, 13, 16, 17, 18)),
    _case("scatter_reduce_runtime_corner", reduce_all_ways,
          lambda: (torch.randn(3, 4), _ints([0, 1, 4, 4], [2, 2, 1, 0]), torch.randn(5, 6)),
          [lambda: (torch.randn(4, 3), _ints([1, 1], [0, 4]), torch.randn(6, 2))],
          axes=[[0, 1], [0, 1], [0, 1]], opsets=(11, 16, 17, 18), min_opset=11),
    _case("scatter_multiply", scatter_multiply,
          lambda: (torch.randn(2, 3), _ints([0, 3, 3], [1, 1, 2]), torch.randn(3, 4)), opsets=(9, 13, 16)),
    # tensordot over dims whose sizes are known only at runtime: their product computed in the graph
    _case("tensordot_dynamic", contract_two, lambda: (torch.randn(7, 5, 3, 4), torch.randn(3, 4, 9, 2)),
          [lambda: (torch.randn(8, 6, 2, 5), torch.randn(2, 5, 3, 4))], axes=[[0, 1, 2, 3], [0, 1, 2, 3]]),
    _case("tensordot_dynamic_permuted", contract_mixed, lambda: (torch.randn(2, 3, 4), torch.randn(5, 4, 2)),
          [lambda: (torch.randn(3, 1, 6), torch.randn(2, 6, 3))], axes=[[0, 1, 2], [0, 1, 2]]),
    # integers padded in a float type that holds them exactly (double for 32/64-bit ones)
    _case("pad_int32", pad_sides, lambda: (torch.randint(-9, 9, (3, 3), dtype=torch.int32),), opsets=(9, 10, 11)),
    _case("pad_int64_beyond_float", pad_sides, lambda: (torch.tensor([[2**40 + 1, -5]]),), opsets=(9, 11)),
    _case("pad_int8_value", pad_with_value, lambda: (torch.randint(-100, 100, (2, 3), dtype=torch.int8),),
          opsets=(9, 11)),
    _case("pad_int32_reflect", pad_reflect, lambda: (torch.randint(-100, 100, (1, 2, 5), dtype=torch.int32),),
          opsets=(9, 11)),
    # Pow on 8/16/32-bit integers runs in a type onnxruntime's Pow takes, then casts back
    *[_case(f"pow_{str(dtype)[6:]}", power, _small_ints(dtype), opsets=(9, 12, 13))
      for dtype in (torch.uint8, torch.int8, torch.int16, torch.int32)],
    _case("pow_uint8_by_double", power, _small_ints(torch.uint8, torch.float64), opsets=(9, 13)),
    _case("pow_uint8_by_int32", power, _small_ints(torch.uint8, torch.int32), opsets=(9, 13)),
    _case("repeat_interleave_const_count_dynamic_dim", lambda x: torch.repeat_interleave(x, torch.tensor(3), dim=-1),
          lambda: (torch.randn(2, 3),), [lambda: (torch.randn(2, 5),)], axes=[[1]]),
]


@pytest.mark.parametrize("script", [False, True], ids=["trace", "script"])
@pytest.mark.parametrize("case,opset", [(c, o) for c in CASES for o in c.test_opsets()],
                         ids=[f"{c.name}-opset{o}" for c in CASES for o in c.test_opsets()])
def test_runtime_sizes(case, opset, script):
    run_case(case, opset, script=script)


def _op_types(fn, inputs, opset=13, **options):
    buffer = io.BytesIO()
    export(Case("m", fn, None).module(), inputs, buffer, opset_version=opset, **options)
    return [node.op_type for node in onnx.load_from_string(buffer.getvalue()).graph.node]


def test_expand_by_sizes_needs_no_minus_one_check():
    """Sizes read off a shape are never -1: no Where guards the Expand then."""
    ops = _op_types(expand_keep_and_size, (torch.randn(3, 1),), input_names=["x"], dynamic_axes={"x": [0]})
    assert "Expand" in ops and "Where" not in ops


def test_runtime_pads_before_11_say_what_legacy_says():
    """Pads known only at runtime before opset 11: legacy's wording, then ours."""
    def pad_by(x, pads: List[int]):
        return F.pad(x, pads)

    with pytest.raises(Exception, match=r"Unsupported: ONNX export of Pad.*The sizes of the padding must be constant"
                                        r".*opset_version=11"):
        export(Case("m", pad_by, None).module(), (torch.randn(2, 2, 4, 4), [2, 4]), io.BytesIO(), opset_version=9)


@pytest.mark.parametrize("script", [False, True], ids=["trace", "script"])
@pytest.mark.parametrize("default", [torch.float32, torch.float64])
def test_integer_true_division_follows_default_dtype(default, script):
    """int / int is torch's default dtype, also where a scripted graph has no traced dtypes."""
    case = Case("div", true_divide_transposed,
                lambda: (torch.randint(-5, 5, (2, 3, 4), dtype=torch.int32),
                         torch.arange(1, 25, dtype=torch.int32).reshape(2, 3, 4)))
    previous = torch.get_default_dtype()
    torch.set_default_dtype(default)
    try:
        for opset in (9, MAX_OPSET):
            run_case(case, opset, script=script)
    finally:
        torch.set_default_dtype(previous)
