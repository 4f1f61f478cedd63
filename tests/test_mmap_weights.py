"""Models whose weights are memory-mapped from a checkpoint export without copying them.

A model loaded from safetensors shards (``from_pretrained``) or with ``torch.load(mmap=True)`` +
``load_state_dict(assign=True)`` holds views of the files' pages. The export writes such a weight
from those pages, computes transposed weights a block at a time, and never takes a copy of a
weight into the process's own (anonymous) memory: checked here by where the written tensors live
and by the growth of ``RssAnon`` during the export of a model of a few hundred MB.
"""

from __future__ import annotations

import os
import threading

import numpy as np
import onnxruntime as ort
import pytest
import torch

import torchscript_onnx as tso
from bench import decoders
from torchscript_onnx.pipeline import pages, serialize
from torchscript_onnx.builder.lazy import LazyTensor

safetensors_torch = pytest.importorskip("safetensors.torch")
linux_only = pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="reads /proc/self/maps and status")


def _file_mappings(suffix: str) -> list[tuple[int, int]]:
    """Address ranges of this process's mappings of files whose name ends with ``suffix``."""
    ranges = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) > 5 and parts[5].endswith(suffix):
                low, high = (int(x, 16) for x in parts[0].split("-"))
                ranges.append((low, high))
    return ranges


def _mapped(tensor: torch.Tensor, ranges) -> bool:
    start, end = tensor.data_ptr(), tensor.data_ptr() + tensor.numel() * tensor.element_size()
    return any(low <= start and end <= high for low, high in ranges)


def _llama():
    """A Llama whose every linear weight has more than ``folding.MAX_FOLDED_ELEMENTS`` (smaller
    transposed weights are folded while the graph is built, as small copies)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=256, hidden_size=320, intermediate_size=640, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=64)
    config._attn_implementation = "sdpa"
    return LlamaForCausalLM(config).eval()


def _llama_from_shards(folder) -> torch.nn.Module:
    from transformers import LlamaForCausalLM

    model = _llama()
    model.save_pretrained(folder, max_shard_size="2MB")  # several shards
    assert len([n for n in os.listdir(folder) if n.endswith(".safetensors")]) > 1
    return LlamaForCausalLM.from_pretrained(folder, attn_implementation="sdpa").eval()


def _llama_from_torch_load(folder) -> torch.nn.Module:
    from transformers import LlamaForCausalLM

    model = _llama()
    os.makedirs(folder)
    path = os.path.join(folder, "weights.pt")
    torch.save(model.state_dict(), path)
    with torch.device("meta"):
        mapped = LlamaForCausalLM(model.config)
    mapped.load_state_dict(torch.load(path, mmap=True, weights_only=True), assign=True)
    # Buffers that are not in the state_dict (the rotary inverse frequencies) stay on the meta device.
    for module_name, module in mapped.named_modules():
        for name, buffer in list(module._buffers.items()):
            if buffer is not None and buffer.is_meta:
                module._buffers[name] = model.get_buffer(f"{module_name}.{name}" if module_name else name)
    mapped.config._attn_implementation = "sdpa"
    return mapped.eval()


LOADERS = {"safetensors_from_pretrained": (_llama_from_shards, ".safetensors"),
           "torch_load_mmap": (_llama_from_torch_load, "weights.pt")}


@linux_only
@pytest.mark.parametrize("loader", LOADERS, ids=list(LOADERS))
def test_mapped_llama_matches_eager_and_is_written_from_the_mapping(loader, tmp_path, monkeypatch):
    load, suffix = LOADERS[loader]
    model = load(os.fspath(tmp_path / "checkpoint"))
    ranges = _file_mappings(suffix)
    assert all(_mapped(p, ranges) for p in model.parameters())  # the loader gave views of the file
    # what the export asks the kernel to read ahead: these, and never the process's own memory
    assert len(pages.mapped_from_files(model.parameters())) == len(list(model.parameters()))
    assert pages.mapped_from_files([torch.ones(1000)]) == []
    written = []
    pieces = serialize._Initializer.pieces

    def recorded(field):
        written.append(field.tensor)
        return pieces(field)

    monkeypatch.setattr(serialize._Initializer, "pieces", recorded)
    wrapped = decoders.LogitsOnly(model)
    args = (torch.randint(1, 256, (1, 5)), torch.ones(1, 5, dtype=torch.long))
    path = tmp_path / "out" / "m.onnx"
    path.parent.mkdir()
    tso.export(wrapped, args, path, opset_version=18, external_data=True, **decoders.LOGITS_ONLY_KWARGS)

    plain = [t for t in written if isinstance(t, torch.Tensor) and t.numel() * t.element_size() >= 1024]
    lazy = [t for t in written if isinstance(t, LazyTensor)]
    assert plain and lazy  # the embedding, norms as they are; the linear layers' weights transposed
    assert all(_mapped(t, ranges) for t in plain)
    assert all(_mapped(source, ranges) for t in lazy for source in t._sources)

    ids = torch.randint(1, 256, (2, 7), generator=torch.Generator().manual_seed(1))
    mask = torch.ones(2, 7, dtype=torch.long)
    mask[1, :2] = 0
    with torch.no_grad():
        want = wrapped(ids, mask).numpy()
    session = ort.InferenceSession(os.fspath(path), providers=["CPUExecutionProvider"])
    got = session.run(None, {"input_ids": ids.numpy(), "attention_mask": mask.numpy()})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


class Projections(torch.nn.Module):
    """Three 8192 x 4096 linear layers (128 MiB each in fp32) on a 3-D input: written transposed."""

    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(4096, 8192, bias=False),
                                           torch.nn.Linear(8192, 4096, bias=False),
                                           torch.nn.Linear(4096, 8192, bias=False)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def _rss_anon() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no RssAnon in /proc/self/status")


@linux_only
def test_export_takes_no_copy_of_mapped_weights(tmp_path):
    path = tmp_path / "weights.safetensors"
    source = Projections()
    safetensors_torch.save_file(source.state_dict(), os.fspath(path))
    del source
    with torch.device("meta"):
        model = Projections()
    model.load_state_dict(safetensors_torch.load_file(os.fspath(path)), assign=True)
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    largest = max(p.numel() * p.element_size() for p in model.parameters())
    x = torch.randn(1, 3, 4096)

    baseline = _rss_anon()
    peak = [baseline]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.002):
            peak[0] = max(peak[0], _rss_anon())

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        tso.export(model.eval(), (x,), tmp_path / "m.onnx", external_data=True)
    finally:
        done.set()
        sampler.join()
    grown = peak[0] - baseline
    # A copy of the weights would add 384 MiB, a copy of one weight 128 MiB. The export's own needs
    # are a few tens of MiB: the trace, the graph, and the 4 MiB blocks of a transposed weight (the
    # one being written, the next, the column blocks they are made of, and what the heap keeps of
    # freed ones until the tensor is done).
    assert grown < largest, (grown, largest, weight_bytes)
    data = np.fromfile(tmp_path / "m.onnx.data", dtype=np.float32)
    assert data.nbytes >= weight_bytes


class Stack(torch.nn.Module):
    """An embedding and six 1024 x 1024 linear layers: 28 MiB in fp32, enough for the writer's
    memory-mapped path (``serialize.AHEAD_MIN_BYTES``), some written as they are, most transposed."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(1024, 1024)
        self.layers = torch.nn.ModuleList([torch.nn.Linear(1024, 1024, bias=k % 2 == 0) for k in range(6)])

    def forward(self, ids):
        x = self.embed(ids)
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


# How the writer may order the weights of a memory-mapped model, each at its offset: all reported
# cached, as the initializers come; cached first, with the cache reported fuller for later weights
# (the reverse order); and that order again with each written range sent to the disk and dropped
# from the cache and each weight written paged out (what a data file larger than half the memory
# gets). The cache is reported, not read: what the kernel keeps of a fresh file is its business.
WRITE_ORDERS = {"as_cached": (False, False), "reversed": (True, False), "reversed_streamed": (True, True)}


@linux_only
@pytest.mark.parametrize("order", WRITE_ORDERS, ids=list(WRITE_ORDERS))
def test_mapped_weights_written_in_any_order_give_the_same_files(order, tmp_path, monkeypatch):
    torch.manual_seed(0)
    source = Stack().eval()
    ids = torch.randint(0, 1024, (2, 3))
    tso.export(source, (ids,), tmp_path / "memory.onnx", external_data=True, input_names=["ids"],
               dynamic_axes={"ids": {0: "batch", 1: "seq"}})
    safetensors_torch.save_file(source.state_dict(), os.fspath(tmp_path / "weights.safetensors"))
    with torch.device("meta"):
        model = Stack()
    model.load_state_dict(safetensors_torch.load_file(os.fspath(tmp_path / "weights.safetensors")), assign=True)
    assert len(pages.mapped_from_files(model.parameters())) == len(list(model.parameters()))

    reverse, streamed = WRITE_ORDERS[order]
    fullness = iter([k / 10 for k in range(11)] if reverse else [1.0] * 11)  # the writer tells tenths apart
    monkeypatch.setattr(pages, "resident_fraction", lambda tensors: next(fullness))
    monkeypatch.setattr(pages, "streams_out", lambda nbytes: streamed)
    calls = {"written": 0, "page_out": 0}
    written, page_out = pages.WriteBehind.written, pages.page_out

    def count_written(self, offset, nbytes):
        calls["written"] += 1
        return written(self, offset, nbytes)

    def count_page_out(tensors):
        calls["page_out"] += 1
        return page_out(tensors)

    monkeypatch.setattr(pages.WriteBehind, "written", count_written)
    monkeypatch.setattr(pages, "page_out", count_page_out)
    offsets = []
    write_raw = serialize._write_raw

    def recorded_write(stream, field, pieces):
        if field.offset is not None:
            offsets.append(field.offset)
        return write_raw(stream, field, pieces)

    monkeypatch.setattr(serialize, "_write_raw", recorded_write)
    tso.export(model.eval(), (ids,), tmp_path / "mapped.onnx", external_data=True, input_names=["ids"],
               dynamic_axes={"ids": {0: "batch", 1: "seq"}})

    fields = 10  # the embedding, the six weights and the three biases
    assert len(offsets) == fields
    assert offsets == (sorted(offsets, reverse=True) if reverse else sorted(offsets))
    assert calls == ({"written": fields, "page_out": fields} if streamed else {"written": 0, "page_out": 0})
    for suffix in (".onnx", ".onnx.data"):
        assert (tmp_path / f"mapped{suffix}").read_bytes().replace(b"mapped.onnx", b"memory.onnx") == \
            (tmp_path / f"memory{suffix}").read_bytes()
    other = torch.randint(0, 1024, (3, 5))
    session = ort.InferenceSession(os.fspath(tmp_path / "mapped.onnx"), providers=["CPUExecutionProvider"])
    with torch.no_grad():
        want = source(other).numpy()
    np.testing.assert_allclose(session.run(None, {"ids": other.numpy()})[0], want, rtol=1e-4, atol=1e-4)


@linux_only
def test_resident_fraction_counts_the_pages_in_memory(tmp_path):
    """Pages known to be in memory count as such, in the process's own memory and in a file's
    mapping once read; none of a file nothing has read yet (holes, so that no earlier write left
    them in the cache)."""
    touched = torch.ones(1 << 20)  # 4 MiB of the process's own memory, every page written
    assert pages.resident_fraction([touched]) == 1.0
    path = tmp_path / "weights.safetensors"
    safetensors_torch.save_file({"w": torch.ones(1 << 20)}, os.fspath(path))
    mapped = safetensors_torch.load_file(os.fspath(path))["w"]
    assert pages.mapped_from_files([mapped]) == [mapped]
    float(mapped.sum())  # reads every page
    assert pages.resident_fraction([mapped]) == 1.0
    assert pages.resident_fraction([]) == 1.0  # nothing to read: nothing costs a read
    sparse = tmp_path / "holes.bin"
    with open(sparse, "wb") as f:
        f.truncate(4 << 20)  # a file of holes: no page of it is in memory until something reads it
    unread = torch.from_file(os.fspath(sparse), shared=False, size=1 << 20, dtype=torch.float32)
    assert pages.mapped_from_files([unread]) == [unread]
    assert pages.resident_fraction([unread]) == 0.0
    float(unread.sum())
    assert pages.resident_fraction([unread]) == 1.0


@pytest.mark.parametrize("sizes", [
    [4096] * 40,  # many small weights (norms): the ranges add up before one is dropped
    [1 << 16, 4096, 4096, 1 << 16, 4096],  # a mix
    [1 << 20],  # one weight larger than the window
])
def test_write_behind_drops_each_range_once_oldest_first(sizes, tmp_path, monkeypatch):
    """Each written range is started at once; the oldest is waited for and dropped as soon as the
    ranges written after it reach WRITE_BEHIND_BYTES, and ``finish`` drops the rest, in order."""
    monkeypatch.setattr(pages, "WRITE_BEHIND_BYTES", 1 << 15)
    calls = []
    with open(tmp_path / "data", "wb") as f:
        behind = pages.WriteBehind(f.fileno())
        behind.sync_range = lambda fd, offset, nbytes, flags: calls.append((offset, nbytes, flags)) or 0
        offset = 0
        for nbytes in sizes:
            f.write(bytes(nbytes))
            f.flush()
            behind.written(offset, nbytes)
            offset += nbytes
            kept = list(behind.pending)
            assert sum(n for _, n in kept[1:]) < pages.WRITE_BEHIND_BYTES  # nothing kept that could go
            assert behind.pending_bytes == sum(n for _, n in kept)
        behind.finish()
    started = [(o, n) for o, n, flags in calls if flags == 2]
    dropped = [(o, n) for o, n, flags in calls if flags == 7]
    ranges = list(zip([sum(sizes[:k]) for k in range(len(sizes))], sizes))
    assert started == ranges and dropped == ranges
    assert not behind.pending and behind.pending_bytes == 0
