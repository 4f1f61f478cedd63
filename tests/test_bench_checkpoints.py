"""bench.checkpoints: a Llama checkpoint written shard by shard, loaded memory-mapped, and the
weights of an exported file compared with the model's, layer by layer."""

import os
import sys

import numpy as np
import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

pytest.importorskip("safetensors")

from bench import checkpoints, decoders  # noqa: E402

import torchscript_onnx as tso  # noqa: E402


def _config():
    from transformers import LlamaConfig

    # linear weights past folding.MAX_FOLDED_ELEMENTS, so that they are written transposed lazily
    return LlamaConfig(vocab_size=256, hidden_size=320, intermediate_size=640, num_hidden_layers=3,
                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_written_loaded_mapped_and_compared(dtype, tmp_path):
    folder = os.fspath(tmp_path / "checkpoint")
    total = checkpoints.write_llama(_config(), folder, dtype)
    shards = checkpoints.shard_files(folder)
    assert len(shards) == 3 + 2 and total == sum(os.path.getsize(f) for f in shards) - sum(
        _header_bytes(f) for f in shards)
    assert checkpoints.write_llama(_config(), folder, dtype) == total  # complete: not written again
    model = checkpoints.load_llama(folder, dtype)
    assert model.dtype == dtype
    path = tmp_path / "out" / "m.onnx"
    path.parent.mkdir()
    args = (torch.randint(1, 256, (1, 4)), torch.ones(1, 4, dtype=torch.long))
    tso.export(decoders.LogitsOnly(model), args, path, opset_version=18, external_data=True,
               **decoders.LOGITS_ONLY_KWARGS)
    result = checkpoints.compare_layers(os.fspath(path), model, [0, 2], prefix="model.")
    assert result["mismatches"] == [] and result["tensors"] == 2 * 9  # 7 projections and 2 norms a layer

    # One changed byte in a transposed weight of layer 2 is found.
    import onnx

    proto = onnx.load(os.fspath(path), load_external_data=False)
    node = next(n for n in proto.graph.node if n.name == "/model/model/layers.2/mlp/down_proj/MatMul")
    tensor = next(t for t in proto.graph.initializer if t.name == node.input[1])
    offset = int(next(e.value for e in tensor.external_data if e.key == "offset"))
    data = np.memmap(os.fspath(path) + ".data", dtype=np.uint8, mode="r+")
    data[offset + 5] ^= 0xFF
    data.flush()
    del data
    mismatches = checkpoints.compare_layers(os.fspath(path), model, [0, 2], prefix="model.")["mismatches"]
    assert len(mismatches) == 1 and "down_proj" in mismatches[0]


def _header_bytes(path) -> int:
    with open(path, "rb") as f:
        return 8 + int.from_bytes(f.read(8), "little")
