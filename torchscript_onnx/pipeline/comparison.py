"""An exported model run in onnxruntime and its outputs compared with eager PyTorch's: the checker,
the session, the flattening of arguments and outputs, the comparison table, inputs made at other
sizes. ``verify()`` (verification.py), the exported program's call (api.py) and the CLI use them.
onnxruntime is an optional dependency (the ``verify`` extra); importing this module does not need it.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import onnx
import torch

from . import hf_cache
from .capture import CallArgs, call_model, normalize_args, select_model_mode_for_export, traced_arguments
from ..builder.errors import CheckerError, VerificationError
from ..builder.options import TrainingMode


@dataclasses.dataclass
class Comparison:
    """One output of one run, onnxruntime against PyTorch."""

    output: str  # the ONNX output name ("out[2]" for the third tensor of a sequence output)
    shape: tuple
    max_abs_diff: float
    max_rel_diff: float = 0.0
    dtype: str = ""
    passed: bool = True
    # which inputs: the example inputs, "traced" or "scripted" after how the model was captured
    # (``captured_by``), or the sizes they were made at ("batch=5")
    inputs: str = "traced"
    note: str = ""  # a difference beyond the values: shape or dtype

    @property
    def name(self) -> str:
        return self.output


@dataclasses.dataclass
class Report:
    """What ``verify`` found: one ``Comparison`` per output and run. ``print(report)`` shows a table;
    ``report.ok`` says whether every output is within tolerance; ``report.assert_ok()`` raises
    ``VerificationError`` (an AssertionError) with the table otherwise."""

    opset: int
    model_bytes: int
    nodes: int
    comparisons: list[Comparison]
    rtol: float = 1e-4
    atol: float = 1e-5

    @property
    def ok(self) -> bool:
        return all(c.passed for c in self.comparisons)

    @property
    def failures(self) -> list[Comparison]:
        return [c for c in self.comparisons if not c.passed]

    @property
    def max_abs_diff(self) -> float:
        return max((c.max_abs_diff for c in self.comparisons), default=0.0)

    @property
    def max_rel_diff(self) -> float:
        return max((c.max_rel_diff for c in self.comparisons), default=0.0)

    def to_text(self) -> str:
        return format_table(self.comparisons, self.rtol, self.atol,
                            f"opset {self.opset}, {self.nodes} nodes, {self.model_bytes} bytes")

    __str__ = to_text

    def assert_ok(self) -> None:
        if not self.ok:
            raise VerificationError(self.to_text())


VerificationReport = Report


def format_table(comparisons: list[Comparison], rtol: float, atol: float, heading: str = "") -> str:
    """Comparisons as an aligned text table with a verdict line."""
    rows = [("inputs", "output", "shape", "dtype", "max abs diff", "max rel diff", "result")]
    for c in comparisons:
        result = "ok" if c.passed else "FAIL" + (f" ({c.note})" if c.note else "")
        rows.append((c.inputs, c.output, "x".join(map(str, c.shape)) or "scalar", c.dtype,
                     f"{c.max_abs_diff:.3g}", f"{c.max_rel_diff:.3g}", result))
    widths = [max(len(row[k]) for row in rows) for k in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    failed = sum(not c.passed for c in comparisons)
    verdict = (f"{failed} of {len(comparisons)} comparison(s) FAIL" if failed
               else f"all {len(comparisons)} comparison(s) ok")
    verdict += f" (rtol {rtol:g}, atol {atol:g}; onnxruntime against PyTorch)"
    return "\n".join(([heading] if heading else []) + lines + [verdict])

def flatten_outputs(value) -> list[torch.Tensor]:
    """Outputs flattened in the legacy order: tuples, lists and dict values, depth first; a
    transformers cache as its tensors."""
    if isinstance(value, torch.Tensor):
        return [value]
    if hf_cache.is_cache(value):
        return _cache_tensors(value)
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
    """The graph inputs normalised ``args`` flatten to, in order (keyword constants left out)."""
    flat = []
    for item in traced_arguments(args):
        if isinstance(item, torch.Tensor):
            flat.append(item)
        elif hf_cache.is_cache(item):
            flat.extend(_cache_tensors(item))
        elif isinstance(item, (list, tuple)):
            flat.extend(flatten_inputs(tuple(item)))
        elif isinstance(item, dict):
            flat.extend(flatten_inputs(tuple(item.values())))
        elif isinstance(item, float):  # Python floats are double inputs, as in legacy
            flat.append(torch.tensor(item, dtype=torch.float64))
        elif isinstance(item, (bool, int)):
            flat.append(torch.tensor(item))
    return flat


def _cache_tensors(cache) -> list[torch.Tensor]:
    return hf_cache.layout_of(cache, "a cache").tensors(cache)


def check(model_bytes: bytes) -> onnx.ModelProto:
    try:  # checking the bytes spares the checker re-serialising a large model
        onnx.checker.check_model(model_bytes, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as error:
        raise CheckerError(f"the exported model fails onnx.checker: {error}") from error
    return onnx.load_from_string(model_bytes)


def session(model) -> "onnxruntime.InferenceSession":
    """An onnxruntime CPU session of ``model``: the serialized bytes, or a path (external data
    is then read from beside the file)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    source = model if isinstance(model, bytes) else os.fspath(model)
    return onnxruntime.InferenceSession(source, options, providers=["CPUExecutionProvider"])


def run_onnxruntime(model_bytes, inputs: list) -> list[np.ndarray]:
    """``model_bytes`` (or a session, or a path) run on ``inputs``, fed to its inputs in order."""
    run = model_bytes if hasattr(model_bytes, "get_inputs") else session(model_bytes)
    names = [i.name for i in run.get_inputs()]
    feeds = {name: _numpy(x) for name, x in zip(names, inputs)}
    return run.run(None, feeds)


def _numpy(x) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def differences(want: np.ndarray, got: np.ndarray, rtol: float, atol: float) -> tuple[float, float, bool]:
    """Max absolute and relative difference of ``got`` from ``want`` and whether every element is
    within ``atol + rtol * |want|`` (as numpy's assert_allclose; NaN equals NaN). The relative
    difference of an element is ``|got - want| / |want|`` (inf where only ``want`` is 0)."""
    if want.size == 0:
        return 0.0, 0.0, True
    w, g = want.astype(np.float64), got.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        same = (w == g) | (np.isnan(w) & np.isnan(g))
        abs_diff = np.where(same, 0.0, np.abs(w - g))
        abs_diff = np.where(np.isnan(abs_diff), np.inf, abs_diff)
        rel_diff = np.where(same, 0.0, abs_diff / np.abs(w))
        rel_diff = np.where(np.isnan(rel_diff), np.inf, rel_diff)
        passed = bool(np.all(same | (abs_diff <= atol + rtol * np.abs(w))))
    return float(abs_diff.max()), float(rel_diff.max()), passed


def compare_outputs(expected: list[torch.Tensor], actual: list[np.ndarray], names: list[str], rtol: float,
                    atol: float, inputs: str = "traced") -> list[Comparison]:
    """One ``Comparison`` per output; nothing raised for a mismatch (see ``Comparison.passed``)."""
    if len(actual) != len(expected):
        raise VerificationError(f"onnxruntime returned {len(actual)} outputs, PyTorch {len(expected)}")
    results = []
    for name, want, got in zip(names, expected, actual):
        want = want.detach().cpu().numpy()
        got = np.asarray(got)
        notes = []
        if want.shape != got.shape:
            notes.append(f"shape {tuple(got.shape)} from onnxruntime, {tuple(want.shape)} from PyTorch")
        if want.dtype != got.dtype:
            notes.append(f"dtype {got.dtype} from onnxruntime, {want.dtype} from PyTorch")
        if want.shape == got.shape:
            abs_diff, rel_diff, passed = differences(want, got, rtol, atol)
        else:
            abs_diff = rel_diff = float("nan")
            passed = False
        results.append(Comparison(name, tuple(want.shape), abs_diff, rel_diff, str(want.dtype),
                                  passed and not notes, inputs, "; ".join(notes)))
    return results


def _named_outputs(run, raw: list) -> tuple[list[str], list[np.ndarray]]:
    """Output names (``name[i]`` for the tensors of a sequence output) and the outputs flattened."""
    flat_names, flat = [], []
    for name, out in zip((o.name for o in run.get_outputs()), raw):
        if isinstance(out, list):  # a sequence output (a list of runtime length): its tensors in order
            flat_names += [f"{name}[{i}]" for i in range(len(out))]
            flat += out
        else:
            flat_names.append(name)
            flat.append(out)
    return flat_names, flat


def run_and_compare(model, args: tuple, run, rtol: float, atol: float, input_indices: list[int] | None,
                     label: str, training=TrainingMode.EVAL) -> list[Comparison]:
    """``args`` normalised, ``run`` an onnxruntime session; PyTorch (in the mode ``training`` asks
    for) and onnxruntime on the same inputs, compared."""
    with torch.no_grad(), select_model_mode_for_export(model, training):
        expected = flatten_outputs(call_model(model, args))
    inputs = flatten_inputs(args)
    if input_indices is not None:
        inputs = [inputs[k] for k in input_indices]
    names, actual = _named_outputs(run, run_onnxruntime(run, inputs))
    return compare_outputs(expected, actual, names, rtol, atol, label)


def captured_by(model) -> str:
    """How export captures ``model``, the label of its example inputs' rows: "scripted" for a
    ScriptModule or ScriptFunction (their own graph is taken, also for a ``torch.jit.trace``
    result or a loaded archive), else "traced"."""
    return "scripted" if isinstance(model, (torch.jit.ScriptModule, torch.jit.ScriptFunction)) else "traced"


def compare_by_name(model, args: tuple, onnx_model, input_names: list[str], rtol: float = 1e-4,
                    atol: float = 1e-5, label: str | None = None, training=TrainingMode.EVAL) -> list[Comparison]:
    """PyTorch on ``args`` against onnxruntime on ``onnx_model`` (bytes, a path or a session),
    whose inputs are fed by name: ``input_names[k]`` names the k-th flattened input of ``args``.
    Flattened inputs the ONNX model does not have are left out (an export drops unused inputs)."""
    run = onnx_model if hasattr(onnx_model, "get_inputs") else session(onnx_model)
    args = normalize_args(model, args, None)
    position = {name: k for k, name in enumerate(input_names)}
    missing = [i.name for i in run.get_inputs() if i.name not in position]
    if missing:
        raise ValueError(f"the ONNX model has input(s) {missing} that are not given (given: {list(input_names)})")
    indices = [position[i.name] for i in run.get_inputs()]
    return run_and_compare(model, args, run, rtol, atol, indices, label or captured_by(model), training)


def compare(model, args: tuple, model_bytes: bytes, rtol: float, atol: float, kwargs=None,
            input_indices: list[int] | None = None) -> list[Comparison]:
    """PyTorch and onnxruntime on ``args``; raises ``VerificationError`` (an AssertionError) with a
    table when an output differs. ``input_indices``: which flattened inputs the model kept
    (``Exported.input_indices``)."""
    args = normalize_args(model, args, kwargs)
    comparisons = run_and_compare(model, args, session(model_bytes), rtol, atol, input_indices,
                                   captured_by(model), TrainingMode.PRESERVE)
    if not all(c.passed for c in comparisons):
        raise VerificationError(format_table(comparisons, rtol, atol))
    return comparisons


def resized_inputs(args: tuple, names: list[str], dims: list[list], input_indices: list[int],
                   sizes: dict) -> tuple[tuple, str]:
    """``args`` (normalised) with every input that has a dynamic axis named in ``sizes`` made anew
    at the new sizes, with ``torch.randn`` (floating point) or ``torch.randint`` (integers, within
    the traced input's range; bools 0/1) of the same dtype. Other inputs stay as they are.

    ``names``/``dims``: the ONNX graph inputs and their dims (int, or the dim name of a dynamic
    axis); ``sizes``: ``{dim_name: size}`` or ``{input_name: {axis: size}}``, or both."""
    flat = flatten_inputs(args)
    new_flat = list(flat)
    used = set()
    for name, shape, k in zip(names, dims, input_indices):
        target = list(flat[k].shape)
        changed = False
        for axis, dim in enumerate(shape):
            size = None
            per_input = sizes.get(name)
            if isinstance(per_input, dict) and (axis in per_input or str(axis) in per_input):
                size = per_input.get(axis, per_input.get(str(axis)))
                used.add(name)
            elif isinstance(dim, str) and isinstance(sizes.get(dim), int):
                size = sizes[dim]
                used.add(dim)
            if size is not None:
                if isinstance(dim, int):
                    raise ValueError(f"other_sizes: axis {axis} of input '{name}' is not dynamic "
                                     f"(exported with size {dim})")
                if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                    raise ValueError(f"other_sizes: size of input '{name}' axis {axis} must be an int >= 0; "
                                     f"got {size!r}")
                target[axis], changed = size, True
        if changed:
            new_flat[k] = random_like(flat[k], target)
    unknown = set(sizes) - used
    if unknown:
        known = sorted({d for shape in dims for d in shape if isinstance(d, str)})
        raise ValueError(f"other_sizes: {sorted(unknown)} name no dynamic axis of the exported model "
                         f"(its inputs: {names}; its dynamic dims: {known})")
    label = ", ".join(f"{key}={value}" if not isinstance(value, dict)
                      else ", ".join(f"{key}:{a}={s}" for a, s in value.items()) for key, value in sizes.items())
    return replace_flat(args, new_flat), label


def random_like(x: torch.Tensor, shape: list[int]) -> torch.Tensor:
    """A random tensor of ``x``'s dtype at ``shape``: randn for floating point and complex,
    randint within ``x``'s value range for integers, 0/1 for bools."""
    if x.dtype.is_floating_point or x.dtype.is_complex:
        return torch.randn(shape, dtype=x.dtype)
    if x.dtype == torch.bool:
        return torch.randint(0, 2, shape, dtype=torch.int64).bool()
    low, high = (int(x.min()), int(x.max())) if x.numel() else (0, 1)
    return torch.randint(low, high + 1, shape, dtype=x.dtype)


def replace_flat(args, new_flat: list):
    """``args`` with its tensors replaced by ``new_flat`` in ``flatten_inputs``' order."""
    position = iter(range(len(new_flat)))

    def walk(item):
        if isinstance(item, torch.Tensor):
            return new_flat[next(position)]
        if hf_cache.is_cache(item):
            layout = hf_cache.layout_of(item, "a cache")
            return layout.rebuild([new_flat[next(position)] for _ in layout.slots()])
        if isinstance(item, CallArgs):
            values = [v if item.is_constant(k) else walk(v) for k, v in enumerate(item)]
            result = CallArgs(values)
            result.keywords = item.keywords
            return result
        if isinstance(item, (list, tuple)):
            values = [walk(v) for v in item]
            return type(item)(values) if type(item) in (list, tuple) else type(item)(*values)
        if isinstance(item, dict):
            return {key: walk(v) for key, v in item.items()}
        if isinstance(item, (bool, int, float)):
            next(position)  # a Python number is one graph input too; it keeps its value
        return item

    return walk(args)


def input_dims(proto: onnx.ModelProto, initializers: set) -> tuple[list[str], list[list]]:
    names, dims = [], []
    for value in proto.graph.input:
        if value.name in initializers:
            continue
        names.append(value.name)
        shape = value.type.tensor_type.shape.dim if value.type.HasField("tensor_type") else []
        dims.append([d.dim_param if d.HasField("dim_param") else d.dim_value for d in shape])
    return names, dims
