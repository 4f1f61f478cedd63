"""Control flow of scripted models: prim::If -> ONNX If, prim::Loop -> ONNX Loop.

A condition known at export time folds to the taken branch. Loop bodies get ONNX's
(iteration, condition, carried...) inputs; carried values keep their dtype and rank while their
dims are left open, since a body may change them from one iteration to the next.
"""

from __future__ import annotations

import torch

from torchscript_onnx.ir import Value

from .. import onnx_ops
from .. import symbolic_helper as sh
from ..registry import onnx_symbolic

_onnx_symbolic = onnx_symbolic(9)

INT64_MAX = 9223372036854775807


def _merged_shape(a, b):
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(x if x == y else None for x, y in zip(a, b))


def _as_bool(g, condition: Value) -> Value:
    return onnx_ops.cast(g, condition, torch.bool) if condition.dtype not in (None, torch.bool) else condition


@_onnx_symbolic("prim::If")
def prim_if(g, condition):
    """prim::If(bool cond) -> (outputs of the taken block)"""
    then_block, else_block = list(g.original_node.blocks())
    known = sh.const(condition)
    if known is not sh.UNKNOWN:
        flag = bool(known.item() if isinstance(known, torch.Tensor) else known)
        return tuple(g.inline_block(then_block if flag else else_block)) or None
    n_outputs = g.original_node.outputsSize()
    if n_outputs == 0:
        return None  # both branches only have side effects (prints, warnings), which ONNX drops
    then_graph, then_outputs = g.convert_block(then_block, [])
    else_graph, else_outputs = g.convert_block(else_block, [])
    outputs = g.op("If", _as_bool(g, condition), then_branch_g=then_graph, else_branch_g=else_graph,
                   outputs=n_outputs)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    for out, a, b in zip(outputs, then_outputs, else_outputs):
        if a.dtype != b.dtype and a.dtype is not None and b.dtype is not None:
            sh.value_error(f"prim::If: the branches return different dtypes ({a.dtype} and {b.dtype})")
        out.dtype = a.dtype or b.dtype
        out.shape = _merged_shape(a.shape, b.shape)
    return outputs


def _open_dims(value: Value) -> tuple | None:
    return None if value.shape is None else (None,) * len(value.shape)


@_onnx_symbolic("prim::Loop")
def prim_loop(g, max_trip_count, condition, *carried):
    """prim::Loop(int max_trip_count, bool cond, *carried) -> (*carried)"""
    body = next(iter(g.original_node.blocks()))
    if not carried:
        return None  # a loop that carries nothing only has side effects, which ONNX drops
    trips = sh.const(max_trip_count)
    if trips is not sh.UNKNOWN and int(trips) >= INT64_MAX:
        trip_input = None  # a while loop: only the condition stops it
    elif trips is not sh.UNKNOWN:
        trip_input = g.constant(int(trips), torch.int64)
    else:
        trip_input = onnx_ops.cast(g, max_trip_count, torch.int64)
    carried = [g.materialize(v) if not v.in_graph else v for v in carried]
    body_inputs = [Value("", torch.int64, ())] + [Value("", v.dtype, _open_dims(v)) for v in carried]
    body_graph, body_outputs = g.convert_block(body, body_inputs)
    # ONNX bodies take (iteration, condition, carried...); the JIT block has no condition input.
    body_graph.add_input(f"{g.scope}/cond", torch.bool, ())
    body_graph.inputs.insert(1, body_graph.inputs.pop())
    if body_outputs[0].dtype not in (None, torch.bool):
        sh.value_error("prim::Loop: the loop condition must be a bool", body_outputs[0])
    for body_output, value in zip(body_outputs[1:], carried):
        if body_output.dtype != value.dtype and None not in (body_output.dtype, value.dtype):
            sh.value_error(f"prim::Loop: a carried value changes dtype ({value.dtype} -> {body_output.dtype})")
        body_output.shape = _open_dims(body_output) if body_output.shape is not None else None
    outputs = g.op("Loop", trip_input, _as_bool(g, condition), *carried, body_g=body_graph, outputs=len(carried))
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    for out, value in zip(outputs, carried):
        out.dtype, out.shape = value.dtype, _open_dims(value)
    return outputs


@_onnx_symbolic("aten::Bool")
def aten_bool(g, value):
    """aten::Bool.Tensor(Tensor a) -> bool"""
    known = sh.const(value)
    if known is not sh.UNKNOWN:
        return Value("", const=bool(known.item() if isinstance(known, torch.Tensor) else known))
    return onnx_ops.cast(g, value, torch.bool)


@_onnx_symbolic("aten::__not__")
def not_(g, value):
    """aten::__not__(bool self) -> bool"""
    known = sh.const(value)
    if known is not sh.UNKNOWN:
        return Value("", const=not known)
    return g.op("Not", _as_bool(g, value))


@_onnx_symbolic("prim::RaiseException")
def prim_raise_exception(g, *args, **kwargs):
    """prim::RaiseException(str msg, str? cls=None) -> (): ONNX has no exceptions; dropped."""
    return None


@_onnx_symbolic("aten::warn")
def warn(g, *args, **kwargs):
    """aten::warn(str message, int stacklevel=2) -> (): side effect only; dropped."""
    return None


@_onnx_symbolic("prim::Print")
def prim_print(g, *args, **kwargs):
    """prim::Print(...) -> (): side effect only; dropped."""
    return None
