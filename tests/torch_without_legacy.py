"""Today's torch made to look like one whose TorchScript-based ONNX exporter is gone, for a while.

torch deprecated ``torch.onnx.export(..., dynamo=False)`` in 2.9 and will remove it. This removes
what that removal takes away (the same list as ``../shared/peer/legacy_removed.py``, the project's
reference for it) and puts everything back afterwards, so tests can run on both torches in one
process:

- the legacy modules leave ``sys.modules`` and cannot be imported: ``torch.onnx.utils``,
  ``torch.onnx.symbolic_helper``, ``torch.onnx.symbolic_opset7`` ... ``symbolic_opset20`` and
  ``torch.onnx._internal.torchscript_exporter`` with everything under it;
- their names leave ``torch.onnx``, with ``register_custom_op_symbolic``,
  ``unregister_custom_op_symbolic``, ``select_model_mode_for_export``, ``JitScalarType``,
  ``OperatorExportTypes``, ``TrainingMode`` and ``TensorProtoDataType``;
- ``torch.onnx.export(..., dynamo=False)`` (or with options passed positionally) raises, as a torch
  without the legacy exporter does; ``dynamo=True`` still exports.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.abc
import sys
from collections.abc import Iterator

import torch
import torch.onnx
import torch.onnx._internal

REMOVED_MODULES = (
    # torch.onnx/__init__.py imported again under this name (the tracer does, for each autograd
    # Function) imports the legacy modules, so on such a torch it fails as they do
    "torch.onnx.__init__",
    "torch.onnx._internal.torchscript_exporter",
    "torch.onnx.utils",
    "torch.onnx.symbolic_helper",
    *(f"torch.onnx.symbolic_opset{n}" for n in range(7, 21)),
)
REMOVED_NAMES = (
    "utils", "symbolic_helper", *(f"symbolic_opset{n}" for n in range(7, 21)),
    "register_custom_op_symbolic", "unregister_custom_op_symbolic", "select_model_mode_for_export",
    "JitScalarType", "OperatorExportTypes", "TrainingMode", "TensorProtoDataType",
)
MESSAGE = "the TorchScript-based ONNX exporter is not part of this torch (removed for this test)"


def _removed(name: str) -> bool:
    return any(name == gone or name.startswith(gone + ".") for gone in REMOVED_MODULES)


class _RefuseRemoved(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if _removed(name):
            raise ModuleNotFoundError(f"No module named {name!r}: {MESSAGE}", name=name)
        return None


def is_removed() -> bool:
    return any(isinstance(finder, _RefuseRemoved) for finder in sys.meta_path)


@contextlib.contextmanager
def legacy_exporter_removed() -> Iterator[None]:
    """Inside the block, torch has no TorchScript-based exporter; after it, torch is as before."""
    modules = {name: module for name, module in sys.modules.items() if _removed(name)}
    onnx_names = {name: vars(torch.onnx)[name] for name in REMOVED_NAMES if name in vars(torch.onnx)}
    internal_names = {name: vars(torch.onnx._internal)[name] for name in ("torchscript_exporter",)
                      if name in vars(torch.onnx._internal)}
    dynamo_export = torch.onnx.export
    finder = _RefuseRemoved()

    @functools.wraps(dynamo_export)
    def export(model, args=(), f=None, *positional, dynamo: bool = True, **options):
        if positional or not dynamo:
            raise RuntimeError(f"torch.onnx.export(..., dynamo=False): {MESSAGE}")
        return dynamo_export(model, args, f, dynamo=True, **options)

    for name in modules:
        del sys.modules[name]
    for name in onnx_names:
        del vars(torch.onnx)[name]
    for name in internal_names:
        del vars(torch.onnx._internal)[name]
    torch.onnx.export = export
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        for name in [n for n in sys.modules if _removed(n)]:
            del sys.modules[name]  # what the block put under the removed names (a replacement's modules)
        sys.modules.update(modules)
        for name in [n for n in REMOVED_NAMES if n in vars(torch.onnx)]:
            del vars(torch.onnx)[name]
        vars(torch.onnx).update(onnx_names)
        vars(torch.onnx._internal).update(internal_names)
        torch.onnx.export = dynamo_export
