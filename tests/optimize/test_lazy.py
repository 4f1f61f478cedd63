"""Lazy initializers: computed in row blocks by serialize, written byte-identical to real tensors."""

from __future__ import annotations

import io
import itertools

import pytest
import torch
from optimize_helpers import context, model_bytes

from torchscript_onnx.pipeline import serialize
from torchscript_onnx.builder.lazy import LazyTensor
from torchscript_onnx.pipeline.printer import graph_text


def _scaled(sources, start, stop, factor):
    source = sources[0]
    return (source if source.dim() == 0 else source[start:stop]) * factor  # 0-d: (0, 1), whole


def _graph(weight, keep_as_inputs=False):
    g = context()
    x = g.graph.add_input("x", weight.dtype, tuple(weight.shape))
    w = g.graph.add_initializer("w", weight, const=False)
    g.graph.outputs = [g.op("Add", x, w)]
    model = serialize.model_proto_without_weights(g.graph, 17, {}, keep_as_inputs, "test")
    return g.graph, model


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int64])
@pytest.mark.parametrize("shape", [(300, 7), (5,), (1, 1), ()], ids=["rows", "vector", "one", "scalar"])
@pytest.mark.parametrize("keep_as_inputs", [False, True], ids=["initializers", "also_inputs"])
def test_written_like_the_real_tensor(shape, dtype, keep_as_inputs, monkeypatch):
    monkeypatch.setattr("torchscript_onnx.builder.lazy.CHUNK_BYTES", 64)  # many row blocks
    source = torch.arange(torch.Size(shape).numel()).reshape(shape).to(dtype)
    lazy = LazyTensor(shape, dtype, _scaled, (source,), (3,))
    real = source * 3
    assert (lazy.shape, lazy.dtype, lazy.numel(), lazy.element_size()) == (real.shape, real.dtype, real.numel(),
                                                                           real.element_size())
    assert torch.equal(lazy.materialize(), real)
    if shape:
        assert torch.equal(torch.cat(list(lazy.chunks(64))), real)
    lazy_graph, lazy_model = _graph(lazy, keep_as_inputs)
    real_graph, real_model = _graph(real, keep_as_inputs)
    assert serialize.to_bytes(lazy_model, lazy_graph) == serialize.to_bytes(real_model, real_graph)
    assert graph_text(lazy_graph, 17) == graph_text(real_graph, 17)


def test_wrong_recipe_output_is_an_error():
    lazy = LazyTensor((4, 2), torch.float32, _scaled, (torch.ones(4, 3),), (1.0,))
    with pytest.raises(RuntimeError, match="gave torch.float32"):
        lazy.materialize()


def test_keys_name_the_recipe():
    a, b = torch.ones(3), torch.ones(3)
    assert LazyTensor((3,), torch.float32, _scaled, (a,), (2,)).key == LazyTensor((3,), torch.float32, _scaled,
                                                                                    (a,), (2,)).key
    assert LazyTensor((3,), torch.float32, _scaled, (a,), (2,)).key != LazyTensor((3,), torch.float32, _scaled,
                                                                                    (b,), (2,)).key
    assert LazyTensor((3,), torch.float32, _scaled, (a,), (2,)).key != LazyTensor((3,), torch.float32, _scaled,
                                                                                    (a,), (3,)).key


def test_model_runs():
    import numpy as np
    import onnxruntime as ort

    source = torch.randn(6, 4)
    graph, _ = _graph(LazyTensor((6, 4), torch.float32, _scaled, (source,), (2.0,)))
    session = ort.InferenceSession(model_bytes(graph), providers=["CPUExecutionProvider"])
    x = np.ones((6, 4), np.float32)
    np.testing.assert_allclose(session.run(None, {"x": x})[0], x + 2 * source.numpy(), rtol=1e-6)


def test_a_written_block_is_freed_before_the_next_is_computed():
    """The writer holds one computed block at a time: when a lazy tensor's next rows are computed,
    the storage of every block before them is gone (``StorageWeakRef`` sees torch's own count)."""
    from torch.multiprocessing.reductions import StorageWeakRef

    blocks: list = []
    alive_when_computed: list[int] = []

    def rows(sources, start, stop):
        alive_when_computed.append(sum(not ref.expired() for ref in blocks))
        block = torch.arange(start * 4, stop * 4, dtype=torch.float32).reshape(stop - start, 4)
        blocks.append(StorageWeakRef(block.untyped_storage()))
        return block

    lazy = LazyTensor((8, 4), torch.float32, rows, (), chunk_bytes=2 * 4 * 4)  # two rows a block
    field = serialize._Initializer(lazy, b"", lazy.numel() * 4)
    stream = io.BytesIO()
    serialize._write_raw(stream, field, itertools.chain(field.pieces(), [None]))
    assert alive_when_computed == [0, 0, 0, 0]
    assert stream.getvalue() == torch.arange(32, dtype=torch.float32).numpy().tobytes()


@pytest.mark.parametrize("shape,dtype,chunk", [
    ((1376, 512), torch.float32, 128 << 10),  # a small weight: the smallest block
    ((2048, 5632), torch.float32, 2048 * 5632 * 4 // 64),  # a 64th of the weight
    ((5120, 13824), torch.bfloat16, 1 << 20),  # at most 1 MiB
    ((32000, 2048), torch.float32, 32000 * 64),  # tall: a cache line from each of W's rows
    ((32000, 512), torch.bfloat16, 32000 * 64),
], ids=["small", "fp32_wide", "bf16_wide", "fp32_tall", "bf16_tall"])
def test_transposed_weight_blocks(shape, dtype, chunk):
    from torchscript_onnx.pipeline.optimize.weight_transpose import transpose_chunk_bytes, transposed_rows

    weight = torch.randn(shape).to(dtype)
    assert transpose_chunk_bytes(weight) == chunk
    lazy = LazyTensor(shape[::-1], dtype, transposed_rows, (weight,), ((1, 0),), chunk_bytes=chunk)
    blocks = list(lazy.chunks())
    assert all(b.numel() * b.element_size() <= chunk for b in blocks)
    assert torch.equal(torch.cat(blocks), weight.t())
