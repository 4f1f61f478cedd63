"""torch's legacy exporter, for tests that compare with it: its ``symbolic_helper`` (None on a torch
without it) and its export. Never used to produce or check our result, only to compare."""

from __future__ import annotations

import importlib
import warnings

import torch


def _symbolic_helper():
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return importlib.import_module("torch.onnx._internal.torchscript_exporter.symbolic_helper")
    except ImportError:
        return None


SYMBOLIC_HELPER = _symbolic_helper()


def export(model, args, f, **options) -> None:
    """``torch.onnx.export(..., dynamo=False)``, its deprecation warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, f, dynamo=False, **options)


class Calls(torch.nn.Module):
    """A module whose forward is ``fn``: the op a test converts, traced."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *inputs):
        return self.fn(*inputs)
