"""Prepare: TorchScript graph rewrites that leave one flat graph for conversion.

Capture records the model's graph; everything that rewrites it before conversion lives here:

- ``script``: a scripted forward's submodule methods and functions inlined (with their module
  scopes), plain attribute reads folded into constants, the graph specialised to the example
  inputs (capture calls it while binding a scripted model's arguments);
- ``attributes``: attribute writes in scripted code (``self.n = x``) turned into value flow;
- ``autograd``: traced ``torch.autograd.Function`` calls replaced by the ops they ran;
- ``prepare()`` below, on every captured graph: calls inlined, int-list loops of a constant trip
  count unrolled (``loops``), tuples lowered so outputs map 1:1 to ONNX outputs, writes into views
  rewritten (``inplace``), dead code dropped. In-place ops stay (the registry maps ``relu_`` to
  ``relu``); dropout is decided by the training flag at conversion.
"""

from __future__ import annotations

import torch

from .inplace import remove_inplace_views
from .loops import unroll_int_list_loops


def prepare(graph: torch._C.Graph) -> torch._C.Graph:
    torch._C._jit_pass_inline(graph)
    unroll_int_list_loops(graph)
    torch._C._jit_pass_lower_all_tuples(graph)
    remove_inplace_views(graph)  # x[1:3] = y -> slice_scatter; see inplace.py
    torch._C._jit_pass_dce(graph)
    return graph


__all__ = ["prepare", "unroll_int_list_loops"]
