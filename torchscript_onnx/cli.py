"""The ``torchscript-onnx`` command.

    torchscript-onnx demo [--model resnet18] [--opset 20] [--output demo.onnx]
        export a built-in model, check it with onnx.checker and compare onnxruntime with PyTorch
    torchscript-onnx supported-ops [--opset 20]
        list the operators that convert at an opset
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

from .options import DEFAULT_OPSET, MAX_OPSET, MIN_OPSET


def _demo(args) -> int:
    import torch

    from . import zoo
    from .api import export
    from .verify import check, compare

    if args.model not in zoo.MODELS:
        print(f"unknown model {args.model!r}; choose one of: {', '.join(sorted(zoo.MODELS))}", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    model, example = zoo.MODELS[args.model]()
    weights = sum(p.numel() * p.element_size() for p in model.state_dict().values())
    output = args.output or os.path.join(tempfile.mkdtemp(prefix="torchscript-onnx-"), f"{args.model}.onnx")
    print(f"model:   {args.model} ({weights / 2**20:.1f} MiB of weights), opset {args.opset}")
    start = time.perf_counter()
    export(model, example, output, opset_version=args.opset)
    elapsed = time.perf_counter() - start
    with open(output, "rb") as stream:
        model_bytes = stream.read()
    proto = check(model_bytes)
    ops = sorted({n.op_type for n in proto.graph.node})
    print(f"export:  {output} in {elapsed:.2f} s, {len(model_bytes) / 2**20:.1f} MiB, "
          f"{len(proto.graph.node)} nodes ({', '.join(ops)})")
    print("checker: onnx.checker.check_model(full_check=True) passed")
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        print("compare: skipped - install onnxruntime (pip install 'torchscript-onnx[verify]') to compare outputs")
        return 0
    comparisons = compare(model, example, model_bytes, rtol=1e-4, atol=1e-5)
    worst = max(c.max_abs_diff for c in comparisons)
    print(f"compare: onnxruntime matches PyTorch on {len(comparisons)} output(s), max abs diff {worst:.2e}")
    return 0


def _supported_ops(args) -> int:
    from .registration import supported_ops

    for name in supported_ops(args.opset):
        print(name)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="torchscript-onnx", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    opset_help = f"ONNX opset, {MIN_OPSET}-{MAX_OPSET} (default {DEFAULT_OPSET})"

    demo = commands.add_parser("demo", help="export a built-in model and check it in onnxruntime")
    demo.add_argument("--model", default="resnet18", help="a model of torchscript_onnx.zoo (default resnet18)")
    demo.add_argument("--opset", type=int, default=DEFAULT_OPSET, help=opset_help)
    demo.add_argument("--output", help="where to write the .onnx file (default: a temporary folder)")
    demo.set_defaults(run=_demo)

    ops = commands.add_parser("supported-ops", help="list the operators that convert at an opset")
    ops.add_argument("--opset", type=int, default=DEFAULT_OPSET, help=opset_help)
    ops.set_defaults(run=_supported_ops)

    args = parser.parse_args(argv)
    if not MIN_OPSET <= args.opset <= MAX_OPSET:
        parser.error(f"--opset must be from {MIN_OPSET} to {MAX_OPSET}")
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
