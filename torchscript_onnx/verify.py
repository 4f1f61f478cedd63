"""Verify an export: onnx.checker, then onnxruntime against eager PyTorch on the same inputs.

``verify(model, args, opset_version=...)`` exports to memory, checks the model and compares every
output; ``other_inputs`` runs the exported model again on inputs of other sizes (dynamic axes).
onnxruntime is an optional dependency (the ``test`` extra); importing this module does not need it.
"""

from __future__ import annotations

import dataclasses
import io

import numpy as np
import onnx
import torch

from .capture import call_model, normalize_args
from .errors import CheckerError


@dataclasses.dataclass
class Comparison:
    output: str
    shape: tuple
    max_abs_diff: float


@dataclasses.dataclass
class Report:
    opset: int
    model_bytes: int
    nodes: int
    comparisons: list[Comparison]

    @property
    def max_abs_diff(self) -> float:
        return max((c.max_abs_diff for c in self.comparisons), default=0.0)


def flatten_outputs(value) -> list[torch.Tensor]:
    """Outputs flattened in the legacy order: tuples, lists and dict values, depth first."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in flatten_outputs(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in flatten_outputs(item)]
    if isinstance(value, (int, float, bool)):
        return [torch.tensor(value)]
    if value is None:
        return []
    raise TypeError(f"cannot flatten output of type {type(value).__name__}")


def flatten_inputs(args: tuple) -> list:
    flat = []
    for item in args:
        if isinstance(item, torch.Tensor):
            flat.append(item)
        elif isinstance(item, (list, tuple)):
            flat.extend(flatten_inputs(tuple(item)))
        elif isinstance(item, dict):
            flat.extend(flatten_inputs(tuple(item.values())))
        elif isinstance(item, float):  # Python floats are double inputs, as in legacy
            flat.append(torch.tensor(item, dtype=torch.float64))
        elif isinstance(item, (bool, int)):
            flat.append(torch.tensor(item))
    return flat


def check(model_bytes: bytes) -> onnx.ModelProto:
    try:  # checking the bytes spares the checker re-serialising a large model
        onnx.checker.check_model(model_bytes, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as error:
        raise CheckerError(f"the exported model fails onnx.checker: {error}") from error
    return onnx.load_from_string(model_bytes)


def run_onnxruntime(model_bytes: bytes, inputs: list) -> list[np.ndarray]:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    feeds = {name: _numpy(x) for name, x in zip(names, inputs)}
    return session.run(None, feeds)


def _numpy(x) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def compare(model, args: tuple, model_bytes: bytes, rtol: float, atol: float, kwargs=None,
            input_indices: list[int] | None = None) -> list[Comparison]:
    """``input_indices``: which flattened inputs the model kept (``Exported.input_indices``)."""
    args = normalize_args(model, args, kwargs)
    with torch.no_grad():
        expected = flatten_outputs(call_model(model, args))
    inputs = flatten_inputs(args)
    if input_indices is not None:
        inputs = [inputs[k] for k in input_indices]
    # a sequence output (a list of runtime length) comes back as a list: its tensors in order
    actual = [t for out in run_onnxruntime(model_bytes, inputs) for t in (out if isinstance(out, list) else [out])]
    if len(actual) != len(expected):
        raise AssertionError(f"onnxruntime returned {len(actual)} outputs, PyTorch {len(expected)}")
    results = []
    for k, (want, got) in enumerate(zip(expected, actual)):
        want = want.detach().cpu().numpy()
        if want.shape != got.shape:
            raise AssertionError(f"output {k}: shape {got.shape} from onnxruntime, {want.shape} from PyTorch")
        if want.dtype != got.dtype:
            raise AssertionError(f"output {k}: dtype {got.dtype} from onnxruntime, {want.dtype} from PyTorch")
        diff = float(np.abs(want.astype(np.float64) - got.astype(np.float64)).max()) if want.size else 0.0
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"output {k}")
        results.append(Comparison(str(k), tuple(want.shape), diff))
    return results


def verify(model, args=(), *, opset_version: int | None = None, rtol: float = 1e-4, atol: float = 1e-5,
           other_inputs: list[tuple] = (), kwargs=None, **export_options) -> Report:
    """Export, check and compare; raise AssertionError or CheckerError on any mismatch."""
    from .api import build

    buffer = io.BytesIO()
    exported = build(model, args, kwargs=kwargs, opset_version=opset_version, **export_options)
    exported.save(buffer)
    model_bytes = buffer.getvalue()
    proto = check(model_bytes)
    comparisons = compare(model, args, model_bytes, rtol, atol, kwargs, exported.input_indices)
    for extra in other_inputs:
        comparisons += compare(model, extra, model_bytes, rtol, atol, input_indices=exported.input_indices)
    opset = next(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx"))
    return Report(opset, len(model_bytes), len(proto.graph.node), comparisons)
