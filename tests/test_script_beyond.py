"""Scripted models the legacy exporter cannot export, one section per cause: type tests that the
call site decides (``isinstance`` on a Union parameter of an inlined function), ...

Every case runs the scripted module and onnxruntime side by side at two input sizes: the sizes
it was exported at and others along dynamic axes, so a value that is known only at runtime cannot
hide as a constant of the export.
"""

from __future__ import annotations

from typing import List, Union

import pytest
import torch
from torch import Tensor, nn
from torch.nn.utils import rnn as rnn_utils

from torchscript_onnx.prepare.script import fold_isinstance
from torchscript_onnx.verification import verify


# -- isinstance on a Union parameter, decided by the inlined call site ----------------------------


def _scale(x: Tensor, factor: Union[Tensor, List[float]]) -> Tensor:
    if isinstance(factor, Tensor):
        return x * factor
    return x * torch.tensor(factor)


class ScaleByTensor(nn.Module):
    def forward(self, x, factor):
        return _scale(x, factor)


class ScaleByList(nn.Module):
    def forward(self, x):
        return _scale(x, [2.0, -1.0, 0.5])


class PackedGRU(nn.Module):
    """pack_padded_sequence takes lengths as ``Union[Tensor, List[int]]`` and tests which it got."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(4, 5)

    def forward(self, x, lengths):
        packed = rnn_utils.pack_padded_sequence(x, lengths)
        out, hidden = self.gru(packed)
        return rnn_utils.pad_packed_sequence(out)[0], hidden


def _lengths(batch: int, steps: int) -> Tensor:
    return torch.sort(torch.randint(1, steps + 1, (batch,)), descending=True).values


ISINSTANCE = {
    # name: (model, args, dynamic axes, args at other sizes)
    "tensor": (ScaleByTensor, (torch.randn(2, 3), torch.randn(3)), {"x": {0: "rows"}, "factor": {}},
               (torch.randn(5, 3), torch.randn(3))),
    "list": (ScaleByList, (torch.randn(2, 3),), {"x": {0: "rows"}}, (torch.randn(4, 3),)),
    "pack_padded_sequence": (PackedGRU, (torch.randn(6, 3, 4), torch.tensor([6, 4, 1])),
                             {"x": {0: "steps", 1: "batch"}, "lengths": {0: "batch"}}, (torch.randn(7, 5, 4), _lengths(5, 7))),
}


@pytest.mark.parametrize("opset", (11, 17))
@pytest.mark.parametrize("name", sorted(ISINSTANCE))
def test_isinstance_decided_by_the_call_site(name, opset):
    make, args, axes, other = ISINSTANCE[name]
    names = list(axes)
    verify(torch.jit.script(make()), args, opset_version=opset, input_names=names, dynamic_axes=axes,
           other_inputs=[other])


def test_isinstance_fold_keeps_what_the_static_type_leaves_open():
    graph = torch._C.parse_ir("""
graph(%t : Tensor, %o : Tensor?, %l : int[]):
  %a : bool = prim::isinstance[types=[Tensor]](%t)
  %b : bool = prim::isinstance[types=[int[]]](%t)
  %c : bool = prim::isinstance[types=[Tensor]](%o)
  %d : bool = prim::isinstance[types=[Tensor]](%l)
  return (%a, %b, %c, %d)
""")
    assert fold_isinstance(graph) == 3
    outputs = [v.node() for v in graph.outputs()]
    constants = [n.i("value") if n.kind() == "prim::Constant" else n.kind() for n in outputs]
    assert constants == [1, 0, "prim::isinstance", 0]
