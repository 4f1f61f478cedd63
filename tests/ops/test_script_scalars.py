"""Ops on Python scalars and type queries that scripted graphs keep (a trace folds them):
item, is_floating_point, the trip count and index of range() loops (aten::__range_length,
aten::__derive_index), arange(..., out=), and unsqueeze by an int graph input. Each case is
scripted, exported and compared with eager PyTorch through onnxruntime; dynamic cases rerun at
other sizes."""

import io
import warnings

import pytest
import torch

from tests.optable import Case, run_case
from torchscript_onnx import export


def _script(body: str, args: str = "x"):
    return torch.jit.CompilationUnit(f"def fn({args}):\n" + body).fn


def _dyn(*names):
    return dict(input_names=list(names), dynamic_axes={n: [0] for n in names})


ITEM_SUM = _script("    return x * y.sum().item()\n", "x, y")
ITEM_INT = _script("    return x + y.max().item()\n", "x, y")
IS_FLOAT = _script("    if x.is_floating_point():\n        return x * 2\n    return x + 1\n")
RANGE_STEP = _script("    out = x\n    for i in range(1, x.size(0), 2):\n        out = out + i\n    return out\n")
RANGE_DOWN = _script("    out = x\n    for i in range(x.size(0), -3, -2):\n        out = out * 0.5 + i\n    return out\n")
RANGE_EMPTY = _script("    out = x\n    for i in range(x.size(0), 2):\n        out = out + i\n    return out\n")
RANGE_INDEX = _script("    out = x[0] * 0\n    for i in range(x.size(0) - 1, -1, -1):\n"
                      "        out = out * 2 + x[i]\n    return out\n")
ARANGE_OUT = _script("    y = torch.zeros(3, dtype=torch.int64)\n    return torch.arange(x.size(0), out=y) + 1\n")
ARANGE_START_OUT = _script("    y = torch.zeros(3)\n    return x[0] + torch.arange(1.5, x.size(0) * 2.0, 0.5, out=y)\n")
UNSQUEEZE_DIM = _script("    return x.unsqueeze(dim)\n", "x, dim: int")

CASES = [
    Case("item_float", ITEM_SUM, lambda: (torch.randn(3), torch.randn(4))),
    Case("item_int", ITEM_INT, lambda: (torch.randn(3), torch.tensor([3, 7, 1]))),
    Case("is_floating_point_float", IS_FLOAT, lambda: (torch.randn(3),)),
    Case("is_floating_point_int", IS_FLOAT, lambda: (torch.tensor([1, 2]),)),
    Case("range_step", RANGE_STEP, lambda: (torch.randn(6),), export_options=_dyn("x"),
         other_inputs=lambda: [(torch.randn(9),), (torch.randn(1),), (torch.randn(2),)]),
    Case("range_down", RANGE_DOWN, lambda: (torch.randn(5),), export_options=_dyn("x"),
         other_inputs=lambda: [(torch.randn(8),), (torch.randn(1),)]),
    Case("range_empty", RANGE_EMPTY, lambda: (torch.randn(4),), export_options=_dyn("x"),
         other_inputs=lambda: [(torch.randn(1),), (torch.randn(2),)]),
    Case("range_index", RANGE_INDEX, lambda: (torch.randn(4, 2),), export_options=_dyn("x"),
         other_inputs=lambda: [(torch.randn(7, 2),), (torch.randn(1, 2),)]),
    Case("arange_out", ARANGE_OUT, lambda: (torch.randn(5),), export_options=_dyn("x"),
         other_inputs=lambda: [(torch.randn(2),)]),
    Case("arange_start_out", ARANGE_START_OUT, lambda: (torch.randn(4),), export_options=_dyn("x"),
         other_inputs=lambda: [(torch.randn(6),)]),
    *[Case(f"unsqueeze_dim{dim}", UNSQUEEZE_DIM, lambda dim=dim: (torch.randn(2, 1, 4), dim), min_opset=13)
      for dim in (0, 2, -1, -4)],
]


@pytest.mark.parametrize("opset", (9, 11, 13, 26))
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_scripted_scalar_op(case, opset):
    if opset < case.min_opset:
        with pytest.raises(Exception, match=f"opset {case.min_opset}"):
            export(case.model, case.inputs(), io.BytesIO(), opset_version=opset, **case.export_options)
        return
    run_case(case, opset, script=True)


def test_arange_out_warns_when_out_is_read_later():
    """Legacy and we return arange's result but do not write it into ``out``: say so."""
    fn = _script("    y = torch.zeros(3)\n    torch.arange(3.0, out=y)\n    return x + y\n")
    with pytest.warns(UserWarning, match="does not write into"):
        export(fn, (torch.randn(3),), io.BytesIO(), opset_version=17)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        export(ARANGE_OUT, (torch.randn(3),), io.BytesIO(), opset_version=17)
