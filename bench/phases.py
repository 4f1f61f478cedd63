"""Where our export spends its time: median milliseconds per phase, in a process like the runner's.

    python -m bench.phases --models squeezenet1_1,densenet121 [--repeat 5] [--opset 17] [--light]

Each model is exported once to warm up, then ``--repeat`` times with ``gc.collect()`` before each
(as bench.run does); the phases are timed by wrapping the functions ``build`` calls. Phases nest:
``trace`` and ``inline_autograd`` are inside ``capture``, ``prepare_inplace`` inside ``prepare``.

The process imports onnxruntime, onnxscript and torch.onnx first, as the runner's does (``--light``
skips them): every C++ exception costs more the more shared libraries are loaded (the unwinder
searches them all), and pybind iterators (``node.inputs()``, ``node.blocks()``) end with one, so a
walk that exhausts one per node is several times slower there than in a bare interpreter.
"""

from __future__ import annotations

import argparse
import gc
import io
import os
import statistics
import sys
import time
import warnings

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import models  # noqa: E402

PHASES = [  # (module, function, label)
    ("torchscript_onnx.pipeline.capture", "_capture_trace", "trace"),
    ("torchscript_onnx.pipeline.capture", "inline_autograd_functions", "inline_autograd"),  # as capture imports it
    ("torchscript_onnx.api", "capture_mod.capture", "capture"),
    ("torchscript_onnx.pipeline.prepare", "remove_inplace_views", "prepare_inplace"),  # as prepare() finds it
    ("torchscript_onnx.api", "prepare", "prepare"),
    ("torchscript_onnx.api", "convert", "convert"),
    ("torchscript_onnx.api", "optimize", "optimize"),
    ("torchscript_onnx.api", "_model_proto", "model_proto"),
    ("torchscript_onnx.pipeline.serialize", "write_model", "write"),
]


def _wrap(times: dict, module_name: str, attr: str, label: str) -> None:
    import importlib

    owner = importlib.import_module(module_name)
    *path, name = attr.split(".")
    for part in path:
        owner = getattr(owner, part)
    fn = getattr(owner, name)

    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            times.setdefault(label, []).append(time.perf_counter() - start)

    setattr(owner, name, timed)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="squeezenet1_1,mobilenet_v2,densenet121,resnet50")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--opset", type=int, default=17)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (0: torch's default)")
    parser.add_argument("--light", action="store_true", help="do not import onnxruntime/onnxscript/torch.onnx")
    ns = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    import torch

    if ns.threads > 0:
        torch.set_num_threads(ns.threads)
    if not ns.light:
        import onnxruntime  # noqa: F401
        import torch.onnx  # noqa: F401

        try:
            import onnxscript  # noqa: F401
        except ImportError:
            pass
    times: dict[str, list[float]] = {}
    for module_name, attr, label in PHASES:
        _wrap(times, module_name, attr, label)
    for name in [n.strip() for n in ns.models.split(",") if n.strip()]:
        medians = phase_times(times, name, ns.repeat, ns.opset)
        print(f"{name:16s} " + "  ".join(f"{k}={v * 1e3:.0f}" for k, v in medians.items()), flush=True)


def phase_times(times: dict, name: str, repeat: int, opset: int) -> dict[str, float]:
    """Median seconds per phase (and the total) of ``repeat`` exports of model ``name``; ``times``
    is the dict the wrapped phases append to."""
    import torchscript_onnx

    model, args = models.build(name)
    torchscript_onnx.export(model, args, io.BytesIO(), opset_version=opset)
    times.clear()
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        torchscript_onnx.export(model, args, io.BytesIO(), opset_version=opset)
        times.setdefault("total ms", []).append(time.perf_counter() - start)
    order = [label for _, _, label in PHASES] + ["total ms"]
    return {label: statistics.median(times[label]) for label in order if label in times}


if __name__ == "__main__":
    main()
