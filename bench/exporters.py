"""The three exporters under one signature: ``fn(model, args, path, opset)`` writes ``path``.

Each call runs with stdout/stderr sent to /dev/null at the file-descriptor level (the dynamo
exporter prints progress and logs through handlers that Python-level redirection misses); the same
wrapper is used for all three so they pay the same overhead.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import warnings


@contextlib.contextmanager
def silenced():
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, devnull):
            os.close(fd)


def export_ours(model, args, path, opset):
    import torchscript_onnx

    torchscript_onnx.export(model, args, path, opset_version=opset)


def export_legacy(model, args, path, opset):
    import torch

    torch.onnx.export(model, args, path, opset_version=opset, dynamo=False)


def export_dynamo(model, args, path, opset):
    import torch

    torch.onnx.export(model, args, path, opset_version=opset, dynamo=True)


EXPORTERS = {"ours": export_ours, "legacy": export_legacy, "dynamo": export_dynamo}


def dynamo_missing() -> str | None:
    """Why the dynamo exporter cannot run here, or None when it can."""
    if importlib.util.find_spec("onnxscript") is None:
        return "onnxscript is not installed (pip install onnxscript)"
    return None


def run(name, model, args, path, opset):
    with silenced():
        EXPORTERS[name](model, args, path, opset)


def short_error(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(exc).__name__}: {first}"[:300]
