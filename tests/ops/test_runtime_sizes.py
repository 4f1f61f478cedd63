"""Sizes known only at runtime (dynamic axes, or scripted graphs) feeding ops that take ints:
repeat/tile counts, linspace steps, one_hot classes, pixel (un)shuffle on dynamic dims. Each case
is exported with dynamic axes, traced and scripted, and rerun at other sizes against eager PyTorch
through onnxruntime. Static inputs keep their constant lowering (checked at the end)."""

import io

import onnx
import pytest
import torch
import torch.nn.functional as F

from tests.optable import Case, run_case, scripted
from torchscript_onnx import export

# 9: the lowest that computes sizes (NonZero ranges); 11: Range, DepthToSpace; 13: axes inputs.
OPSETS = (9, 11, 13, 26)


def _dynamic(name, fn, shapes, axes, others, **options):
    """Inputs of ``shapes`` (an int dtype where a shape is a tensor), ``axes`` dynamic per input."""
    names = [f"in{k}" for k in range(len(shapes))]

    def make(shapes):
        return tuple(s if isinstance(s, (torch.Tensor, int)) else torch.randn(*s) for s in shapes)

    return Case(name, fn, lambda: make(shapes), other_inputs=lambda: [make(o) for o in others],
                export_options=dict(input_names=names, dynamic_axes=dict(zip(names, axes))), **options)


def repeat_rows(x, y):
    return x.repeat(y.size(0), 1)


def repeat_new_dims(x, y):
    return x.repeat(2, y.size(0), y.size(0) - 1)


def tile_by_size(x, y):
    return x.tile((y.size(0),))


def linspace_by_size(x):
    return torch.linspace(-1.5, 2.0, x.size(0))


def linspace_all_runtime(x, y):
    return torch.linspace(x.size(0), y.size(0) * 3, y.size(0) + x.size(0))


def linspace_int(x):
    return torch.linspace(0, 20, x.size(0), dtype=torch.int64)


def one_hot_by_size(x, y):
    return F.one_hot(x, y.size(0))


def shuffle(x):
    return F.pixel_shuffle(x, 2)


def unshuffle(x):
    return F.pixel_unshuffle(x, 3)


def chunk_by_size(x):
    return x.chunk(x.size(0), 1)


def chunk_by_size_negative_dim(x):
    return x.chunk(x.size(0) + 1, -1)


def tril_by(x, k: int):
    return torch.tril(x, k)


def triu_by(x, k: int):
    return torch.triu(x, k)


def diagonal_default(x):
    return torch.diagonal(x)


def diagonal_offset_dims(x):
    return torch.diagonal(x, 2, -1, 1)


def diagonal_negative_offset(x):
    return torch.diagonal(x, -1, 0, 2)


def _labels(*values):
    return torch.tensor(values)


CASES = [
    _dynamic("repeat_rows", repeat_rows, [(2, 3), (4,)], [[0], [0]], [[(3, 3), (2,)], [(1, 3), (5,)]]),
    _dynamic("repeat_new_dims", repeat_new_dims, [(2, 3), (3,)], [[0, 1], [0]], [[(4, 1), (2,)], [(1, 2), (4,)]]),
    _dynamic("tile_by_size", tile_by_size, [(2, 3), (4,)], [[0], [0]], [[(3, 3), (2,)], [(1, 3), (6,)]]),
    _dynamic("linspace_steps", linspace_by_size, [(5,)], [[0]], [[(8,)], [(2,)], [(1,)], [(0,)]]),
    _dynamic("linspace_all_runtime", linspace_all_runtime, [(2,), (3,)], [[0], [0]], [[(4,), (7,)], [(0,), (1,)]]),
    _dynamic("linspace_int", linspace_int, [(6,)], [[0]], [[(9,)], [(1,)]]),
    _dynamic("one_hot_classes", one_hot_by_size, [_labels(0, 2, 1), (4,)], [[0], [0]],
             [[_labels(4, 0), (5,)], [_labels(1, 1, 0, 1), (2,)]]),
    # runtime slicing (10) or sequences (11, scripted): below, a clear error
    _dynamic("chunk_count_static_dim", chunk_by_size, [(3, 12)], [[0]], [[(3, 12)]], min_opset=11),
    _dynamic("chunk_count_dynamic_dim", chunk_by_size, [(3, 18)], [[0, 1]], [[(3, 13)], [(3, 15)], [(3, 16)]],
             min_opset=11),
    _dynamic("chunk_count_negative_dim", chunk_by_size_negative_dim, [(2, 9)], [[0, 1]], [[(2, 7)], [(2, 3)]],
             min_opset=11),
    # diagonal of matrices sized at runtime: Range (opset 11)
    *[_dynamic(fn.__name__, fn, [(2, 4, 5, 3)], [[0, 1, 2, 3]], [[(5, 6, 7, 2)], [(3, 1, 4, 6)], [(4, 2, 2, 2)]],
               min_opset=11) for fn in (diagonal_default, diagonal_offset_dims, diagonal_negative_offset)],
    # an int graph input as the diagonal: Trilu's k (opset 14)
    *[_dynamic(f"{fn.__name__}_k{k}", fn, [(3, 5), k], [[0], []], [[(6, 5), k]], min_opset=14)
      for fn in (tril_by, triu_by) for k in (-1, 2)],
    _dynamic("pixel_shuffle_dynamic", shuffle, [(1, 8, 3, 4)], [[0, 2, 3]], [[(2, 8, 5, 2)], [(3, 8, 1, 1)]]),
    _dynamic("pixel_shuffle_dynamic_channels", shuffle, [(1, 8, 3, 4)], [[0, 1, 2, 3]], [[(2, 12, 2, 3)]]),
    _dynamic("pixel_unshuffle_dynamic", unshuffle, [(1, 2, 6, 9)], [[0, 2, 3]], [[(2, 2, 3, 12)], [(1, 2, 9, 3)]]),
    _dynamic("pixel_unshuffle_dynamic_channels", unshuffle, [(1, 2, 6, 9)], [[0, 1, 2, 3]], [[(2, 4, 3, 6)]]),
]


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("script", [False, True], ids=["trace", "script"])
def test_runtime_size(case, opset, script):
    if opset < case.min_opset:
        model = scripted(case) if script else case.module()
        with pytest.raises(Exception, match=r"opset 1[014]"):
            export(model, case.inputs(), io.BytesIO(), opset_version=opset, **case.export_options)
        return
    run_case(case, opset, script=script)


def _op_types(fn, inputs, opset):
    buffer = io.BytesIO()
    export(Case("m", fn, None).module(), inputs, buffer, opset_version=opset)
    return {node.op_type for node in onnx.load_from_string(buffer.getvalue()).graph.node}


@pytest.mark.parametrize("opset", (9, 26))
@pytest.mark.parametrize("fn,inputs", [
    (repeat_rows, (torch.randn(2, 3), torch.randn(4))),
    (linspace_by_size, (torch.randn(5),)),
    (one_hot_by_size, (_labels(0, 2), torch.randn(4))),
    (shuffle, (torch.randn(1, 8, 3, 4),)),
    (unshuffle, (torch.randn(1, 2, 6, 9),)),
], ids=["repeat", "linspace", "one_hot", "pixel_shuffle", "pixel_unshuffle"])
def test_static_sizes_stay_constant(fn, inputs, opset):
    """Without dynamic axes the sizes fold: no Shape, Range or NonZero in the graph."""
    assert not _op_types(fn, inputs, opset) & {"Shape", "Range", "NonZero", "ConstantOfShape"}
