"""Lists whose length is known only at runtime (built in a loop or a branch) as ONNX sequences.

A list carried through a Loop or returned by an If becomes a sequence (``Value.sequence``; its
dtype and shape describe the elements). Ops on such lists are registered under ``sequence::``:
the converter dispatches an aten op to ``sequence::<op>`` when one of its inputs is a sequence.
Lists of known length stay element-wise (``control.py``)."""

from __future__ import annotations

import torch

from torchscript_onnx.builder import onnx_ops
from torchscript_onnx.builder.ir import Value

from .. import symbolic_helper as sh
from ..registry import symbolic
from . import control

__all__: list[str] = []  # registered, not re-exported


def _seq(value: Value, like: Value | None = None) -> Value:
    value.sequence = True
    if like is not None:
        value.dtype, value.shape = like.dtype, like.shape
    return value


def _element(g, seq: Value, element: Value) -> Value:
    control.set_sequence_dtype(seq, element.dtype if not element.is_const or isinstance(element.const, torch.Tensor)
                               else control.number_dtype(g.original_node.inputsAt(1).type()))
    return control._typed_number(g, element, seq.dtype)


def _element_shape(seq: Value, element: Value) -> tuple | None:
    """Elements keep their rank; dims are left open (elements may differ in size)."""
    if element.shape is None or (seq.shape is not None and len(seq.shape) != len(element.shape)):
        return None
    return (None,) * len(element.shape)


def _position(g, index: Value) -> Value:
    return control._typed_number(g, index, torch.int64)


@symbolic("sequence::append", since=11)
def append(g, values, element):
    """append.t(t[](a!) self, t(c -> *) el) -> t[](a!)"""
    element = _element(g, values, element)
    new = _seq(g.op("SequenceInsert", values, element), values)
    new.shape = _element_shape(values, element)
    return new, new


@symbolic("sequence::add", since=11)
def add(g, self, other, alpha=None):
    """add.t(t[] a, t[] b) -> t[] (and add_.t, ``l += [x]``): concatenation"""
    if self.sequence and other.sequence:
        sh.value_error("list + list with both lengths known only at runtime is not supported; "
                       "append the elements of one list to the other in a loop", other)
    if self.sequence:
        new = self
        for item in control._items(other):
            new = append(g, new, item)[0]
        return new
    new = other
    for k, item in enumerate(control._items(self)):  # [a, b] + l: inserted in front, in order
        new = insert(g, new, Value("", const=k), item)[0]
    return new


@symbolic("sequence::insert", since=11)
def insert(g, values, index, element):
    """insert.t(t[](a!) self, int idx, t(b -> *) el) -> ()"""
    element = _element(g, values, element)
    new = _seq(g.op("SequenceInsert", values, element, _position(g, index)), values)
    new.shape = _element_shape(values, element)
    return (new,)


@symbolic("sequence::pop", since=11)
def pop(g, values, index=None):
    """pop.t(t[](a!) self, int idx=-1) -> t(*)"""
    position = _position(g, index if index is not None else Value("", const=-1))
    element = g.op("SequenceAt", values, position)
    element.dtype, element.shape = values.dtype, values.shape
    return _seq(g.op("SequenceErase", values, position), values), element


def _wrapped_position(g, values: Value, index: Value) -> Value:
    """``index`` counted from the front: SequenceInsert reads -1 as "before the last", not "the last"."""
    known = sh.const(index)
    if known is not sh.UNKNOWN and int(known) >= 0:
        return _position(g, index)
    length = g.op("SequenceLength", values)
    length.dtype, length.shape = torch.int64, ()
    return g.op("Mod", _position(g, index), length, fmod_i=0)


@symbolic("sequence::_set_item", since=11)
def set_item(g, values, index, element):
    """_set_item.t(t[](a!) l, int idx, t(b -> *) el) -> t[](a!)"""
    element = _element(g, values, element)
    position = _wrapped_position(g, values, index)
    erased = _seq(g.op("SequenceErase", values, position), values)
    new = _seq(g.op("SequenceInsert", erased, element, position), values)
    new.shape = _element_shape(values, element)
    return new, new


@symbolic("sequence::Delete", since=11)
def delete(g, values, index):
    """Delete.t(t[](a!) self, int idx) -> (): ``del l[i]``"""
    return (_seq(g.op("SequenceErase", values, _position(g, index)), values),)


@symbolic("sequence::ListUnpack", since=11)
def list_unpack(g, values):
    """prim::ListUnpack(t[] list) -> the elements (as many as the node has outputs)"""
    return tuple(getitem(g, values, Value("", const=k)) for k in range(g.original_node.outputsSize()))


@symbolic("sequence::__getitem__", since=11)
def getitem(g, values, index):
    """__getitem__.t(t[](a) list, int idx) -> t(*)"""
    element = g.op("SequenceAt", values, _position(g, index))
    element.dtype, element.shape = values.dtype, values.shape
    return element


@symbolic("sequence::len", since=11)
def len_(g, values):
    """len.t(t[] a) -> int"""
    out = g.op("SequenceLength", values)
    out.dtype, out.shape = torch.int64, ()
    return out


@symbolic("sequence::list", since=11)
def list_(g, values):
    """list.t(t[] l) -> t[]"""
    return values


@symbolic("sequence::cat", since=11)
def cat(g, tensors, dim=None):
    """cat(Tensor[] tensors, int dim=0) -> Tensor"""
    axis = sh.const(dim) if dim is not None else 0
    out = g.op("ConcatFromSequence", tensors, axis_i=int(axis))
    out.dtype, out.shape = tensors.dtype, None if tensors.shape is None else (None,) * len(tensors.shape)
    return out


@symbolic("sequence::stack", since=11)
def stack(g, tensors, dim=None):
    """stack(Tensor[] tensors, int dim=0) -> Tensor"""
    axis = sh.const(dim) if dim is not None else 0
    out = g.op("ConcatFromSequence", tensors, axis_i=int(axis), new_axis_i=1)
    out.dtype = tensors.dtype
    out.shape = None if tensors.shape is None else (None,) * (len(tensors.shape) + 1)
    return out


@symbolic("sequence::split", since=11)
def split(g, self, split_sizes, dim=None):
    """split.sizes(Tensor(a -> *) self, SymInt[] split_size, int dim=0) -> Tensor(a)[]: sizes whose
    count is known only at runtime (a scripted ``List[int]`` input) cut a sequence of pieces"""
    axis = int(sh.const(dim)) if dim is not None else 0
    rank = self.rank
    if rank is not None and axis < 0:
        axis += rank
    sizes = g.op("ConcatFromSequence", split_sizes, axis_i=0, new_axis_i=1)
    out = _seq(g.op("SplitToSequence", self, onnx_ops.cast(g, sizes, torch.int64), axis_i=axis), self)
    if self.shape is not None:
        out.shape = tuple(None if k == axis else d for k, d in enumerate(self.shape))
    return out


@symbolic("aten::__getitem__", since=11)
def getitem_list(g, values, index):
    """__getitem__.t(t[](a) list, int idx) -> t(*): a runtime index goes through a sequence"""
    if sh.const(index) is not sh.UNKNOWN or control.number_vector(values):
        return control.getitem(g, values, index)
    return getitem(g, control.to_sequence(g, values, g.original_node.inputsAt(0).type()), index)
