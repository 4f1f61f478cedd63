"""torch.roll: shifts taken modulo the rolled size (negative, larger than the size, flattened
when no dims are given), with static and runtime sizes; traced and scripted, against eager
PyTorch through onnxruntime. Below opset 10 a runtime roll gathers positions (no Mod, no
Slice with runtime bounds); from 10 it slices at a runtime split point."""

import pytest
import torch

from tests.optable import Case, run_case

OPSETS = (9, 10, 26)


def _x(*shape):
    return lambda: (torch.randn(*shape),)


def _dynamic(name, fn, shape, other, axes):
    """Exported with ``axes`` of x dynamic, rerun at the ``other`` sizes."""
    return Case(name, fn, _x(*shape), export_options=dict(input_names=["x"], dynamic_axes={"x": list(axes)}),
                other_inputs=lambda: [(torch.randn(*s),) for s in other])


def roll_by_size(x):
    return torch.roll(x, x.size(0) + 1, 1)


CASES = [
    Case("flat_beyond_numel", lambda x: torch.roll(x, 5), _x(2)),
    Case("flat_negative_beyond_numel", lambda x: torch.roll(x, -13), _x(3, 4)),
    Case("flat_multiple_of_numel", lambda x: torch.roll(x, 24), _x(2, 3, 4)),
    Case("dim_beyond_size", lambda x: torch.roll(x, 7, 1), _x(3, 4)),
    Case("dim_negative", lambda x: torch.roll(x, -1, 0), _x(3, 4)),
    Case("dim_negative_beyond_size", lambda x: torch.roll(x, -9, -1), _x(3, 4)),
    Case("dims_two", lambda x: torch.roll(x, (5, -6), (0, 2)), _x(2, 3, 4)),
    Case("dims_zero_shift", lambda x: torch.roll(x, (0, 4), (0, 1)), _x(2, 4)),
    _dynamic("dynamic_dim_beyond_size", lambda x: torch.roll(x, 7, 1), (3, 4), [(3, 5), (3, 7), (3, 1)], [1]),
    _dynamic("dynamic_dim_negative", lambda x: torch.roll(x, -6, 0), (4, 2), [(5, 2), (3, 2), (6, 2)], [0]),
    _dynamic("dynamic_flat", lambda x: torch.roll(x, 11), (2, 3), [(5, 3), (1, 3)], [0]),
    _dynamic("dynamic_flat_negative", lambda x: torch.roll(x, -4), (2, 3), [(3, 3), (1, 3)], [0]),
    _dynamic("dynamic_two_dims", lambda x: torch.roll(x, (3, -5), (0, 1)), (2, 3), [(4, 2), (5, 7)], [0, 1]),
    _dynamic("dynamic_empty", lambda x: torch.roll(x, 3, 0), (2, 3), [(0, 3)], [0]),
]

# The tracer records x.size(0) + 1 as a number; a scripted graph keeps it a runtime shift.
SCRIPT_CASES = [
    _dynamic("runtime_shift", roll_by_size, (2, 3), [(4, 3), (3, 5), (0, 2)], [0, 1]),
]


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("script", [False, True], ids=["trace", "script"])
def test_roll(case, opset, script):
    run_case(case, opset, script=script)


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("case", SCRIPT_CASES, ids=lambda c: c.name)
def test_roll_scripted_runtime_shift(case, opset):
    run_case(case, opset, script=True)
