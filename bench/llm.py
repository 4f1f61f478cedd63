"""Large language models and past-key-values decoders: ours, legacy (``dynamo=False``) and dynamo.

    python -m bench.llm [--models llama_1b,llama_3b_bf16,linears_2gib,llama_pkv,gpt2_pkv]
                        [--exporters ours,legacy,dynamo] [--opset 18] [--timeout S] [--mem-cap-gb G]

Each (model, exporter) runs in a fresh interpreter (``python -m bench.llm --one MODEL EXPORTER``), one
after the other, never two at once. In it, as in ``bench.memory``: import everything, export a tiny
model once with the same exporter, build the model (random weights from a ``transformers`` config,
nothing downloaded), compute PyTorch's reference outputs, ``gc.collect()``, reset the kernel's RSS
high-water mark (``/proc/self/clear_refs``), read ``VmRSS`` (the built model's RSS), export to a file
in an empty temp dir, read ``VmHWM`` (the export's peak). Then, outside the measured window: the files
the export wrote (count, bytes), the nodes, ``onnx.checker.check_model`` on the path (external data
and models past 2 GiB included), the model freed, the file loaded by onnxruntime (CPU, one thread) and
run on inputs of other sizes than traced (past-key-values decoders: two decode steps, the presents of
step 1 fed back as the pasts of step 2), the max abs difference against PyTorch over all outputs, and
the median CPU time of ``--ort-runs`` runs (fewer for models over 1 GB).

The parent watches each child's ``RssAnon`` (not the page cache of mapped files) and kills it past ``--mem-cap-gb`` (default: what the machine has
available when the run starts, less 3 GB) or when the machine's available memory falls below
``--min-available-gb`` (default 0.5: other processes grow too), so an export that would exhaust the
shared machine shows as "killed" with the RSS it reached rather than taking other processes down.

Models:
- ``llama_1b``: TinyLlama-1.1B's dimensions (hidden 2048, 22 layers, 32 heads, 4 kv heads, intermediate
  5632, vocab 32000), fp32 (4.4 GB), ``input_ids, attention_mask -> logits`` with dynamic batch and
  sequence (traced at 1 x 8, run at 2 x 12).
- ``llama_3b_bf16``: Llama-3.2-3B's dimensions (3.2B parameters) in bfloat16 (6.4 GB), same signature.
- ``linears_2gib``: four 16384 x 8192 ``nn.Linear`` in fp32 (2.1 GB), just past protobuf's 2 GiB.
- ``llama_pkv``, ``gpt2_pkv``: past-key-values decoders (a 4-layer Llama of hidden 512, GPT-2 small),
  inputs ``input_ids, attention_mask, position_ids, past_key_values.{i}.key/value``, outputs
  ``logits, present.{i}.key/value``, dynamic batch, sequence and past sequence (traced at batch 2,
  3 new tokens after 4 cached; run at batch 3, 5 new after 7 cached, then 1 new token).
- ``llama_13b_bf16``: Llama-2-13B's dimensions in bfloat16 (26 GB, larger than the machine's memory),
  written once into ``--scratch`` as safetensors shards layer by layer (``bench.checkpoints``) and
  loaded memory-mapped by ``from_pretrained``; not run in onnxruntime (it would load 26 GB): three
  decoder layers' weights in the written file are compared bit for bit with the model's instead.
- ``llama_small_mmap``: a 30M-parameter fp32 Llama loaded the same way, checked in onnxruntime.

The floor: one no-grad forward pass at the traced size after the export (a model in memory), or one
read of the checkpoint files from the disk before it (memory-mapped; their page cache dropped before
the read and again before the export), plus one sequential buffered write of as many random bytes
as the export wrote, with ``fsync``; and, for ours, the export's phases (capture, prepare, convert,
optimize, serialize, write).

The table goes to stdout and bench/results/llm.md, every record to bench/results/llm.json.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import onnx  # noqa: E402
import torch  # noqa: E402

from bench.memory import _reset_hwm, _status_kib  # noqa: E402 - the same RSS method

MARKER = "BENCH_LLM "
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
ALL_MODELS = ["llama_1b", "llama_3b_bf16", "linears_2gib", "llama_pkv", "gpt2_pkv", "llama_small_mmap",
              "llama_13b_bf16"]
EXPORTER_NAMES = ["ours", "legacy", "dynamo"]
LARGE_BYTES = 2**30  # models above this get ``--ort-runs-large`` onnxruntime runs


class Case:
    """A model to export: the module, example args, export keyword arguments, and ``steps(run)``,
    which runs the checked inputs through ``run(inputs) -> outputs`` (PyTorch or onnxruntime) and
    returns every step's outputs (a decoder's step 2 is built from its own step 1's presents).

    A model memory-mapped from a checkpoint also has ``shards`` (its files: their page cache is
    dropped before the export and they are read once more for the floor) and ``layers`` (decoder
    layers whose weights in the exported file are compared with the model's); ``steps`` None
    means no run at all (a model whose file onnxruntime would load whole into memory)."""

    def __init__(self, module, args, kwargs, steps, shards=None, layers=()):
        self.module, self.args, self.kwargs, self.steps = module, args, kwargs, steps
        self.shards, self.layers = shards, list(layers)


def _tokens(vocab, batch, seq, seed):

    return torch.randint(1, vocab, (batch, seq), generator=torch.Generator().manual_seed(seed))


def _llm(size, dtype_name):
    from bench import decoders

    return _llm_case(decoders.causal_lm("llama", size, dtype=getattr(torch, dtype_name)))


def _llm_case(model):
    from bench import decoders

    vocab = model.config.vocab_size
    args = (_tokens(vocab, 1, 8, 0), torch.ones(1, 8, dtype=torch.long))
    check = (_tokens(vocab, 2, 12, 1), torch.ones(2, 12, dtype=torch.long))
    check[1][1, :3] = 0  # left padding in the second row

    def steps(run):
        return [run(check)]

    return Case(decoders.LogitsOnly(model), args, decoders.LOGITS_ONLY_KWARGS, steps)


class Linears(torch.nn.Module):
    """Linear layers alternating width -> 2 width -> width; four of width 8192 hold 2.1 GB of fp32."""

    def __init__(self, width=8192, depth=4):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(width, 2 * width) if i % 2 == 0 else
                                          torch.nn.Linear(2 * width, width) for i in range(depth))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def _linears():

    torch.manual_seed(0)
    model = Linears().eval()
    kwargs = {"input_names": ["x"], "output_names": ["y"], "dynamic_axes": {"x": {0: "batch"}, "y": {0: "batch"}}}
    check = (torch.randn(3, 8192, generator=torch.Generator().manual_seed(1)),)

    def steps(run):
        return [run(check)]

    return Case(model, (torch.randn(2, 8192),), kwargs, steps)


def _pkv(family, size):
    from bench import decoders

    model = decoders.causal_lm(family, size)
    config, layers = model.config, model.config.num_hidden_layers
    wrapper = decoders.WithPast(model).eval()
    args = decoders.step_inputs(config, 2, 3, 4)

    def steps(run):
        first = decoders.step_inputs(config, 3, 5, 7, seed=1)
        out1 = run(first)
        out2 = run(decoders.next_step_inputs(config, first, list(out1[1:]), seed=2))
        return [out1, out2]

    return Case(wrapper, args, decoders.export_kwargs(layers), steps)


def _mapped_llm(scratch, name, config, dtype_name, run):
    """A Llama written once as safetensors shards into ``scratch/name`` (layer by layer), loaded back
    memory-mapped by ``from_pretrained``; traced at 1 x 8, checked at 2 x 12 when ``run``."""
    from bench import checkpoints

    dtype = getattr(torch, dtype_name)
    folder = os.path.join(scratch, name)
    checkpoints.write_llama(config, folder, dtype)
    model = checkpoints.load_llama(folder, dtype)
    case = _llm_case(model)
    last = config.num_hidden_layers - 1
    case.shards, case.layers = checkpoints.shard_files(folder), sorted({0, last // 2, last})
    if not run:
        case.steps = None
    return case


def _mapped(name, config, dtype_name, run=True):
    def build(scratch):
        from bench import checkpoints

        return _mapped_llm(scratch, name, getattr(checkpoints, config)(), dtype_name, run)

    return build


BUILDERS = {
    "llama_1b": lambda scratch: _llm("1b", "float32"),
    "llama_3b_bf16": lambda scratch: _llm("3b", "bfloat16"),
    "linears_2gib": lambda scratch: _linears(),
    "llama_pkv": lambda scratch: _pkv("llama", "small"),
    "gpt2_pkv": lambda scratch: _pkv("gpt2", "small"),
    # memory-mapped from safetensors shards written into --scratch: the 13B model (26 GB, larger
    # than the machine's memory; onnxruntime would load it whole, so it is not run), and a small
    # fp32 one that onnxruntime checks the same export path with
    "llama_small_mmap": _mapped("llama_small_mmap", "llama_small_config", "float32"),
    "llama_13b_bf16": _mapped("llama_13b_bf16", "llama_13b_config", "bfloat16", run=False),
}


def _export(exporter, module, args, path, opset, kwargs):

    from bench import exporters

    with exporters.silenced():
        if exporter == "ours":
            import torchscript_onnx

            torchscript_onnx.export(module, args, path, opset_version=opset, **kwargs)
        elif exporter == "legacy":
            torch.onnx.export(module, args, path, opset_version=opset, dynamo=False, **kwargs)
        else:
            # dynamo cannot turn dynamic_axes into dynamic_shapes for a forward taking *past:
            # it gets the same axes as dynamic_shapes, one entry per parameter of forward.
            shapes = tuple({axis: torch.export.Dim.DYNAMIC for axis in kwargs["dynamic_axes"].get(name, {})}
                           for name in kwargs["input_names"])
            from bench.decoders import WithPast

            if isinstance(module, WithPast):  # forward(input_ids, attention_mask, position_ids, *past)
                shapes = (*shapes[:3], shapes[3:])
            rest = {k: v for k, v in kwargs.items() if k != "dynamic_axes"}
            torch.onnx.export(module, args, path, opset_version=opset, dynamo=True, dynamic_shapes=shapes, **rest)


def _numpy(t):

    return (t.float() if t.dtype == torch.bfloat16 else t).detach().numpy()


# Our export's phases, timed by wrapping what ``api.build`` and ``Exported.save`` call:
# (module, attribute, label).
OUR_PHASES = [
    ("torchscript_onnx.api", "capture_mod.capture", "capture"),
    ("torchscript_onnx.api", "prepare", "prepare"),
    ("torchscript_onnx.api", "convert", "convert"),
    ("torchscript_onnx.api", "optimize", "optimize"),
    ("torchscript_onnx.api", "_model_proto", "serialize"),
    ("torchscript_onnx.pipeline.serialize", "save", "write"),
]


def _status_bytes() -> dict:
    """VmRSS, VmHWM and RssAnon of this process, in bytes."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon"):
                out[key] = int(rest.split()[0]) * 1024
    return out


class _AnonPeak:
    """The process's highest ``RssAnon`` (its own memory: heap and anonymous mappings, not the page
    cache of memory-mapped files), sampled every 20 ms by a thread while in ``with``."""

    def __enter__(self):
        self.peak = _status_bytes()["RssAnon"]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, _status_bytes()["RssAnon"])

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _status_bytes()["RssAnon"])


def _timed_phases() -> dict:
    from bench.phases import _wrap

    times: dict = {}
    for module_name, attr, label in OUR_PHASES:
        _wrap(times, module_name, attr, label)
    return times


def measure_here(name, exporter, opset, ort_runs, ort_runs_large, scratch=None) -> dict:
    """Export ``name`` with ``exporter`` in this (fresh) process and check the result."""
    import torch.onnx  # noqa: F401

    import torchscript_onnx  # noqa: F401
    from bench import checkpoints, exporters, models
    from bench.run import model_nodes

    scratch = scratch or tempfile.gettempdir()
    record = {"model": name, "exporter": exporter, "opset": opset, "error": None}
    with tempfile.TemporaryDirectory(dir=scratch) as tmp:
        tiny, tiny_args = models.LOCAL_MODELS["tiny_mlp"]()
        exporters.run(exporter, tiny.eval(), tiny_args, os.path.join(tmp, "warmup.onnx"), opset)
        del tiny, tiny_args
        gc.collect()
        rss_empty = _status_kib()["VmRSS"] * 1024
        start = time.perf_counter()
        case = BUILDERS[name](scratch)
        record["build_s"] = time.perf_counter() - start
        record["weight_bytes"] = models.weight_bytes(case.module)
        record["params"] = sum(p.numel() for p in case.module.parameters())
        record["memory_mapped"] = case.shards is not None

        def torch_run(inputs):
            out = case.module(*inputs)
            return list(out) if isinstance(out, tuple) else [out]

        reference = None
        if case.steps is not None:
            with torch.no_grad():
                reference = [[_numpy(t) for t in step] for step in case.steps(torch_run)]
        if case.shards:
            # The floor's read first: once the export has mapped the files' pages, nothing can
            # drop those it leaves cached, and the read would find them in memory.
            _floor_read(case, record)
            checkpoints.drop_cached(case.shards)  # the export starts from the disk, as after loading
        phases = _timed_phases() if exporter == "ours" else None
        gc.collect()
        record["hwm_reset"] = _reset_hwm()
        before = _status_bytes()
        record["model_rss"] = before["VmRSS"]
        record["model_own_rss"] = record["model_rss"] - rss_empty
        record["model_anon"] = before["RssAnon"]
        out_dir = os.path.join(tmp, "out")
        os.mkdir(out_dir)
        path = os.path.join(out_dir, "model.onnx")
        start = time.perf_counter()
        with _AnonPeak() as anon:
            try:
                _export(exporter, case.module, case.args, path, opset, case.kwargs)
            except Exception as e:  # noqa: BLE001 - recorded, not hidden
                record["error"] = "export: " + exporters.short_error(e)
        record["export_s"] = time.perf_counter() - start
        after = _status_bytes()
        record["peak_rss"] = after["VmHWM"]
        record["peak_above_model"] = record["peak_rss"] - record["model_rss"]
        record["peak_over_model_rss"] = record["peak_rss"] / record["model_rss"]
        record["peak_anon"] = anon.peak
        record["peak_anon_above_model"] = anon.peak - record["model_anon"]
        if phases:
            record["phases_s"] = {label: sum(times) for label, times in phases.items()}
        if record["error"] is not None:
            return record
        print(MARKER + json.dumps(record), flush=True)  # the export's figures, before the checks
        files = sorted(os.listdir(out_dir))
        record["files"] = len(files)
        record["bytes"] = sum(os.path.getsize(os.path.join(out_dir, f)) for f in files)
        record["nodes"] = model_nodes(path)
        try:
            onnx.checker.check_model(path)
            record["checker"] = True
        except Exception as e:  # noqa: BLE001
            record["checker"] = exporters.short_error(e)
        if case.layers:
            compared = checkpoints.compare_layers(path, case.module.model, case.layers, prefix="model.")
            record["layers_compared"] = {k: compared[k] for k in ("layers", "tensors", "bytes")}
            record["layers_match"] = not compared["mismatches"]
            if compared["mismatches"]:
                record["layers_mismatches"] = compared["mismatches"][:5]
        if not case.shards:
            _floor_forward(case, record)
        del case.module
        case.module = None
        gc.collect()
        if reference is not None:
            _check_in_onnxruntime(case, record, path, reference, ort_runs, ort_runs_large)
        if shutil.disk_usage(out_dir).free < 1.1 * record["bytes"]:
            # No room for the floor's file beside the export's (the 13B model fills half the free
            # disk). This favours the floor: on these machines a write right after deleting as
            # many bytes ran up to 6x faster than the same write beside them.
            for f in files:
                os.unlink(os.path.join(out_dir, f))
        os.sync()  # the floor's write does not wait for the export's
        record["floor_write_s"] = checkpoints.write_bytes(os.path.join(out_dir, "floor.bin"), record["bytes"])
        os.unlink(os.path.join(out_dir, "floor.bin"))
        record["floor_s"] = record.get("floor_read_s", record.get("floor_forward_s", 0.0)) + record["floor_write_s"]
        record["export_over_floor"] = record["export_s"] / record["floor_s"]
    return record


def _floor_read(case, record) -> None:
    """The first half of a memory-mapped model's floor: one read of its files from the disk."""
    from bench import checkpoints

    checkpoints.drop_cached(case.shards)
    start = time.perf_counter()
    checkpoints.read_all(case.shards)
    record["floor_read_s"] = time.perf_counter() - start


def _floor_forward(case, record) -> None:
    """The first half of a model in memory's floor: one no-grad forward pass at the traced size."""
    with torch.no_grad():
        start = time.perf_counter()
        case.module(*case.args)
        record["floor_forward_s"] = time.perf_counter() - start


def _check_in_onnxruntime(case, record, path, reference, ort_runs, ort_runs_large) -> None:
    import numpy as np
    import onnxruntime as ort

    from bench import exporters

    try:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        start = time.perf_counter()
        sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        record["ort_load_s"] = time.perf_counter() - start
        record["ort_loads"] = True
    except Exception as e:  # noqa: BLE001
        record["ort_loads"] = exporters.short_error(e)
        return
    names = [i.name for i in sess.get_inputs()]
    timed = []

    def run(inputs):
        feed = {n: _numpy(t) if isinstance(t, torch.Tensor) else t for n, t in zip(names, inputs)}
        start = time.process_time()
        out = sess.run(None, feed)
        timed.append((feed, time.process_time() - start))
        return [torch.from_numpy(o) for o in out]

    try:
        got = case.steps(run)
    except Exception as e:  # noqa: BLE001
        record["ort_run"] = exporters.short_error(e)
        return
    diff = 0.0
    for g_step, r_step in zip(got, reference):
        if len(g_step) != len(r_step):
            record["ort_run"] = f"{len(g_step)} outputs, PyTorch gives {len(r_step)}"
            return
        for g, r in zip(g_step, r_step):
            if tuple(g.shape) != r.shape:
                record["ort_run"] = f"output shape {tuple(g.shape)}, PyTorch gives {r.shape}"
                return
            diff = max(diff, float(np.abs(g.float().numpy() - r).max()))
    record["max_abs_diff"] = diff
    feed = timed[0][0]
    runs = ort_runs_large if record["weight_bytes"] > LARGE_BYTES else ort_runs
    times = []
    for _ in range(runs):
        start = time.process_time()
        sess.run(None, feed)
        times.append(time.process_time() - start)
    record["ort_ms"] = statistics.median(times) * 1e3
    record["ort_runs"] = runs


# A child is killed when the machine runs low on memory only if it holds this much of its own: one
# that holds less (ours on a memory-mapped model) is not what exhausts the machine.
SHARE_WORTH_KILLING = 2**30


def _child_anon(pid) -> int:
    """The child's ``RssAnon``: its own memory. A model memory-mapped from its checkpoint also has
    the files' pages in its RSS, which are page cache the kernel can drop, so the cap is on this."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def measure(name, exporter, opset, *, timeout, mem_cap, ort_runs, ort_runs_large, threads,
            min_available=2**29, scratch=None) -> dict:
    """``measure_here`` in a fresh interpreter, killed past ``timeout`` seconds or ``mem_cap`` bytes of
    its own memory (``RssAnon``), or when the machine's available memory falls below ``min_available``
    bytes (others' processes too)."""
    cmd = [sys.executable, "-m", "bench.llm", "--one", name, exporter, "--opset", str(opset),
           "--ort-runs", str(ort_runs), "--ort-runs-large", str(ort_runs_large), "--threads", str(threads)]
    if scratch:
        cmd += ["--scratch", scratch]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (REPO_ROOT, env.get("PYTHONPATH")) if p)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watch = {"max_anon": 0, "killed": None}

    def watchdog():
        while proc.poll() is None:
            anon = _child_anon(proc.pid)
            watch["max_anon"] = max(watch["max_anon"], anon)
            available = _available_bytes()
            if anon > mem_cap:
                watch["killed"] = f"killed: RssAnon {anon / 2**30:.1f} GB passed the cap of {mem_cap / 2**30:.1f} GB"
            elif available < min_available and anon > SHARE_WORTH_KILLING:
                watch["killed"] = (f"killed: the machine's available memory fell to {available / 2**30:.2f} GB "
                                   f"(floor {min_available / 2**30:.2f} GB) at RssAnon {anon / 2**30:.1f} GB")
            elif time.perf_counter() - start > timeout:
                watch["killed"] = f"killed: timed out after {timeout:.0f} s"
            if watch["killed"]:
                proc.kill()
                return
            time.sleep(0.2)

    thread = threading.Thread(target=watchdog, daemon=True)
    thread.start()
    stdout, stderr = proc.communicate()
    thread.join()
    wall = time.perf_counter() - start
    # The child prints its record after the export and again when every check is done: a child
    # killed during the checks still gives the export's figures (and says it was killed).
    lines = [line for line in stdout.splitlines() if line.startswith(MARKER)]
    if lines:
        record = json.loads(lines[-1][len(MARKER):])
        record["wall_s"] = wall
        record["child_max_anon"] = watch["max_anon"]
        if watch["killed"] or proc.returncode:
            record["error"] = (watch["killed"] or f"subprocess exit {proc.returncode}") + " after the export"
        return record
    tail = (stderr.strip().splitlines() or ["no output"])[-1]
    error = watch["killed"] or f"subprocess exit {proc.returncode}: {tail}"[:300]
    return {"model": name, "exporter": exporter, "opset": opset, "error": error, "wall_s": wall,
            "child_max_anon": watch["max_anon"]}


def _gb(x):
    return "n/a" if x is None else f"{x / 1e9:.2f}"


def _cell(x, fmt="{:.1f}"):
    if x is None:
        return "n/a"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, (int, float)):
        return fmt.format(x)
    return "err"


COLUMNS = ["model", "exporter", "export s", "floor s", "export/floor", "peak above model GB",
           "peak anon above model GB", "model RSS GB", "peak/model RSS", "files", "GB", "nodes", "checker",
           "layers match", "ORT loads", "max abs diff", "ORT ms"]
PHASE_COLUMNS = ["capture", "prepare", "convert", "optimize", "serialize", "write"]


def table(records) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    notes = []
    for r in records:
        if r.get("error") and "export_s" not in r:
            cells = [r["model"], r["exporter"], "err"] + ["n/a"] * (len(COLUMNS) - 3)
        else:
            cells = [r["model"], r["exporter"], _cell(r.get("export_s")), _cell(r.get("floor_s")),
                     _cell(r.get("export_over_floor"), "{:.2f}"), _gb(r.get("peak_above_model")),
                     _gb(r.get("peak_anon_above_model")), _gb(r.get("model_rss")),
                     _cell(r.get("peak_over_model_rss"), "{:.2f}"), _cell(r.get("files"), "{}"),
                     _gb(r.get("bytes")), _cell(r.get("nodes"), "{}"), _cell(r.get("checker")),
                     _cell(r.get("layers_match")), _cell(r.get("ort_loads")),
                     _cell(r.get("max_abs_diff"), "{:.2e}"), _cell(r.get("ort_ms"))]
        lines.append("| " + " | ".join(cells) + " |")
        for key in ("error", "checker", "ort_loads", "ort_run"):
            if isinstance(r.get(key), str):
                notes.append(f"- {r['model']} / {r['exporter']}: {key}: {r[key]}")
        if r.get("layers_mismatches"):
            notes.append(f"- {r['model']} / {r['exporter']}: layers differ: {r['layers_mismatches']}")
    return "\n".join(lines + ([""] + notes if notes else []) + ["", phase_table(records)])


def phase_table(records) -> str:
    """Our export's phases (seconds) beside the floor's two parts: one no-grad forward at the traced
    size (a model in memory) or one read of the checkpoint from the disk (a memory-mapped one), and
    one sequential buffered write of the same bytes with fsync."""
    columns = ["model", *PHASE_COLUMNS, "export s", "floor forward s", "floor read s", "floor write s",
               "floor s", "export/floor"]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in records:
        if r.get("exporter") != "ours" or "phases_s" not in r:
            continue
        phases = r["phases_s"]
        lines.append("| " + " | ".join([r["model"], *(_cell(phases.get(p), "{:.2f}") for p in PHASE_COLUMNS),
                                        _cell(r.get("export_s"), "{:.2f}"), _cell(r.get("floor_forward_s"), "{:.2f}"),
                                        _cell(r.get("floor_read_s"), "{:.2f}"), _cell(r.get("floor_write_s"), "{:.2f}"),
                                        _cell(r.get("floor_s"), "{:.2f}"), _cell(r.get("export_over_floor"), "{:.2f}")])
                     + " |")
    return "\n".join(lines)


def _available_bytes() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 8 * 2**30


def main(argv=None) -> list:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(ALL_MODELS))
    parser.add_argument("--exporters", default=",".join(EXPORTER_NAMES))
    parser.add_argument("--opset", type=int, default=18)
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per (model, exporter)")
    parser.add_argument("--mem-cap-gb", type=float, default=None)
    parser.add_argument("--min-available-gb", type=float, default=0.5,
                        help="kill the child when the machine's MemAvailable falls below this")
    parser.add_argument("--ort-runs", type=int, default=20)
    parser.add_argument("--ort-runs-large", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="torch threads in each child (0: torch's default)")
    parser.add_argument("--out-dir", default=RESULTS_DIR)
    parser.add_argument("--scratch", default=None,
                        help="where the memory-mapped models' checkpoints are written (once) and every export "
                             "goes (default: the system's temp folder); the 13B model needs 26 GB twice")
    parser.add_argument("--one", nargs=2, metavar=("MODEL", "EXPORTER"), help=argparse.SUPPRESS)
    ns = parser.parse_args(argv)
    if ns.one:

        if ns.threads > 0:
            torch.set_num_threads(ns.threads)
        record = measure_here(*ns.one, ns.opset, ns.ort_runs, ns.ort_runs_large, ns.scratch)
        print(MARKER + json.dumps(record), flush=True)
        return [record]
    names = [m for m in ns.models.split(",") if m]
    unknown = [m for m in names if m not in BUILDERS]
    if unknown:
        parser.error(f"unknown models {unknown}; known: {', '.join(BUILDERS)}")
    chosen = [e for e in ns.exporters.split(",") if e]
    cap = ns.mem_cap_gb * 2**30 if ns.mem_cap_gb else _available_bytes() - 3 * 2**30
    records = []
    os.makedirs(ns.out_dir, exist_ok=True)
    for name in names:
        for exporter in chosen:
            print(f"{name} / {exporter} ...", file=sys.stderr, flush=True)
            record = measure(name, exporter, ns.opset, timeout=ns.timeout, mem_cap=cap, ort_runs=ns.ort_runs,
                             ort_runs_large=ns.ort_runs_large, threads=ns.threads,
                             min_available=ns.min_available_gb * 2**30, scratch=ns.scratch)
            records.append(record)
            print(json.dumps(record), file=sys.stderr, flush=True)
            with open(os.path.join(ns.out_dir, "llm.json"), "w") as f:
                json.dump({"argv": sys.argv, "mem_cap": cap, "records": records}, f, indent=1)
    text = table(records)
    print(text)
    with open(os.path.join(ns.out_dir, "llm.md"), "w") as f:
        f.write(f"`python -m bench.llm {' '.join(sys.argv[1:])}`\n\n{text}\n")
    return records


if __name__ == "__main__":
    main()
