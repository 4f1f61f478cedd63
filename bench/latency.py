"""onnxruntime latency of ours, legacy (``dynamo=False``) and dynamo graphs, in CPU time per run.

    python -m bench.latency [--models bert_base,llama] [--runs 50] [--opset 20] [--ops] [--distinct-weights]

For each model: the three exporters write a file each; every file is loaded in onnxruntime (CPU
provider, default graph optimisations, one intra- and one inter-op thread), warmed up, then run
``--runs`` times interleaved (ours, legacy, dynamo; legacy, dynamo, ours; ...) so they share the
machine's noise and none always runs first.
Each run is timed in CPU time of this process (``time.process_time``), which other processes on a
shared machine do not inflate the way they inflate wall time; the table gives the median. ``A/A``
is the median of a second session of our own file, run in the same rounds, over our first one:
two runs of the very same graph differ by that much, so ratios closer to 1 than it are noise.
``--ops`` also prints, per model, the op histogram of the graph onnxruntime runs after its own
optimisations (``optimized_model_filepath``), where ours differs from the fastest other exporter's:
the ops it fused in theirs and not in ours point at the pattern to fix. ``--distinct-weights`` adds
small noise to every parameter first: node counts then are those of a trained checkpoint, without
the Identity nodes that keep the names of a fresh model's equal initializers (zero biases, norm
weights of ones) that ours and legacy merge.

Models: the transformer sizes users run (BERT-base, RoBERTa-base, GPT-2 small, T5-small, a 4-layer
Llama of hidden size 512, Whisper-tiny's encoder, Swin-tiny at 224 x 224; random weights from
``transformers`` configs, nothing downloaded), a small UNet in plain ``torch.nn``, and any model of
``bench.models``.
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
from torch import nn  # noqa: E402

from bench import exporters, models  # noqa: E402
from bench.ort_timing import AGAIN, cpu_times, session  # noqa: E402
from bench.run import model_nodes  # noqa: E402

SEQ = 128


class ByKeyword(nn.Module):
    """Calls a transformers model with its inputs by keyword (its forward's positional order changes
    between releases; the legacy exporter passes positional arguments on)."""

    def __init__(self, model, names):
        super().__init__()
        self.model, self.names = model, names

    def forward(self, *args):
        out = self.model(**dict(zip(self.names, args)))
        return out.last_hidden_state


def _tokens(vocab, batch=1, seq=SEQ):
    return torch.randint(1, vocab, (batch, seq), generator=torch.Generator().manual_seed(0))


def _with_mask(vocab):
    # With a mask: without one, transformers 5 looks for packed sequences with aten::diff, which
    # the legacy exporter cannot convert.
    return _tokens(vocab), torch.ones(1, SEQ, dtype=torch.long)


def _bert_base():
    from transformers import BertConfig, BertModel

    config = BertConfig()
    return ByKeyword(BertModel(config), ["input_ids", "attention_mask"]), (_tokens(config.vocab_size), torch.ones(1, SEQ, dtype=torch.long))


def _roberta_base():
    from transformers import RobertaConfig, RobertaModel

    config = RobertaConfig(vocab_size=50265, max_position_embeddings=514, pad_token_id=1, type_vocab_size=1)
    return ByKeyword(RobertaModel(config), ["input_ids", "attention_mask"]), (_tokens(config.vocab_size), torch.ones(1, SEQ, dtype=torch.long))


def _gpt2():
    from transformers import GPT2Config, GPT2Model

    config = GPT2Config(use_cache=False)
    return ByKeyword(GPT2Model(config), ["input_ids", "attention_mask"]), _with_mask(config.vocab_size)


def _llama():
    from transformers import LlamaConfig, LlamaModel

    config = LlamaConfig(vocab_size=32000, hidden_size=512, intermediate_size=1376, num_hidden_layers=4,
                         num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=512, use_cache=False)
    return ByKeyword(LlamaModel(config), ["input_ids", "attention_mask"]), _with_mask(config.vocab_size)


def _t5_small():
    from transformers import T5Config, T5Model

    config = T5Config(d_model=512, d_kv=64, d_ff=2048, num_layers=6, num_heads=8, use_cache=False,
                      decoder_start_token_id=0)
    return ByKeyword(T5Model(config), ["input_ids", "attention_mask", "decoder_input_ids"]), (_tokens(config.vocab_size), torch.ones(1, SEQ, dtype=torch.long),
                             _tokens(config.vocab_size, seq=32))


def _whisper_tiny_encoder():
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    config = WhisperConfig(d_model=384, encoder_layers=4, encoder_attention_heads=6, encoder_ffn_dim=1536,
                           num_mel_bins=80, max_source_positions=1500)
    return ByKeyword(WhisperEncoder(config), ["input_features"]), (torch.randn(1, 80, 3000, generator=torch.Generator().manual_seed(0)),)


class _Block(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.norm1, self.conv1 = nn.GroupNorm(8, cin), nn.Conv2d(cin, cout, 3, padding=1)
        self.norm2, self.conv2 = nn.GroupNorm(8, cout), nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x):
        h = self.conv1(nn.functional.silu(self.norm1(x)))
        h = self.conv2(nn.functional.silu(self.norm2(h)))
        return h + self.skip(x)


class SmallUNet(nn.Module):
    """A diffusion-style UNet: GroupNorm + SiLU residual blocks, strided down, nearest up, skips."""

    def __init__(self, widths=(32, 64, 128)):
        super().__init__()
        self.stem = nn.Conv2d(3, widths[0], 3, padding=1)
        self.down = nn.ModuleList()
        self.pool = nn.ModuleList()
        cin = widths[0]
        for w in widths:
            self.down.append(_Block(cin, w))
            self.pool.append(nn.Conv2d(w, w, 3, stride=2, padding=1))
            cin = w
        self.mid = _Block(cin, cin)
        self.up = nn.ModuleList()
        for w in reversed(widths):
            self.up.append(_Block(cin + w, w))
            cin = w
        self.head = nn.Sequential(nn.GroupNorm(8, cin), nn.SiLU(), nn.Conv2d(cin, 3, 3, padding=1))

    def forward(self, x):
        h = self.stem(x)
        skips = []
        for block, pool in zip(self.down, self.pool):
            h = block(h)
            skips.append(h)
            h = pool(h)
        h = self.mid(h)
        for block in self.up:
            h = nn.functional.interpolate(h, scale_factor=2.0, mode="nearest")
            h = block(torch.cat([h, skips.pop()], 1))
        return self.head(h)


def _swin_tiny():
    from transformers import SwinConfig, SwinModel

    config = SwinConfig()  # swin-tiny-patch4-window7-224: embed 96, depths 2-2-6-2, heads 3-6-12-24
    return ByKeyword(SwinModel(config), ["pixel_values"]), (torch.randn(1, 3, 224, 224,
                                                                          generator=torch.Generator().manual_seed(0)),)


def _unet_small():
    return SmallUNet(), (torch.randn(1, 3, 64, 64, generator=torch.Generator().manual_seed(0)),)


MODELS = {
    "bert_base": _bert_base, "roberta_base": _roberta_base, "gpt2": _gpt2, "llama": _llama, "t5_small": _t5_small,
    "whisper_tiny_encoder": _whisper_tiny_encoder, "unet_small": _unet_small, "swin_tiny": _swin_tiny,
}
# The transformers among them, whose node counts are held to dynamo's (bench.run).
TRANSFORMERS = ("bert_base", "roberta_base", "gpt2", "llama", "t5_small", "whisper_tiny_encoder")


def build(name, distinct_weights=False):
    torch.manual_seed(0)
    if name in MODELS:
        model, args = MODELS[name]()
        model = model.eval()
    else:
        model, args = models.build(name)
    if distinct_weights:
        distinguish_weights(model)
    return model, args


def distinguish_weights(model: nn.Module) -> None:
    """Adds small noise to every floating parameter, so that no two hold the same values, as in a
    trained checkpoint. Freshly initialised models share many (zero biases, norm weights of ones):
    an exporter that merges equal initializers (ours and legacy, keeping every name as an Identity)
    or drops zero biases (dynamo's optimizer) then counts nodes no real checkpoint would give."""
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            if p.is_floating_point():
                p.add_(torch.randn(p.shape, generator=generator, dtype=p.dtype) * 0.02)


def op_histogram(path) -> collections.Counter:
    """Op types of the graph onnxruntime runs after its optimisations (ORT_ENABLE_ALL, the default)."""
    import onnx

    with tempfile.TemporaryDirectory() as tmp:
        optimized = os.path.join(tmp, "optimized.onnx")
        session(path, optimized)
        proto = onnx.load(optimized, load_external_data=False)
    return collections.Counter(n.op_type for n in proto.graph.node)


def bench(name, runs, opset, names=("ours", "legacy", "dynamo"), keep=None, distinct_weights=False) -> dict:
    model, args = build(name, distinct_weights)
    record = {"model": name, "export": {}, "nodes": {}, "ms": {}, "ops": {}}
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for n in names:
            path = os.path.join(keep or tmp, f"{name}.{n}.onnx")
            try:
                start = time.perf_counter()
                exporters.run(n, model, args, path, opset)
                record["export"][n] = time.perf_counter() - start
                paths[n] = path
                record["nodes"][n] = model_nodes(path)
            except Exception as e:  # noqa: BLE001
                record["export"][n] = exporters.short_error(e)
        # A second session of our file, interleaved with the others: how far apart two runs of the
        # same graph land on this machine, the noise floor the ratios are read against.
        timed = {**paths, AGAIN: paths["ours"]} if "ours" in paths else paths
        times, _ = cpu_times(timed, args, runs)
        for n, t in times.items():
            record["ms"][n] = statistics.median(t) * 1e3 if isinstance(t, list) else t
        record["ops"] = {n: op_histogram(p) for n, p in paths.items() if isinstance(times.get(n), list)}
    return record


def _cell(x):
    return f"{x:.1f}" if isinstance(x, float) else ("n/a" if x is None else "err")


def table(records, names) -> str:
    head = ["model"] + [f"{n} ms" for n in names] + ["ours/best", "ok", "A/A"] + [f"nodes {n}" for n in names] + \
        [f"ort nodes {n}" for n in names]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in records:
        ms = r["ms"]
        others = [ms[n] for n in names[1:] if isinstance(ms.get(n), float)]
        ratio = ms["ours"] / min(others) if isinstance(ms.get("ours"), float) and others else None
        ok = "n/a" if ratio is None else ("yes" if ratio <= 1.02 else "NO")
        again = ms.get(AGAIN)
        same = f"{again / ms['ours']:.3f}" if isinstance(again, float) and isinstance(ms.get("ours"), float) else "n/a"
        lines.append("| " + " | ".join(
            [r["model"]] + [_cell(ms.get(n)) for n in names] + [f"{ratio:.3f}" if ratio else "n/a", ok, same]
            + [str(r["nodes"].get(n, "n/a")) for n in names]
            + [str(sum(r["ops"][n].values())) if n in r["ops"] else "n/a" for n in names]) + " |")
    return "\n".join(lines)


def op_diff(record) -> str:
    ops = record["ops"]
    if "ours" not in ops:
        return ""
    lines = []
    for other in ("legacy", "dynamo"):
        if other not in ops:
            continue
        keys = sorted(set(ops["ours"]) | set(ops[other]))
        diff = [f"{k} {ops['ours'][k]}/{ops[other][k]}" for k in keys if ops["ours"][k] != ops[other][k]]
        lines.append(f"  ours/{other} after onnxruntime's optimisations: " + (", ".join(diff) or "same ops"))
    return f"{record['model']}:\n" + "\n".join(lines)


def main(argv=None):
    import torchscript_onnx

    parser = argparse.ArgumentParser(prog="python -m bench.latency", description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated names (default: %(default)s)")
    parser.add_argument("--runs", type=int, default=50, help="onnxruntime runs per file (default 50)")
    parser.add_argument("--opset", type=int, default=torchscript_onnx.DEFAULT_OPSET)
    parser.add_argument("--no-dynamo", action="store_true")
    parser.add_argument("--ops", action="store_true", help="print op histograms where ours differs")
    parser.add_argument("--keep", help="a folder to keep the exported files in")
    parser.add_argument("--distinct-weights", action="store_true",
                        help="add small noise to every parameter first, so that none are equal (as trained ones)")
    ns = parser.parse_args(argv)
    torch.set_num_threads(1)
    names = ("ours", "legacy") if ns.no_dynamo else ("ours", "legacy", "dynamo")
    records = []
    for name in [m.strip() for m in ns.models.split(",") if m.strip()]:
        records.append(bench(name, ns.runs, ns.opset, names, ns.keep, ns.distinct_weights))
        print(table(records[-1:], names).splitlines()[-1], flush=True)
        if ns.ops:
            print(op_diff(records[-1]), flush=True)
    command = "python -m bench.latency " + " ".join(sys.argv[1:] if argv is None else argv)
    print(f"\n`{command}` (opset {ns.opset}; CPU ms per run, median of {ns.runs}; ORT 1 thread)\n")
    print(table(records, names))
    for r in records:
        errors = {n: e for n, e in {**r["export"], **r["ms"]}.items() if isinstance(e, str)}
        if errors:
            print(f"- {r['model']}: {errors}")
    return records


if __name__ == "__main__":
    main()
