"""The op case table: each Case runs against eager PyTorch through onnxruntime.

A case runs at the opsets where its lowering changes (``opsets``), plus the lowest opset it
supports (``min_opset``) and 26, under tracing. ``xfail`` marks known gaps with a required reason,
so an unexpected pass forces a cleanup. ``other_inputs`` rerun a dynamic export at other sizes.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable, Sequence

import pytest
import torch

from torchscript_onnx import MAX_OPSET, MIN_OPSET, UnsupportedOperatorError, export
from torchscript_onnx.verify import verify


class Fn(torch.nn.Module):
    """Wrap a function as a module so every case exports the same way."""

    def __init__(self, fn: Callable):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


@dataclasses.dataclass
class Case:
    name: str
    model: Callable  # a function of the inputs, or an nn.Module
    inputs: Callable[[], tuple]  # fresh example inputs (a function, so tables stay cheap to build)
    min_opset: int = MIN_OPSET
    opsets: Sequence[int] = ()  # where the lowering changes
    rtol: float = 1e-4
    atol: float = 1e-5
    export_options: dict = dataclasses.field(default_factory=dict)
    other_inputs: Callable[[], list[tuple]] | None = None
    xfails: dict = dataclasses.field(default_factory=dict)  # opset -> reason
    check_values: bool = True  # False for random ops: shape and dtype only

    def xfail(self, opsets, reason: str) -> "Case":
        if not reason:
            raise ValueError("xfail needs a reason")
        for opset in opsets:
            self.xfails[opset] = reason
        return self

    def module(self) -> torch.nn.Module:
        model = self.model if isinstance(self.model, torch.nn.Module) else Fn(self.model)
        return model.eval()

    def test_opsets(self) -> list[int]:
        return sorted({self.min_opset, MAX_OPSET, *[o for o in self.opsets if o >= self.min_opset]})


def params(cases: Sequence[Case]) -> list:
    """pytest parameters (case, opset), with xfail marks where the case says so."""
    out = []
    for case in cases:
        for opset in case.test_opsets():
            marks = [pytest.mark.xfail(reason=case.xfails[opset], strict=True)] if opset in case.xfails else []
            out.append(pytest.param(case, opset, id=f"{case.name}-opset{opset}", marks=marks))
    return out


def below_min_params(cases: Sequence[Case]) -> list:
    """(case, opset) one below each case's lowest opset, for the 'clear error' check."""
    return [pytest.param(case, case.min_opset - 1, id=f"{case.name}-opset{case.min_opset - 1}")
            for case in cases if case.min_opset > MIN_OPSET]


def scripted(case: Case):
    """The case's model through torch.jit.script (a module as is, a function as a ScriptFunction).

    Lambdas and builtins (``torch.abs``) have no source TorchScript can read: they are rewritten
    as a ``def`` from the lambda's source text (or a call of the builtin) and compiled."""
    model = case.model
    if isinstance(model, torch.nn.Module):
        return torch.jit.script(model.eval())
    if getattr(model, "__name__", "") != "<lambda>" and not isinstance(model, types.BuiltinFunctionType):
        return torch.jit.script(model)
    n_args = len(case.inputs())
    if isinstance(model, types.BuiltinFunctionType):
        args = ", ".join(f"x{k}" for k in range(n_args))
        source = f"def fn({args}):\n    return torch.{model.__name__}({args})\n"
    else:
        source = _lambda_as_def(model)
    return torch.jit.CompilationUnit(source).fn


def _lambda_as_def(fn) -> str:
    """``lambda x, y: expr`` -> ``def fn(x, y): return expr`` (``F.`` spelled out)."""
    import ast
    import inspect

    lines, first = inspect.findsource(fn)
    tree = ast.parse("".join(lines))
    line = fn.__code__.co_firstlineno
    names = fn.__code__.co_varnames[: fn.__code__.co_argcount]
    found = [node for node in ast.walk(tree) if isinstance(node, ast.Lambda) and node.lineno == line
             and tuple(a.arg for a in node.args.args) == names
             and set(fn.__code__.co_names) <= {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
             | {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}]
    if len(found) != 1:
        raise RuntimeError(f"cannot find the source of the lambda at line {line}")
    body = ast.unparse(found[0].body).replace("F.", "torch.nn.functional.")
    return f"def fn({', '.join(names)}):\n    return {body}\n"


def run_case(case: Case, opset: int, script: bool = False) -> None:
    """``script=True`` exports the torch.jit.script'ed model instead of tracing it."""
    torch.manual_seed(0)
    inputs = case.inputs()
    others = case.other_inputs() if case.other_inputs else []
    model = scripted(case) if script else case.module()
    if case.check_values:
        verify(model, inputs, opset_version=opset, rtol=case.rtol, atol=case.atol, other_inputs=others,
               **case.export_options)
        return
    check_shapes_and_dtypes(model, inputs, opset, case.export_options)


def check_shapes_and_dtypes(model, inputs: tuple, opset: int, options: dict) -> None:
    import io

    from torchscript_onnx.verify import check, flatten_inputs, flatten_outputs, run_onnxruntime

    buffer = io.BytesIO()
    export(model, inputs, buffer, opset_version=opset, **options)
    check(buffer.getvalue())
    with torch.no_grad():
        expected = flatten_outputs(model(*inputs))
    actual = run_onnxruntime(buffer.getvalue(), flatten_inputs(inputs))
    assert [tuple(t.shape) for t in expected] == [a.shape for a in actual]
    assert [t.numpy().dtype for t in expected] == [a.dtype for a in actual]


def run_below_min(case: Case, opset: int) -> None:
    """Below its lowest opset a case fails with a clear error naming that opset."""
    import io

    with pytest.raises(Exception) as info:
        export(case.module(), case.inputs(), io.BytesIO(), opset_version=opset, **case.export_options)
    assert isinstance(info.value, (UnsupportedOperatorError,)) or "opset" in str(info.value)
    assert str(case.min_opset) in str(info.value)


# ---------------------------------------------------------------------------------------------
# Typed samples, for tables that run one op over several dtypes


def sample(dtype: torch.dtype, kind: str = "any", shape: tuple = (3, 4)) -> torch.Tensor:
    """A random tensor of ``dtype``: kind "any" (signed), "pos" (> 0), "nonzero" or "unit" (|x| < 0.9)."""
    if dtype == torch.bool:
        return torch.rand(shape) > 0.5
    if dtype.is_floating_point:
        magnitude = torch.rand(shape) * 3 + 0.1
        sign = torch.where(torch.rand(shape) > 0.5, 1.0, -1.0)
        values = {"any": torch.randn(shape) * 2, "pos": magnitude, "nonzero": magnitude * sign,
                  "unit": torch.rand(shape) * 1.8 - 0.9}[kind]
        return values.to(dtype)
    low = 0 if dtype == torch.uint8 else -6
    magnitude = torch.randint(1, 7, shape)
    sign = torch.where(torch.rand(shape) > 0.5, 1, -1) if low < 0 else 1
    values = {"any": torch.randint(low, 7, shape), "pos": magnitude, "nonzero": magnitude * sign,
              "unit": torch.randint(0, 2, shape)}[kind]
    return values.to(dtype)


def per_dtype(name: str, model: Callable, dtypes: Sequence[torch.dtype], kinds: Sequence[str] = ("any",),
              **case_options) -> list[Case]:
    """One case per dtype, named ``name-dtype``; the inputs are ``sample(dtype, kind)`` per kind."""
    cases = []
    for dtype in dtypes:
        def inputs(dtype=dtype):
            return tuple(sample(dtype, kind) for kind in kinds)

        cases.append(Case(f"{name}-{str(dtype).replace('torch.', '')}", model, inputs, **case_options))
    return cases


def exported_op_types(case: Case, opset: int) -> list[str]:
    """The ONNX op types of ``case`` exported at ``opset`` (for structural expectations)."""
    import io

    import onnx

    buffer = io.BytesIO()
    export(case.module(), case.inputs(), buffer, opset_version=opset, **case.export_options)
    return [node.op_type for node in onnx.load_from_string(buffer.getvalue()).graph.node]
