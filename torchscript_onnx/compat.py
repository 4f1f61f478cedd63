"""The torch._C.Value / Node / Type surface that legacy custom symbolics call.

``ir.Value`` inherits it (``LegacyValueSurface``), so a symbolic written for the legacy exporter can
ask ``x.type().sizes()``, ``x.type().scalarType()``, ``x.node().kind()``, ``x.node()["value"]`` or
call ``y.setType(...)``. This module imports nothing of the builder: the builder imports it.
"""

from __future__ import annotations

import torch

from . import dtypes


class TypeView:
    """What ``value.type()`` returns: a read-only tensor type."""

    def __init__(self, dtype, shape):
        self._dtype = dtype
        self._shape = shape

    def scalarType(self):  # noqa: N802 - legacy name
        return dtypes.TORCH_TO_SCALAR_NAME.get(self._dtype) if self._dtype is not None else None

    def dtype(self):
        return self._dtype

    def dim(self):
        return None if self._shape is None else len(self._shape)

    def sizes(self):
        if self._shape is None or any(not isinstance(d, int) for d in self._shape):
            raise RuntimeError("the value's sizes are not all known at export time; use varyingSizes()")
        return list(self._shape)

    def varyingSizes(self):  # noqa: N802
        return None if self._shape is None else [d if isinstance(d, int) else None for d in self._shape]

    def symbolic_sizes(self):
        return None if self._shape is None else list(self._shape)

    def isCompleteTensor(self):  # noqa: N802
        return self._dtype is not None and self._shape is not None and all(isinstance(d, int) for d in self._shape)

    def with_sizes(self, sizes):
        return TypeView(self._dtype, None if sizes is None else tuple(sizes))

    def with_dtype(self, dtype):
        return TypeView(dtype, self._shape)

    def kind(self):
        return "TensorType"

    def __repr__(self):
        return f"{self.scalarType()}({self._shape})"


class NodeView:
    """What ``value.node()`` returns: the kind and attributes of the value's producer."""

    def __init__(self, value):  # an ir.Value
        self._value = value

    def kind(self) -> str:
        v = self._value
        if v.producer is not None:
            op = v.producer
            return f"{op.domain or 'onnx'}::{op.op_type}"
        if v.elements is not None:
            return "prim::ListConstruct"
        if v.is_none:
            return "prim::Constant"
        if v.is_const and not v.is_param:
            return "onnx::Constant"
        return "prim::Param"

    def mustBeNone(self) -> bool:  # noqa: N802
        return self._value.is_none

    def __getitem__(self, name: str):
        v = self._value
        if name == "value" and v.is_const:
            return v.const if isinstance(v.const, torch.Tensor) else torch.tensor(v.const)
        if v.producer is not None and name in v.producer.attrs:
            return v.producer.attrs[name][1]
        raise KeyError(f"the value's node has no attribute {name!r}")

    t = i = f = s = ival = __getitem__

    def inputs(self):
        v = self._value
        if v.elements is not None:
            return list(v.elements)
        return [] if v.producer is None else [x for x in v.producer.inputs if x is not None]

    def outputs(self):
        return [self._value] if self._value.producer is None else list(self._value.producer.outputs)

    def output(self):
        return self.outputs()[0]

    def hasAttribute(self, name: str) -> bool:  # noqa: N802
        v = self._value
        return (name == "value" and v.is_const) or (v.producer is not None and name in v.producer.attrs)

    def attributeNames(self):  # noqa: N802
        return list(self._value.producer.attrs) if self._value.producer is not None else []


class LegacyValueSurface:
    """The methods of ``torch._C.Value`` that legacy custom symbolics call on their arguments."""

    __slots__ = ()

    def type(self) -> TypeView:
        return TypeView(self.dtype, self.shape)

    def setType(self, jit_type):  # noqa: N802 - legacy name
        """Accept our TypeView or a torch._C.TensorType (as custom symbolics pass)."""
        if isinstance(jit_type, TypeView):
            self.dtype, self.shape = jit_type._dtype, jit_type._shape
            return self
        scalar = jit_type.scalarType() if hasattr(jit_type, "scalarType") else None
        if scalar is not None:
            self.dtype = dtypes.SCALAR_NAME_TO_TORCH.get(scalar, self.dtype)
        sizes = jit_type.varyingSizes() if hasattr(jit_type, "varyingSizes") else None
        if sizes is not None:
            self.shape = tuple(sizes)
        return self

    def node(self) -> NodeView:
        return NodeView(self)

    def debugName(self) -> str:  # noqa: N802
        return self.name

    def unique(self) -> int:
        return id(self)

    def isCompleteTensor(self) -> bool:  # noqa: N802
        return self.type().isCompleteTensor()
