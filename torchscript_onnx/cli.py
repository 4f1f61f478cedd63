"""The ``torchscript-onnx`` command (also ``python -m torchscript_onnx``).

    export MODEL -o m.onnx --input x:1x3x224x224[:float32] [--dynamic x:0=batch] [--opset 17] [--verify]
    verify MODEL m.onnx --input ... [--dynamic-sizes x:0=5]
    audit MODEL --input ... [--dynamic x:0=batch] [--opset 17] [--format text|markdown]
    inspect m.onnx
    demo [--opset 17] [--output m.onnx]                supported-ops [--opset 20]

MODEL is a TorchScript archive written by ``torch.jit.save`` (loaded with ``torch.jit.load``) or
``module:attr``, a Python callable that returns an ``nn.Module`` when called without arguments.
Models are exported and run in eval mode. ``audit`` takes ``export``'s capture options (defined
once, ``add_capture_options``) and runs the conversion with the very options ``export`` would
(``export_call``), so it fails exactly when that export does. docs/cli.md has the details.

Exit codes: 0 success; 1 a failure (export error, verification mismatch, audit finds a problem,
unreadable file); 2 a usage error (bad option or spec); 130 interrupted;
141 stdout closed early (``supported-ops | head -3``): as a program killed by SIGPIPE, so that
``set -o pipefail`` sees the same as with other tools, and quietly, without a traceback.
Every error is one line on stderr, ``torchscript-onnx: error: ...``; an exporter's error keeps the
following lines of its message, which list what failed, and a model's failure ends with the
model's own error line (its TorchScript traceback left out); ``--traceback`` shows the Python
traceback.
"""

from __future__ import annotations

import argparse
import collections
import importlib
import os
import re
import sys
import tempfile
import time

from .builder.options import DEFAULT_OPSET, MAX_OPSET, MIN_OPSET, ExportOptions

PROG = "torchscript-onnx"
DESCRIPTION = """\
Export PyTorch models to ONNX with a stand-alone exporter: TorchScript archives (torch.jit.save) or
Python factories (module:attr). Check the result against PyTorch in onnxruntime, audit which
operators convert, and inspect an ONNX file."""
EPILOG = """examples:
  torchscript-onnx export model.pt -o model.onnx --input x:1x3x224x224 --dynamic x:0=batch --verify
  torchscript-onnx verify model.pt model.onnx --input x:1x3x224x224 --dynamic-sizes batch=4
  torchscript-onnx audit model.pt --input x:1x3x224x224 --dynamic x:0=batch --opset 13
  torchscript-onnx inspect model.onnx
  torchscript-onnx supported-ops --opset 13

MODEL is a TorchScript archive (written by torch.jit.save) or module:attr, a Python callable that
returns an nn.Module when called without arguments. Exit codes: 0 ok, 1 failure, 2 usage error."""

# dtype names an --input spec takes, with torch's aliases
DTYPES = {
    "float32": "float32", "float": "float32", "float16": "float16", "half": "float16", "bfloat16": "bfloat16",
    "float64": "float64", "double": "float64", "int64": "int64", "long": "int64", "int32": "int32",
    "int": "int32", "int16": "int16", "int8": "int8", "uint8": "uint8", "bool": "bool",
}
# integer inputs are drawn from this range (token ids, indices into small tables)
INT_RANGE = (0, 10)


class CliError(Exception):
    """An expected failure: printed as one line, exit code 1."""


class UsageError(CliError):
    """A bad option or spec: printed as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (argparse prints the usage block first)."""

    def error(self, message):
        raise UsageError(f"{message} (see '{self.prog} --help')")


# ---------------------------------------------------------------------------------------------
# specs: --input x:1x3x224x224[:float32], --dynamic x:0=batch, --dynamic-sizes x:0=5 / batch=5

def parse_input_spec(spec: str) -> tuple[str, tuple[int, ...], str]:
    """``name:1x3x224x224[:dtype]`` (``name:scalar`` for a 0-d input) -> (name, shape, dtype name)."""
    parts = spec.split(":")
    if len(parts) not in (2, 3) or not parts[0]:
        raise UsageError(f"--input {spec!r}: expected NAME:SHAPE[:DTYPE], e.g. x:1x3x224x224 or ids:2x16:int64")
    name, dims = parts[0], parts[1]
    dtype = parts[2] if len(parts) == 3 else "float32"
    if dtype not in DTYPES:
        raise UsageError(f"--input {spec!r}: unknown dtype {dtype!r}; one of {', '.join(DTYPES)}")
    if dims == "scalar":
        return name, (), DTYPES[dtype]
    if not re.fullmatch(r"\d+(x\d+)*", dims):
        raise UsageError(f"--input {spec!r}: shape {dims!r} must be sizes joined by 'x' (1x3x224x224) or 'scalar'")
    return name, tuple(int(d) for d in dims.split("x")), DTYPES[dtype]


def parse_dynamic_spec(spec: str) -> tuple[str, int, str | None]:
    """``name:axis[=dim_name]`` -> (name, axis, dim name or None)."""
    match = re.fullmatch(r"([^:=]+):(\d+)(?:=(\w+))?", spec)
    if not match:
        raise UsageError(f"--dynamic {spec!r}: expected NAME:AXIS[=DIM_NAME], e.g. x:0=batch")
    return match.group(1), int(match.group(2)), match.group(3)


def parse_sizes_spec(spec: str) -> dict:
    """``x:0=5,y:0=5`` or ``batch=5`` -> ``{"x": {0: 5}, ...}`` / ``{"batch": 5}`` (verify's other_sizes)."""
    sizes: dict = {}
    for item in spec.split(","):
        match = re.fullmatch(r"(?:([^:=]+):(\d+)|(\w+))=(\d+)", item.strip())
        if not match:
            raise UsageError(f"--dynamic-sizes {spec!r}: expected NAME:AXIS=SIZE or DIM_NAME=SIZE "
                             "(comma-separated for one run), e.g. x:0=5 or batch=5")
        if match.group(3):
            sizes[match.group(3)] = int(match.group(4))
        else:
            sizes.setdefault(match.group(1), {})[int(match.group(2))] = int(match.group(4))
    return sizes


def make_inputs(specs: list[str], seed: int) -> tuple[list[str], tuple]:
    """The example inputs of --input specs: randn for floating point, randint in INT_RANGE for
    integers, 0/1 for bools; seeded so two commands given the same specs see the same tensors."""
    import torch

    if not specs:
        raise UsageError("give the model's inputs with --input NAME:SHAPE[:DTYPE] (repeat for each input)")
    parsed = [parse_input_spec(spec) for spec in specs]
    names = [name for name, _, _ in parsed]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise UsageError(f"--input: name(s) {duplicates} given twice")
    generator = torch.Generator().manual_seed(seed)
    tensors = []
    for _, shape, dtype_name in parsed:
        dtype = getattr(torch, dtype_name)
        if dtype.is_floating_point:
            tensors.append(torch.randn(shape, generator=generator).to(dtype))
        elif dtype == torch.bool:
            tensors.append(torch.randint(0, 2, shape, generator=generator).bool())
        else:
            tensors.append(torch.randint(*INT_RANGE, shape, generator=generator).to(dtype))
    return names, tuple(tensors)


# ---------------------------------------------------------------------------------------------
# models

def load_model(spec: str):
    """A TorchScript archive path (torch.jit.load) or ``module:attr`` (called with no arguments),
    in eval mode."""
    import torch

    if os.path.exists(spec) or not re.fullmatch(r"[\w.]+:[\w.]+", spec):
        if not os.path.exists(spec):
            raise CliError(f"{spec}: no such file (MODEL is a TorchScript archive or module:attr)")
        if os.path.isdir(spec):
            raise CliError(f"{spec}: is a folder, not a TorchScript archive")
        try:
            model = torch.jit.load(spec, map_location="cpu")
        except Exception as error:  # torch raises RuntimeError/ValueError with miniz or pickle details
            raise CliError(f"{spec}: not a TorchScript archive ({_first_sentence(error)}); for a pickled nn.Module "
                           "or a state dict, pass module:attr, a function that builds the model") from error
    else:
        model = _from_factory(spec)
    if isinstance(model, torch.nn.Module):
        model.eval()
    return model


def _from_factory(spec: str):
    import torch

    module_name, attr = spec.split(":")
    if os.getcwd() not in sys.path and "" not in sys.path:  # console scripts do not put the folder on the path
        sys.path.insert(0, os.getcwd())
    try:
        target = importlib.import_module(module_name)
    except ImportError as error:
        raise CliError(f"{spec}: cannot import {module_name!r} ({_first_line(error)})") from error
    for part in attr.split("."):
        if not hasattr(target, part):
            raise CliError(f"{spec}: {module_name!r} has no attribute {attr!r}")
        target = getattr(target, part)
    model = target
    if callable(target) and not isinstance(target, torch.nn.Module):
        try:
            model = target()
        except Exception as error:
            raise CliError(f"{spec}: calling {attr}() failed: {type(error).__name__}: {_first_line(error)}") from error
    if not isinstance(model, torch.nn.Module):
        raise CliError(f"{spec}: {attr}() returned {type(model).__name__}, not a torch.nn.Module")
    return model


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]


def _first_sentence(error: BaseException) -> str:
    line = _first_line(error)
    return line.split(". ")[0].rstrip(".")


def _opset(value: str) -> int:
    try:
        opset = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid opset {value!r}") from None
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise argparse.ArgumentTypeError(f"opset must be from {MIN_OPSET} to {MAX_OPSET}; got {opset}")
    return opset


def _size(n_bytes: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n_bytes < 1024 or unit == "GiB":
            return f"{n_bytes} bytes" if unit == "bytes" else f"{n_bytes:.1f} {unit}"
        n_bytes /= 1024
    return ""


# ---------------------------------------------------------------------------------------------
# commands

def export_call(args) -> tuple:
    """``(model, inputs, options)``: the model, its example inputs and the ``export`` options that the
    capture options (``add_capture_options``) ask for. ``export`` and ``audit`` both run this call,
    so audit's verdict is the export's outcome."""
    names, inputs = make_inputs(args.input, args.seed)
    dynamic_axes = _dynamic_axes(args.dynamic, names, inputs, args.output_name)
    model = load_model(args.model)
    options = ExportOptions(opset_version=args.opset, input_names=names, output_names=args.output_name or None,
                            dynamic_axes=dynamic_axes or None)
    return model, inputs, options


def _export(args) -> int:
    from .api import export_with

    model, inputs, options = export_call(args)
    start = time.perf_counter()
    export_with(model, inputs, args.output, options, external_data=True if args.external_data else None)
    elapsed = time.perf_counter() - start
    proto = _load_header(args.output)
    weights = _external_files(proto)
    where = f", weights in {', '.join(sorted(weights))}" if weights else ""
    print(f"wrote {args.output}: opset {args.opset}, {len(proto.graph.node)} nodes, "
          f"{_size(_total_size(args.output, weights))}{where}, in {elapsed:.2f} s")
    if not args.verify:
        return 0
    from .pipeline.comparison import compare_by_name, format_table

    comparisons = compare_by_name(model, inputs, args.output, options.input_names, args.rtol, args.atol)
    print(format_table(comparisons, args.rtol, args.atol))
    if not all(c.passed for c in comparisons):
        failed = ", ".join(c.output for c in comparisons if not c.passed)
        raise CliError(f"verification failed for output(s) {failed} (the model is written to {args.output})")
    return 0


def _dynamic_axes(specs: list[str], input_names: list[str], inputs: tuple, output_names: list[str]) -> dict:
    axes: dict = {}
    for spec in specs:
        name, axis, dim = parse_dynamic_spec(spec)
        if name not in input_names and name not in output_names:
            raise UsageError(f"--dynamic {spec!r}: {name!r} is neither an --input nor an --output-name "
                             f"(inputs: {', '.join(input_names)})")
        if name in input_names and axis >= inputs[input_names.index(name)].dim():
            raise UsageError(f"--dynamic {spec!r}: input {name!r} has {inputs[input_names.index(name)].dim()} dims")
        axes.setdefault(name, {})[axis] = dim or f"{name}_dim{axis}"
    return axes


def _verify(args) -> int:
    from .pipeline.comparison import compare_by_name, format_table, resized_inputs, session

    names, inputs = make_inputs(args.input, args.seed)
    runs = [parse_sizes_spec(spec) for spec in args.dynamic_sizes]
    if not os.path.isfile(args.onnx):
        raise CliError(f"{args.onnx}: no such file")
    model = load_model(args.model)
    try:
        run = session(args.onnx)
    except Exception as error:
        raise CliError(f"{args.onnx}: onnxruntime cannot load it ({_first_line(error)})") from error
    comparisons = compare_by_name(model, inputs, run, names, args.rtol, args.atol)
    if runs:
        proto = _load_header(args.onnx)
        initializers = {i.name for i in proto.graph.initializer}
        onnx_names = [v.name for v in proto.graph.input if v.name not in initializers]
        dims = [_dims(v) for v in proto.graph.input if v.name not in initializers]
        indices = [names.index(n) for n in onnx_names]
        for sizes in runs:
            try:
                resized, label = resized_inputs(inputs, onnx_names, dims, indices, sizes)
            except ValueError as error:
                raise UsageError(f"--dynamic-sizes: {error}") from error
            comparisons += compare_by_name(model, resized, run, names, args.rtol, args.atol, label)
    print(format_table(comparisons, args.rtol, args.atol))
    if not all(c.passed for c in comparisons):
        failed = sorted({c.output for c in comparisons if not c.passed})
        raise CliError(f"onnxruntime differs from PyTorch beyond rtol {args.rtol:g}, atol {args.atol:g} "
                       f"for output(s) {', '.join(failed)}")
    return 0


def _audit(args) -> int:
    from .audit import audit

    model, inputs, options = export_call(args)
    report = audit(model, inputs, options=options)
    print(report.to_markdown() if args.format == "markdown" else report.to_text(), end="" if
          args.format == "markdown" else "\n")
    return 0 if report.ok else 1


def _inspect(args) -> int:
    if not os.path.isfile(args.onnx):
        raise CliError(f"{args.onnx}: no such file")
    proto = _load_header(args.onnx)
    external = _external_files(proto)
    size = os.path.getsize(args.onnx)
    line = f"file:      {args.onnx}, {_size(size)}"
    if external:
        missing = [f for f in external if not os.path.isfile(os.path.join(os.path.dirname(args.onnx), f))]
        line += (f" + external data {_size(_total_size(args.onnx, external) - size)} in "
                 f"{', '.join(sorted(external))}" + (f" (missing: {', '.join(missing)})" if missing else ""))
    print(line)
    producer = f"{proto.producer_name} {proto.producer_version}".strip() or "-"
    print(f"producer:  {producer}")
    opsets = ", ".join(f"{o.domain or 'ai.onnx'} {o.version}" for o in proto.opset_import)
    print(f"ir:        version {proto.ir_version}; opsets: {opsets}")
    if proto.doc_string:
        print(f"doc:       {proto.doc_string.splitlines()[0]}")
    initializers = {i.name for i in proto.graph.initializer}
    print("inputs:")
    _print_values([v for v in proto.graph.input if v.name not in initializers])
    print("outputs:")
    _print_values(list(proto.graph.output))
    histogram = collections.Counter()
    top = len(proto.graph.node)
    nested = _count_ops(proto.graph, histogram) - top
    print(f"nodes:     {top}" + (f" (+{nested} in subgraphs)" if nested else "")
          + f"; initializers: {len(proto.graph.initializer)}"
          + (f"; local functions: {len(proto.functions)}" if proto.functions else ""))
    print("ops:")
    width = max((len(op) for op in histogram), default=0)
    for op, count in sorted(histogram.items(), key=lambda item: (-item[1], item[0])):
        print(f"  {op.ljust(width)}  {count}")
    if proto.metadata_props:
        print("metadata:")
        for prop in proto.metadata_props:
            print(f"  {prop.key}: {prop.value}")
    return 0


def _count_ops(graph, histogram: collections.Counter) -> int:
    """Nodes of ``graph`` and its subgraphs (If/Loop/Scan bodies), counted by op into ``histogram``."""
    count = 0
    for node in graph.node:
        count += 1
        histogram[f"{node.domain}::{node.op_type}" if node.domain not in ("", "ai.onnx") else node.op_type] += 1
        for attribute in node.attribute:
            for sub in list(attribute.graphs) + ([attribute.g] if attribute.HasField("g") else []):
                count += _count_ops(sub, histogram)
    return count


def _print_values(values) -> None:
    rows = [(v.name, *_type_text(v)) for v in values]
    widths = [max((len(r[k]) for r in rows), default=0) for k in range(3)]
    for row in rows:
        print("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())


def _type_text(value) -> tuple[str, str]:
    kind = value.type.WhichOneof("value")
    if kind == "tensor_type":
        dtype = _dtype_name(value.type.tensor_type.elem_type)
        if not value.type.tensor_type.HasField("shape"):
            return dtype, "[rank unknown]"
        return dtype, "[" + ", ".join(str(d) for d in _dims(value)) + "]"
    if kind == "sequence_type":
        elem = value.type.sequence_type.elem_type
        return f"sequence of {_dtype_name(elem.tensor_type.elem_type)}", ""
    if kind == "optional_type":
        return "optional", ""
    return kind or "?", ""


def _dtype_name(elem_type: int) -> str:
    """numpy's name of an ONNX element type (float32, int64, bool), else ONNX's (bfloat16)."""
    import onnx

    try:
        return str(onnx.helper.tensor_dtype_to_np_dtype(elem_type))
    except (KeyError, ValueError, TypeError):
        return onnx.TensorProto.DataType.Name(elem_type).lower()


def _dims(value) -> list:
    shape = value.type.tensor_type.shape.dim if value.type.HasField("tensor_type") else []
    return [d.dim_param if d.HasField("dim_param") else d.dim_value if d.HasField("dim_value") else "?"
            for d in shape]


def _load_header(path: str):
    """The model without its external data (weights are not needed to describe it)."""
    import onnx

    try:
        return onnx.load(path, load_external_data=False)
    except Exception as error:
        raise CliError(f"{path}: not an ONNX model ({_first_line(error)})") from error


def _external_files(proto) -> set[str]:
    files = set()
    for tensor in proto.graph.initializer:
        if tensor.data_location == tensor.EXTERNAL:
            files.update(e.value for e in tensor.external_data if e.key == "location")
    return files


def _total_size(path: str, external: set[str]) -> int:
    folder = os.path.dirname(path)
    return os.path.getsize(path) + sum(os.path.getsize(os.path.join(folder, f)) for f in external
                                       if os.path.isfile(os.path.join(folder, f)))


def demo_model():
    """``(model, (image,))``: ResNet-18 with torchvision's layers and ``state_dict`` keys, seeded random
    weights initialised as torchvision does, in eval mode, and a 1x3x224x224 image. The model ``demo``
    exports; defined here so the package needs no model zoo."""
    import torch
    from torch import nn

    class BasicBlock(nn.Module):  # defined in the function: torch is imported only when a command needs it
        def __init__(self, inplanes: int, planes: int, stride: int):
            super().__init__()
            self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.downsample = None
            if stride != 1 or inplanes != planes:
                self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride, bias=False),
                                                nn.BatchNorm2d(planes))

        def forward(self, x):
            out = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
            return self.relu(out + (x if self.downsample is None else self.downsample(x)))

    def layer(inplanes: int, planes: int, stride: int) -> nn.Sequential:
        return nn.Sequential(BasicBlock(inplanes, planes, stride), BasicBlock(planes, planes, 1))

    torch.manual_seed(0)
    model = nn.Sequential(collections.OrderedDict(
        conv1=nn.Conv2d(3, 64, 7, 2, 3, bias=False), bn1=nn.BatchNorm2d(64), relu=nn.ReLU(inplace=True),
        maxpool=nn.MaxPool2d(3, 2, 1), layer1=layer(64, 64, 1), layer2=layer(64, 128, 2),
        layer3=layer(128, 256, 2), layer4=layer(256, 512, 2), avgpool=nn.AdaptiveAvgPool2d(1),
        flatten=nn.Flatten(), fc=nn.Linear(512, 1000)))
    for module in model.modules():
        if isinstance(module, nn.Conv2d):  # keeps activations at unit scale, so the comparison means something
            nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
    return model.eval(), (torch.randn(1, 3, 224, 224),)


def _demo(args) -> int:
    if args.output:
        return _run_demo(args.output, args.opset)
    with tempfile.TemporaryDirectory(prefix="torchscript-onnx-") as folder:  # removed also when the demo fails
        code = _run_demo(os.path.join(folder, "resnet18.onnx"), args.opset)
    print("file:    removed (it was temporary; --output FILE keeps it)")
    return code


def _run_demo(output: str, opset: int) -> int:
    from .api import export
    from .pipeline.comparison import check, compare

    model, example = demo_model()
    weights = sum(p.numel() * p.element_size() for p in model.state_dict().values())
    print(f"model:   resnet18 ({weights / 2**20:.1f} MiB of weights), opset {opset}")
    start = time.perf_counter()
    export(model, example, output, opset_version=opset)
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


# ---------------------------------------------------------------------------------------------
# the parser and main

def _version() -> str:
    import onnx
    import torch

    from .api import __version__

    return f"{PROG} {__version__} (torch {torch.__version__}, onnx {onnx.__version__})"


class _VersionAction(argparse.Action):
    """--version, with the versions read only when asked (importing torch is slow)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest, nargs=0, default=default, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(_version())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description=DESCRIPTION, epilog=EPILOG,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=_VersionAction, help="print the version (and torch's, onnx's) and exit")
    parser.add_argument("--traceback", action="store_true", help="on an error, show the Python traceback")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    opset_help = f"ONNX opset, {MIN_OPSET}-{MAX_OPSET} (default {DEFAULT_OPSET})"
    model_help = "a TorchScript archive (torch.jit.save) or module:attr, a callable returning an nn.Module"
    input_help = ("an input as NAME:SHAPE[:DTYPE], e.g. x:1x3x224x224 or ids:2x16:int64 (x:scalar for 0-d; "
                  "default dtype float32); repeat for each input, in the order forward takes them; "
                  "random values (floats randn, integers 0-9, seeded by --seed)")

    def add_model_inputs(command):
        add_traceback(command)
        command.add_argument("model", metavar="MODEL", help=model_help)
        command.add_argument("--input", action="append", default=[], metavar="NAME:SHAPE[:DTYPE]", help=input_help)
        command.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")

    def add_capture_options(command):
        """What decides what converts: export's and audit's options (export_call turns them into export's)."""
        add_model_inputs(command)
        command.add_argument("--dynamic", action="append", default=[], metavar="NAME:AXIS[=DIM]",
                             help="a dynamic axis, e.g. x:0=batch (an input, or an output named by --output-name); "
                             "repeat")
        command.add_argument("--output-name", action="append", default=[], metavar="NAME",
                             help="name of the next graph output; repeat for each")
        command.add_argument("--opset", type=_opset, default=DEFAULT_OPSET, help=opset_help)

    def add_traceback(command):  # also accepted after the command
        command.add_argument("--traceback", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)

    def add_tolerances(command):
        command.add_argument("--rtol", type=float, default=1e-4, help="relative tolerance (default 1e-4)")
        command.add_argument("--atol", type=float, default=1e-5, help="absolute tolerance (default 1e-5)")

    export = commands.add_parser("export", help="export a TorchScript archive or a factory's model to ONNX",
                                 description="Export MODEL to ONNX. The graph inputs take the names given "
                                 "by --input.")
    add_capture_options(export)
    export.add_argument("-o", "--output", required=True, metavar="FILE.onnx", help="the .onnx file to write")
    export.add_argument("--verify", action="store_true",
                        help="after writing, compare onnxruntime with PyTorch on the inputs (exit 1 on a mismatch)")
    export.add_argument("--external-data", action="store_true",
                        help="write the weights to FILE.onnx.data beside the model (automatic past 2 GiB)")
    add_tolerances(export)
    export.set_defaults(run=_export)

    verify = commands.add_parser("verify", help="compare an ONNX file with its PyTorch model in onnxruntime",
                                 description="Run MODEL in PyTorch and FILE.onnx in onnxruntime on the same random "
                                 "inputs and print, per output, the max absolute and relative difference.")
    add_model_inputs(verify)
    verify.add_argument("onnx", metavar="FILE.onnx", help="the exported model")
    verify.add_argument("--dynamic-sizes", action="append", default=[], metavar="SIZES",
                        help="one more run at other sizes along the dynamic axes: NAME:AXIS=SIZE or DIM=SIZE, "
                        "comma-separated (x:0=5 or batch=5); repeat for more runs")
    add_tolerances(verify)
    verify.set_defaults(run=_verify)

    audit = commands.add_parser("audit", help="list what keeps a model from exporting, with export's options",
                                description="Run the conversion 'export' runs with the same options (inputs, "
                                "dynamic axes, output names, opset), writing nothing, and report every problem "
                                "it meets: operators without a conversion, lowerings that need a higher opset "
                                "or a fixed size, each with where it occurs and what to do. Exit 1 if there are "
                                "any, as 'export' with these options would.")
    add_capture_options(audit)
    audit.add_argument("--format", choices=("text", "markdown"), default="text", help="report format (default text)")
    audit.set_defaults(run=_audit)

    inspect = commands.add_parser("inspect", help="describe an ONNX file: opsets, inputs, outputs, ops, size",
                                  description="Describe FILE.onnx: opset imports, inputs and outputs with dtype "
                                  "and dims (symbolic names too), op histogram, node count, size (external data "
                                  "included), producer and metadata. Weights are not loaded.")
    add_traceback(inspect)
    inspect.add_argument("onnx", metavar="FILE.onnx", help="an ONNX model")
    inspect.set_defaults(run=_inspect)

    demo = commands.add_parser("demo", help="export a built-in ResNet-18 and check it in onnxruntime",
                               description="Export a ResNet-18 built in code (random weights, nothing "
                               "downloaded), check the file with onnx.checker and compare onnxruntime's output "
                               "with PyTorch's. The file goes to a temporary folder, removed at the end, unless "
                               "--output names where to keep it.")
    add_traceback(demo)
    demo.add_argument("--opset", type=_opset, default=DEFAULT_OPSET, help=opset_help)
    demo.add_argument("--output", metavar="FILE.onnx",
                      help="keep the exported file there (default: a temporary folder, removed at the end)")
    demo.set_defaults(run=_demo)

    ops = commands.add_parser("supported-ops", help="list the operators that convert at an opset",
                              description="Print the TorchScript operators (aten::relu, prim::If, ...) "
                              "that have a conversion at the opset, one a line, sorted; docs/supported_ops.md "
                              "has the table over all opsets.")
    add_traceback(ops)
    ops.add_argument("--opset", type=_opset, default=DEFAULT_OPSET, help=opset_help)
    ops.set_defaults(run=_supported_ops)
    return parser


# an error's lines past the first that are printed; past them, the last line (the cause) still is
ERROR_LINES = 20


def _error(message: str) -> None:
    """``message`` on stderr: its first line after ``torchscript-onnx: error:``, the following lines
    indented (an exporter's message lists what failed there). A TorchScript traceback in it (a
    scripted model that failed on the inputs) is left out for one line saying so, and the last line,
    the model's own error, is always printed, however long the message."""
    lines = _without_torchscript_tracebacks(message.strip().splitlines() or [""])
    print(f"{PROG}: error: {lines[0]}", file=sys.stderr)
    rest = lines[1:]
    if len(rest) > ERROR_LINES:
        rest = rest[:ERROR_LINES - 1] + [f"... ({len(rest) - ERROR_LINES} more lines)", rest[-1]]
    for line in rest:
        print(f"  {line}", file=sys.stderr)


def _without_torchscript_tracebacks(lines: list[str]) -> list[str]:
    """``lines`` with each TorchScript traceback (from its "Traceback of TorchScript" heading through
    its indented or blank lines) replaced by one line; the error line after it stays."""
    kept, skipped = [], 0
    for line in lines:
        if line.startswith("Traceback of TorchScript") or (skipped and (not line.strip() or line[0].isspace())):
            skipped += 1
            continue
        if skipped:
            kept.append(f"(a TorchScript traceback of {skipped} lines, left out: --traceback shows it)")
            skipped = 0
        kept.append(line)
    if skipped:
        kept.append(f"(a TorchScript traceback of {skipped} lines, left out: --traceback shows it)")
    return kept


def main(argv=None) -> int:
    """Run the command; returns the exit code (``--help``/``--version`` exit through SystemExit(0))."""
    args = None
    try:
        try:
            args = build_parser().parse_args(argv)
            code = args.run(args)
            sys.stdout.flush()  # a closed pipe shows here, inside the handler, not at exit
            return code
        except BrokenPipeError:
            raise
        except KeyboardInterrupt:
            print(f"{PROG}: interrupted", file=sys.stderr)
            return 130
        except Exception as error:
            if getattr(args, "traceback", False):
                raise
            if isinstance(error, CliError):
                _error(str(error))
                return 2 if isinstance(error, UsageError) else 1
            # the exporter's and torch's errors: their message, no traceback
            _error(str(error) if _is_exporter_error(error) else f"{type(error).__name__}: {error}")
            return 1
    except BrokenPipeError:
        # stdout was closed early (| head): further writes and the flush at exit would fail again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


def _is_exporter_error(error: BaseException) -> bool:
    from .builder.errors import OnnxExporterError

    return isinstance(error, (OnnxExporterError, OSError, ValueError, TypeError))


def run() -> None:
    """The console script and ``python -m torchscript_onnx``."""
    sys.exit(main())


if __name__ == "__main__":
    run()
