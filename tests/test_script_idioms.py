"""Everyday TorchScript idioms beyond tests/test_script.py's model set: chunk/split results indexed,
loops over unbind and ModuleLists, list comprehensions, break/continue, dicts, runtime arange and
sizes, nested loops, tuples carried by loops, Python builtins (max, math.sqrt), string attributes,
shape-driven while loops, int lists built in loops, index writes in loops, runtime fills and casts,
tensors used as slice bounds, Optional state, top-k per row, a greedy decoder with early stop,
int-list arithmetic on shapes and list methods on known and runtime-length lists.
Each is scripted, exported at the opsets where list and loop lowerings change, and checked in
onnxruntime against PyTorch on the example and on other inputs (other trip counts and branches
where the model has them).
"""

from __future__ import annotations

import math
from typing import Dict, List, Optional, Tuple

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from torchscript_onnx.verify import verify

OPSETS = (11, 13, 17, 26)


class ChunkGetitem(nn.Module):
    def forward(self, x):
        a = x.chunk(2, 1)
        return a[0] * a[1]


class UnbindLoop(nn.Module):
    def forward(self, x):
        acc = torch.zeros_like(x[0])
        for t in x.unbind(0):
            acc = acc + t.relu()
        return acc


class ListComp(nn.Module):
    def forward(self, x, n: int):
        parts = [x * float(i) for i in range(n)]
        return torch.stack(parts, 0).sum(0)


class BreakContinue(nn.Module):
    def forward(self, x):
        for i in range(10):
            if i % 2 == 1:
                continue
            x = x + i
            if bool(x.sum() > 20):
                break
        return x


class ModList(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.act: Optional[nn.Module] = None

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
            if self.act is not None:
                x = self.act(x)
        return x


class DictUse(nn.Module):
    def forward(self, x):
        d: Dict[str, torch.Tensor] = {"a": x, "b": x * 2}
        return d["a"] + d["b"]


class RuntimeArange(nn.Module):
    def forward(self, x):
        n = x.size(0)
        idx = torch.arange(n)
        z = torch.zeros(n, 2)
        return x[idx] + z.sum(), float(n) * 0.5


class NestedLoops(nn.Module):
    def forward(self, x, n: int):
        out: List[torch.Tensor] = []
        for i in range(n):
            row = x * 0
            for j in range(i + 1):
                row = row + x * j
            out.append(row)
        return torch.cat(out, 0)


class TupleLoop(nn.Module):
    def forward(self, x, h):
        outs: List[torch.Tensor] = []
        state = (h, h)
        for t in range(x.size(0)):
            a, b = state
            a = torch.tanh(x[t] + a)
            state = (a, b + a)
            outs.append(a)
        return torch.stack(outs), state[1]


class MathOps(nn.Module):
    def forward(self, x, k: int):
        s = math.sqrt(float(k))
        m = max(k, 3)
        return x * s + m


class SplitSizes(nn.Module):
    def forward(self, x):
        parts = torch.split(x, [1, 2], 1)
        return parts[1] - parts[0].sum()


class StrAttr(nn.Module):
    def __init__(self, mode: str = "sum"):
        super().__init__()
        self.mode = mode

    def forward(self, x):
        if self.mode == "sum":
            return x.sum(0)
        return x.mean(0)


class ShapeInLoop(nn.Module):
    def forward(self, x):
        y = x
        while y.size(0) > 1:
            y = y[: y.size(0) // 2] + y[y.size(0) // 2: 2 * (y.size(0) // 2)]
        return y


class ListOfInts(nn.Module):
    def forward(self, x):
        sizes: List[int] = []
        for d in range(x.dim()):
            sizes.append(x.size(d) * 2)
        return x.new_zeros(sizes) + 1


class IndexPutLoop(nn.Module):
    def forward(self, x, idx):
        out = torch.zeros_like(x)
        for k in range(idx.size(0)):
            out[idx[k]] = x[idx[k]] * 2
        return out


class FullRuntime(nn.Module):
    def forward(self, x, k: float):
        return x + torch.full((2, 3), k), torch.ones(x.size(0), dtype=torch.long) * 2

class TensorFromNumbers(nn.Module):
    def forward(self, x, n: int):
        t = torch.tensor([n, n + 1])
        return x[t], t.float().mean()

class CastChain(nn.Module):
    def forward(self, x):
        m = (x > 0).to(x.dtype)
        i = x.long().sum()
        return m * x, i + 1, (x.int() // 2).float()

class WhereNumbers(nn.Module):
    def forward(self, x, thr: float):
        return torch.where(x > thr, x, torch.zeros_like(x)), torch.clamp(x, min=-thr, max=thr)

class MaskedFillLoop(nn.Module):
    def forward(self, x, lengths):
        out = x.clone()
        for b in range(x.size(0)):
            out[b, lengths[b]:] = 0.0
        return out

class OptionalState(nn.Module):
    def forward(self, x, h: Optional[torch.Tensor] = None):
        if h is None:
            h = torch.zeros(x.size(0), 4)
        return torch.tanh(x[:, :4] + h)

class TopkLoop(nn.Module):
    def forward(self, x, k: int):
        vals: List[torch.Tensor] = []
        idx: List[torch.Tensor] = []
        for r in range(x.size(0)):
            v, i = x[r].topk(k)
            vals.append(v)
            idx.append(i)
        return torch.stack(vals), torch.stack(idx)

class GreedyDecode(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 6)
        self.cell = nn.GRUCell(6, 6)
        self.out = nn.Linear(6, 10)

    def forward(self, h, max_len: int):
        tok = torch.zeros(h.size(0), dtype=torch.long)
        toks: List[torch.Tensor] = []
        for _ in range(max_len):
            h = self.cell(self.emb(tok), h)
            tok = self.out(h).argmax(-1)
            toks.append(tok)
            if bool((tok == 0).all()):
                break
        return torch.stack(toks, 1)

class IntListMath(nn.Module):
    def forward(self, x):
        shape = list(x.shape)
        head = shape[:-1]
        new_shape = head + [2, shape[-1] // 2]
        y = x.reshape(new_shape)
        dims: List[int] = x.shape[1:]
        return y.sum(-1), y.view(dims[0] * x.size(0), -1), torch.tensor(shape)

class ListOps(nn.Module):
    def forward(self, x):
        xs = [x, x * 2, x * 3]
        xs.insert(1, x - 1)
        last = xs.pop()
        xs.reverse()
        first = xs[0]
        return torch.cat(xs, 0), last + first, len(xs)

class DynListOps(nn.Module):
    def forward(self, x, n: int):
        xs: List[torch.Tensor] = []
        for i in range(n):
            xs.append(x * i)
        xs.insert(0, x)
        y = xs.pop(-1)
        return torch.stack(xs, 0).sum(0) + y, xs[1], len(xs)

class InPlaceKeepsDtype(nn.Module):
    def forward(self, x, y):
        z = x * 1
        z.add_(y)  # half += float stays half (the functional add would give float)
        return z.mul_(y), z


class TupleFromRaisingBranch(nn.Module):
    def forward(self, t) -> Tuple[torch.Tensor, torch.Tensor]:
        if float(t.sum()) < 0:
            raise ValueError("negative")
        else:
            return t * 2, t + 1


# name -> (model class, example args, other args)
MODELS = {
    "chunk_getitem": (ChunkGetitem, (torch.randn(2, 4),), [(torch.randn(2, 4),)]),
    "unbind_loop": (UnbindLoop, (torch.randn(3, 4),), [(torch.randn(3, 4),)]),
    "list_comp": (ListComp, (torch.randn(2, 3), 3), [(torch.randn(2, 3), 1)]),
    "break_continue": (BreakContinue, (torch.randn(3),), [(torch.randn(3) + 10,), (torch.randn(3) - 30,)]),
    "mod_list": (ModList, (torch.randn(2, 4),), []),
    "dict_use": (DictUse, (torch.randn(2, 4),), []),
    "runtime_arange": (RuntimeArange, (torch.randn(3, 2),), []),
    "nested_loops": (NestedLoops, (torch.randn(2, 3), 3), [(torch.randn(2, 3), 1)]),
    "tuple_loop": (TupleLoop, (torch.randn(4, 3), torch.randn(3)), []),
    "math_ops": (MathOps, (torch.randn(3), 5), [(torch.randn(3), 1), (torch.randn(3), 3)]),
    "split_sizes": (SplitSizes, (torch.randn(2, 3),), []),
    "str_attr": (StrAttr, (torch.randn(2, 3),), []),
    "shape_in_loop": (ShapeInLoop, (torch.randn(8, 3),), []),
    "list_of_ints": (ListOfInts, (torch.randn(2, 3),), []),
    "index_put_loop": (IndexPutLoop, (torch.randn(5, 2), torch.tensor([0, 3])),
                       [(torch.randn(5, 2), torch.tensor([4, 1]))]),
    "full_runtime": (FullRuntime, (torch.randn(2, 3), 1.5), [(torch.randn(2, 3), -2.0)]),
    "tensor_from_numbers": (TensorFromNumbers, (torch.randn(5, 2), 1), [(torch.randn(5, 2), 3)]),
    "cast_chain": (CastChain, (torch.randn(2, 3) * 5,), []),
    "where_numbers": (WhereNumbers, (torch.randn(2, 3), 0.5), [(torch.randn(2, 3), 1.5)]),
    "masked_fill_loop": (MaskedFillLoop, (torch.randn(3, 5), torch.tensor([1, 4, 2])),
                         [(torch.randn(3, 5), torch.tensor([0, 5, 3]))]),
    "optional_state": (OptionalState, (torch.randn(2, 6),), []),
    "topk_loop": (TopkLoop, (torch.randn(3, 5), 2), [(torch.randn(3, 5), 4)]),
    "greedy_decode": (GreedyDecode, (torch.randn(2, 6), 5), [(torch.randn(2, 6), 8)]),
    "int_list_math": (IntListMath, (torch.randn(2, 3, 4),), []),
    "list_ops": (ListOps, (torch.randn(2, 3),), []),
    "in_place_keeps_dtype": (InPlaceKeepsDtype, (torch.randn(2, 3, dtype=torch.half), torch.randn(2, 3)), []),
    "tuple_from_raising_branch": (TupleFromRaisingBranch, (torch.ones(3),), [(torch.zeros(3),)]),
    "dyn_list_ops": (DynListOps, (torch.randn(2, 3), 3), [(torch.randn(2, 3), 5)]),
}


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("name", sorted(MODELS))
def test_script_idiom(name, opset):
    model_class, args, others = MODELS[name]
    torch.manual_seed(0)
    verify(torch.jit.script(model_class()), args, opset_version=opset, other_inputs=others, rtol=1e-4, atol=1e-5)


class SplitLoop(nn.Module):
    def forward(self, x):
        acc = torch.zeros(x.size(1))
        for piece in x.split(2, 0):
            acc = acc + piece.sum(0)
        return acc, len(x.chunk(3, 0)), x.unbind(0)


@pytest.mark.parametrize("opset", OPSETS)
def test_split_of_a_dynamic_dim(opset):
    """split/chunk/unbind along a dim that is dynamic in the export: a runtime number of pieces, so
    an ONNX sequence (looped over, counted and returned), checked at other batch sizes."""
    verify(torch.jit.script(SplitLoop()), (torch.randn(5, 3),), opset_version=opset, input_names=["x"],
           dynamic_axes={"x": [0]}, other_inputs=[(torch.randn(9, 3),), (torch.randn(1, 3),)])


# -- lists whose length is known only at runtime, edited after or inside the loop that fills them
# (ONNX sequences; a Loop carries them from opset 13)


class ExtendThenPop(nn.Module):
    def forward(self, x, w):
        rows: List[torch.Tensor] = []
        for i in range(x.size(0)):
            rows += [x[i] @ w]
        rows.pop()
        del rows[1]
        return rows


class SetItemThenUnpack(nn.Module):
    def forward(self, x, k: int):
        rows: List[torch.Tensor] = []
        for i in range(x.size(0)):
            rows.append(x[i])
        rows[-1] = rows[-1] * 10.0
        rows[k] = x[k] - 3.0
        first, second, third = rows
        return first + third, second


class EditInNestedLoops(nn.Module):
    def forward(self, x):
        kept: List[torch.Tensor] = []
        for i in range(x.size(0)):
            for j in range(x.size(1)):
                kept += [x[i, j] * float(j)]
                if j % 2 == 0:
                    kept.pop()
                else:
                    del kept[i]
            kept += [x[i, 0]]
        return torch.stack(kept), len(kept)


class StackRepeated(nn.Module):
    def forward(self, x, n: int):
        copies: List[torch.Tensor] = []
        for _ in range(n):
            copies += [x]
        return torch.stack(copies).transpose(0, 1)


# name -> (model class, example args, other args); min opset 13
RUNTIME_LISTS = {
    "extend_then_pop": (ExtendThenPop, (torch.randn(5, 2, 3), torch.randn(3, 4)),
                        [(torch.randn(8, 2, 3), torch.randn(3, 4))]),
    "set_item_then_unpack": (SetItemThenUnpack, (torch.randn(3, 4), 1), [(torch.randn(3, 4), 0)]),
    "edit_in_nested_loops": (EditInNestedLoops, (torch.randn(3, 4, 2),), [(torch.randn(2, 5, 2),)]),
    "stack_repeated": (StackRepeated, (torch.ones(3, 4, dtype=torch.int32), 3),
                       [(torch.ones(3, 4, dtype=torch.int32), 1)]),
}


@pytest.mark.parametrize("opset", (13, 17, 26))
@pytest.mark.parametrize("name", sorted(RUNTIME_LISTS))
def test_runtime_length_list(name, opset):
    model_class, args, others = RUNTIME_LISTS[name]
    torch.manual_seed(0)
    dynamic = {"x": list(range(args[0].dim()))}
    names = ["x", *[f"in{k}" for k in range(1, len(args))]]
    verify(torch.jit.script(model_class()), args, opset_version=opset, other_inputs=others, input_names=names,
           dynamic_axes=dynamic, rtol=1e-4, atol=1e-5)


class IndexByCounter(nn.Module):
    def forward(self, x, k: int):
        sizes = [x.size(0), x.size(1), 7]
        rows = [x[0], x[1] * 2, x[2] - 1]
        acc = x[0] * 0
        for i in range(k):
            acc = acc + rows[i - 1] * sizes[i]
        return acc


class BatchStatsNorm(nn.Module):
    """batch_norm without running stats scripted: torch's batch-size check indexes the size list
    by a loop counter."""

    def __init__(self):
        super().__init__()
        self.norm = nn.BatchNorm2d(3, track_running_stats=False)

    def forward(self, x):
        return self.norm(x)


class ScaledInterpolate(nn.Module):
    """interpolate by a scale factor scripted: torch builds the output size in a loop (a list of
    numbers filled in a loop, a scan output below opset 11)."""

    def forward(self, x):
        return F.interpolate(x, mode="nearest", scale_factor=2.0)


# lists where ONNX has no sequences (opset < 11): known-length lists indexed at runtime (stacked and
# gathered), number lists filled in a loop (stacked by the loop)
WITHOUT_SEQUENCES = {
    "scaled_interpolate": (ScaledInterpolate, (torch.randn(1, 2, 3, 2, 4),), []),
    "index_by_counter": (IndexByCounter, (torch.randn(3, 4), 3), [(torch.randn(3, 4), 1), (torch.randn(3, 4), 0)]),
    "batch_stats_norm": (BatchStatsNorm, (torch.randn(2, 3, 4, 4),), [(torch.randn(2, 3, 4, 4) * 3,)]),
}


@pytest.mark.parametrize("opset", (9, 10, 13))
@pytest.mark.parametrize("name", sorted(WITHOUT_SEQUENCES))
def test_lists_without_sequences(name, opset):
    model_class, args, others = WITHOUT_SEQUENCES[name]
    torch.manual_seed(0)
    verify(torch.jit.script(model_class()), args, opset_version=opset, other_inputs=others, rtol=1e-4, atol=1e-5)
