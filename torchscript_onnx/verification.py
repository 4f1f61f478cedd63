"""Verify an export: onnx.checker, then onnxruntime against eager PyTorch, output by output.

``verify(model, args, opset_version=...)`` exports to memory, checks the model and compares every
output by name (max absolute and relative difference, pass/fail against rtol/atol); ``other_sizes``
runs it again with inputs made at other sizes along the dynamic axes. It returns a ``Report`` to
print; an output that differs raises ``VerificationError`` with the report's table, unless
``raise_on_mismatch=False`` asks for the report instead. ``torchscript_onnx.verify`` is this function; the module keeps its old import
path (``from torchscript_onnx.verify import verify, check, ...``) through an alias the package sets.
onnxruntime is an optional dependency (the ``verify`` extra); importing this module does not need it.
"""

from __future__ import annotations

import io

import onnx

from .builder.errors import VerificationError  # noqa: F401 - its old home
# what ``from torchscript_onnx.verify import check, run_onnxruntime, ...`` finds
from .pipeline.comparison import (  # noqa: F401
    Comparison, Report, captured_by, check, compare, compare_by_name, compare_outputs, differences, flatten_inputs,
    flatten_outputs, format_table, input_dims, random_like, replace_flat, resized_inputs, run_and_compare,
    run_onnxruntime, session, VerificationReport)
from .pipeline.capture import normalize_args


def verify(model, args=(), *, rtol: float = 1e-4, atol: float = 1e-5,
           other_sizes=None, other_inputs: list[tuple] = (), kwargs=None, raise_on_mismatch: bool = True,
           **export_options) -> Report:
    """Export ``model`` to memory, check it with ``onnx.checker`` (full check), and compare
    onnxruntime's outputs with PyTorch's, output by output. Returns the ``Report``; an output that
    differs raises ``VerificationError`` with the report's table, so a mismatch cannot pass unseen
    (``raise_on_mismatch=False`` returns the report instead).

    Args:
        model, args, kwargs, opset_version: as for ``export``; so are the other export options
            (``input_names``, ``dynamic_axes``, ``dynamic_shapes``, ...), passed through.
        rtol, atol: an output passes when every element is within ``atol + rtol * |expected|``.
        other_sizes: run again at other sizes along the dynamic axes: a dict, or a list of dicts
            (one run each), mapping a dynamic dim name to a size (``{"batch": 5}``) or an input
            name to ``{axis: size}`` (``{"x": {0: 5}}``). The inputs with a resized axis are made
            anew with ``torch.randn`` / ``torch.randint`` of their dtype; the others are reused.
        other_inputs: further argument tuples to run the exported model on, as given.
        raise_on_mismatch: True (default): raise ``VerificationError`` (an AssertionError) with
            the report's table when an output differs; False: return the report, to print or to
            inspect (``report.ok``, ``report.failures``, ``report.assert_ok()``).

    Returns:
        A ``Report``: one ``Comparison`` per output and run (output name, shape, dtype, max
        absolute and relative difference, passed), labelled by its inputs ("traced" or
        "scripted" for the example inputs, after how the model was captured; "batch=5" for
        other sizes); ``print(report)`` shows it as a table.

    Raises ``CheckerError`` when ``onnx.checker`` refuses the model. Needs onnxruntime, which the
    ``verify`` extra installs: ``pip install "torchscript-onnx[verify]"``.
    """
    from .api import build, options_given

    if other_sizes is None:
        other_sizes = []
    elif isinstance(other_sizes, dict):
        other_sizes = [other_sizes]
    buffer = io.BytesIO()
    exported = build(model, args, kwargs=kwargs, options=options_given(export_options, "verify"))
    exported.save(buffer)
    model_bytes = buffer.getvalue()
    check(model_bytes)
    proto = onnx.load_from_string(model_bytes)
    indices = exported.input_indices
    run = session(model_bytes)
    training = exported.options.training
    normalized = normalize_args(model, args, kwargs)
    comparisons = run_and_compare(model, normalized, run, rtol, atol, indices, captured_by(model), training)
    names, dims = input_dims(proto, {i.name for i in proto.graph.initializer})
    for sizes in other_sizes:
        resized, label = resized_inputs(normalized, names, dims, indices, sizes)
        comparisons += run_and_compare(model, resized, run, rtol, atol, indices, label, training)
    for k, extra in enumerate(other_inputs):
        comparisons += run_and_compare(model, normalize_args(model, extra, None), run, rtol, atol,
                                        indices, f"other_inputs[{k}]", training)
    opset = next(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx"))
    report = Report(opset, len(model_bytes), len(proto.graph.node), comparisons, rtol, atol)
    if raise_on_mismatch:
        report.assert_ok()
    return report
