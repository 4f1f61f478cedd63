"""Calls of ``torch.autograd.Function`` subclasses (``prim::PythonOp`` in a trace).

Capture inlines the ops a Function's forward ran (``autograd_inlining=True``, the default),
except for Functions with a ``symbolic`` staticmethod: as in the legacy exporter, that method
converts the call, in both modes."""

from __future__ import annotations

from torchscript_onnx.builder.errors import FunctionWithoutSymbolicError

from ..registry import symbolic


def function_class(node):
    """The ``torch.autograd.Function`` subclass a ``prim::PythonOp`` node calls, or None."""
    try:
        apply = node.pyobj()
    except RuntimeError:
        return None
    owner = getattr(apply, "__self__", None)
    return owner if isinstance(owner, type) else None


@symbolic("prim::PythonOp")
def python_op(g, *inputs, **attrs):
    """prim::PythonOp(...) -> ...: a torch.autograd.Function call, converted by its ``symbolic``."""
    node = g.original_node
    cls = function_class(node)
    symbolic = getattr(cls, "symbolic", None)
    name = cls.__name__ if cls is not None else node.pyname()
    if symbolic is None:
        raise FunctionWithoutSymbolicError(name, g.opset)
    # cconv lists the call's arguments in order: "d" a tensor input, "c" a Python scalar argument.
    tensors, scalars = iter(inputs), iter(node.scalar_args())
    args = [next(tensors) if kind == "d" else next(scalars) for kind in node.cconv()]
    return symbolic(g, *args)


def custom_python_op(fn):
    """A user's ``prim::PythonOp`` symbolic as legacy calls it: only for Functions without their own
    ``symbolic``, with the tensor inputs and the node's attributes by plain name (``name`` the
    Function's class name, ``module``, ``inplace``)."""

    def convert(g, *inputs, **attrs):
        node = g.original_node
        cls = function_class(node)
        if getattr(cls, "symbolic", None) is not None:
            return python_op(g, *inputs)
        plain = {"inplace": node.i("inplace"), "module": node.s("module"), "name": node.pyname()}
        return fn(g, *inputs, **plain)

    convert.__wrapped__ = fn
    return convert
