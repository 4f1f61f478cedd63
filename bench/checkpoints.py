"""Checkpoints on disk for bench.llm's memory-mapped cases, and checks of the weights an export wrote.

``write_llama`` writes a ``LlamaForCausalLM`` checkpoint as ``transformers`` does (``config.json``,
``model-0000k-of-0000n.safetensors`` shards, ``model.safetensors.index.json``) with random weights,
one shard per decoder layer plus one for the embedding and one for the final norm and output
projection, each shard's tensors made, written and freed before the next: writing a 26 GB model
takes the memory of one layer. The names and shapes come from the model built on the meta device
(no memory at all). ``load_llama`` loads it with ``from_pretrained``, whose safetensors tensors are
views of the files' pages (``mmap``), not copies: the model takes page cache, which the kernel can
drop and read again, instead of the process's own memory.

``compare_layers`` reads chosen decoder layers' weights from an exported file's external data
(``numpy.memmap``, nothing loaded whole) and compares them bit for bit with the PyTorch model's:
an initializer named after a ``state_dict`` key with that tensor, a transposed initializer (the
right input of a ``MatMul`` named after its ``nn.Linear``) with that weight transposed.
"""

from __future__ import annotations

import json
import os
import re
import time

import numpy as np
import torch

INDEX = "model.safetensors.index.json"


def llama_13b_config():
    """Llama-2-13B's dimensions (hidden 5120, 40 layers of 40 heads, intermediate 13824, vocab 32000):
    13.0B parameters, 26 GB in bfloat16."""
    from transformers import LlamaConfig

    return LlamaConfig(vocab_size=32000, hidden_size=5120, intermediate_size=13824, num_hidden_layers=40,
                       num_attention_heads=40, num_key_value_heads=40, max_position_embeddings=4096)


def llama_small_config():
    """A small Llama (hidden 512, 4 layers, 8 heads of which 4 kv heads; 30M parameters, fp32) for
    the numerical check of the memory-mapped path through onnxruntime."""
    from transformers import LlamaConfig

    return LlamaConfig(vocab_size=32000, hidden_size=512, intermediate_size=1376, num_hidden_layers=4,
                       num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=512)


def _shard_of(name: str, layers: int) -> int:
    """Shard 0: the embedding; 1..layers: decoder layer k-1; layers + 1: the final norm and lm_head."""
    match = re.search(r"\.layers\.(\d+)\.", name)
    if match:
        return int(match.group(1)) + 1
    return 0 if "embed_tokens" in name else layers + 1


def _random_like(meta: torch.Tensor, dtype: torch.dtype, generator: torch.Generator) -> torch.Tensor:
    """Values like a trained checkpoint's: matrices N(0, 0.02), norm weights near 1 (all distinct)."""
    values = torch.randn(meta.shape, generator=generator) * 0.02
    if meta.dim() == 1:
        values += 1.0
    return values.to(dtype)


def write_llama(config, folder: str, dtype: torch.dtype, seed: int = 0) -> int:
    """Write the checkpoint into ``folder`` unless a complete one is there (its index is written
    last); returns its weight bytes."""
    import safetensors.torch
    from transformers import LlamaForCausalLM

    with torch.device("meta"):
        model = LlamaForCausalLM(config)
    metas = dict(model.state_dict())
    total = sum(t.numel() for t in metas.values()) * dtype.itemsize
    index_path = os.path.join(folder, INDEX)
    if os.path.exists(index_path):
        with open(index_path) as f:
            if json.load(f)["metadata"]["total_size"] == total:
                return total
    os.makedirs(folder, exist_ok=True)
    layers = config.num_hidden_layers
    shards = layers + 2
    weight_map = {}
    generator = torch.Generator().manual_seed(seed)
    for shard in range(shards):
        file_name = f"model-{shard + 1:05d}-of-{shards:05d}.safetensors"
        names = [n for n in metas if _shard_of(n, layers) == shard]
        tensors = {n: _random_like(metas[n], dtype, generator) for n in names}
        safetensors.torch.save_file(tensors, os.path.join(folder, file_name), metadata={"format": "pt"})
        weight_map.update(dict.fromkeys(names, file_name))
        del tensors
    config.dtype = dtype
    config.save_pretrained(folder)
    with open(index_path, "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=1)
    return total


def load_llama(folder: str, dtype: torch.dtype):
    """The checkpoint as a ``LlamaForCausalLM`` (eval, sdpa attention) whose weights are memory-mapped."""
    from transformers import LlamaForCausalLM

    return LlamaForCausalLM.from_pretrained(folder, dtype=dtype, attn_implementation="sdpa").eval()


def shard_files(folder: str) -> list[str]:
    with open(os.path.join(folder, INDEX)) as f:
        names = sorted(set(json.load(f)["weight_map"].values()))
    return [os.path.join(folder, n) for n in names]


def drop_cached(paths: list[str]) -> None:
    """Drop these files' clean pages from the page cache (``POSIX_FADV_DONTNEED``), so that the next
    read comes from the disk; other files' pages are not touched."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def read_all(paths: list[str], block: int = 64 << 20) -> int:
    """Read the files once, sequentially, into one reused buffer; returns the bytes read."""
    buffer = bytearray(block)
    total = 0
    for path in paths:
        with open(path, "rb", buffering=0) as f:
            while True:
                n = f.readinto(buffer)
                if not n:
                    break
                total += n
    return total


def write_bytes(path: str, nbytes: int, block: int = 64 << 20) -> float:
    """Write ``nbytes`` to ``path`` with one sequential buffered write stream, then ``fsync``; returns
    the seconds that took. The bytes are random, as weights are (a disk or a host may write zeros
    faster than data), made before the clock starts."""
    buffer = memoryview(bytearray(os.urandom(block)))
    start = time.perf_counter()
    with open(path, "wb") as f:
        left = nbytes
        while left > 0:
            n = min(left, block)
            f.write(buffer[:n])
            left -= n
        f.flush()
        os.fsync(f.fileno())
    return time.perf_counter() - start


_NUMPY_OF_ONNX = {1: np.float32, 10: np.float16, 16: np.uint16, 11: np.float64}  # bf16 compared as bits


def _bits(tensor: torch.Tensor) -> np.ndarray:
    tensor = tensor.detach()
    if tensor.dtype == torch.bfloat16:
        tensor = tensor.view(torch.int16)
    array = tensor.contiguous().numpy()
    return array.view(np.uint16) if array.dtype == np.int16 else array


def compare_layers(onnx_path: str, model: torch.nn.Module, layers: list[int], prefix: str = "") -> dict:
    """Compare every initializer that the nodes of decoder ``layers`` read with the model's tensor,
    bit for bit; ``prefix``: what the exported module adds before the model's ``state_dict`` keys
    (``model.`` for a wrapper holding it as ``self.model``). Returns counts and the mismatches."""
    import onnx

    proto = onnx.load(onnx_path, load_external_data=False)
    folder = os.path.dirname(os.path.abspath(onnx_path))
    initializers = {t.name: t for t in proto.graph.initializer}
    state = {prefix + k: v for k, v in model.state_dict().items()}
    wanted = re.compile(r"/layers\.(\d+)/")
    compared, nbytes, mismatches, seen = 0, 0, [], set()
    for node in proto.graph.node:
        match = wanted.search(node.name)
        if not match or int(match.group(1)) not in layers:
            continue
        for position, name in enumerate(node.input):
            if name not in initializers or name in seen:
                continue
            seen.add(name)
            if name in state:
                expected = state[name]
            elif node.op_type == "MatMul" and position == 1 and node.name.endswith("/MatMul"):
                module = node.name[:-len("/MatMul")].strip("/").replace("/", ".")
                expected = state.get(f"{module}.weight")
                if expected is None:
                    mismatches.append(f"{name}: no weight {module}.weight for node {node.name}")
                    continue
                expected = expected.t()
            else:
                continue
            got = _stored(initializers[name], folder)
            want = _bits(expected)
            if got.shape != want.shape or not np.array_equal(got, want):
                mismatches.append(f"{name} (node {node.name}) differs from the model's tensor")
            compared += 1
            nbytes += want.nbytes
    return {"layers": layers, "tensors": compared, "bytes": nbytes, "mismatches": mismatches}


def _stored(tensor, folder: str) -> np.ndarray:
    """An initializer's values, from its external data file (memory-mapped) or its raw data."""
    import onnx

    dtype = _NUMPY_OF_ONNX[tensor.data_type]
    shape = tuple(tensor.dims)
    if tensor.data_location == onnx.TensorProto.EXTERNAL:
        info = {entry.key: entry.value for entry in tensor.external_data}
        return np.memmap(os.path.join(folder, info["location"]), dtype=dtype, mode="r",
                         offset=int(info.get("offset", 0)), shape=shape)
    return np.frombuffer(tensor.raw_data, dtype=dtype).reshape(shape)
