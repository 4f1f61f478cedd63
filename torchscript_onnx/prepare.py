"""Prepare: general TorchScript passes that leave one flat graph for conversion.

Inlining removes calls; lowering tuples flattens tuple inputs/outputs so outputs map 1:1 to ONNX
outputs; dead-code elimination drops what the trace recorded but nothing reads. In-place ops stay
(the registry maps ``relu_`` to ``relu``); dropout is decided by the training flag at conversion.
"""

from __future__ import annotations

import torch

from .prepare_inplace import remove_inplace_views


def prepare(graph: torch._C.Graph) -> torch._C.Graph:
    torch._C._jit_pass_inline(graph)
    torch._C._jit_pass_lower_all_tuples(graph)
    remove_inplace_views(graph)  # x[1:3] = y -> slice_scatter; see prepare_inplace.py
    torch._C._jit_pass_dce(graph)
    return graph
