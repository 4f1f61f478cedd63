"""Serialize: Graph -> ONNX protobuf bytes, with weights written once, straight from the tensors.

The model is encoded without its initializers by protobuf; each initializer is then appended by
hand as a ``GraphProto.initializer`` field whose ``raw_data`` bytes come from the tensor's own
memory. The protobuf wire format allows exactly this (the graph field's length is known up front),
so no copy of the weights is ever built in memory. Paths are written atomically: a temporary file
in the same folder, renamed over the target only when complete.
"""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Iterator

import onnx
import torch
from onnx import helper

from . import dtypes
from .ir import Graph, Value
from .lazy import LazyTensor

PRODUCER_NAME = "torchscript-onnx"
# The lowest IR version that knows each opset (onnx.helper.VERSION_TABLE); onnxruntime accepts it.
IR_VERSION_FOR_OPSET = {
    7: 3, 8: 3, 9: 4, 10: 5, 11: 6, 12: 7, 13: 7, 14: 7, 15: 8, 16: 8, 17: 8, 18: 8,
    19: 9, 20: 9, 21: 10, 22: 10, 23: 11, 24: 12, 25: 13, 26: 13,
}

_LEN = 2  # protobuf wire type of length-delimited fields
_MODEL_GRAPH = 7  # ModelProto.graph
_GRAPH_INITIALIZER = 5  # GraphProto.initializer
_TENSOR_RAW_DATA = 9  # TensorProto.raw_data


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(field: int) -> bytes:
    return _varint(field << 3 | _LEN)


def _value_info(value: Value) -> onnx.ValueInfoProto:
    info = onnx.ValueInfoProto(name=value.name)
    tensor_type = info.type.tensor_type
    if getattr(value, "sequence", False):
        tensor_type = info.type.sequence_type.elem_type.tensor_type
    if value.dtype is not None:
        tensor_type.elem_type = dtypes.to_onnx(value.dtype)
    if value.shape is not None:
        tensor_type.shape.SetInParent()
        for dim in value.shape:
            proto_dim = tensor_type.shape.dim.add()
            if isinstance(dim, int):
                proto_dim.dim_value = dim
            elif isinstance(dim, str):
                proto_dim.dim_param = dim
    return info


def tensor_proto(tensor: torch.Tensor, name: str = "") -> onnx.TensorProto:
    """A small tensor (attributes, constants) as a TensorProto with raw data."""
    proto = onnx.TensorProto(name=name, data_type=dtypes.to_onnx(tensor.dtype), dims=list(tensor.shape))
    proto.raw_data = _tensor_bytes(tensor).tobytes()
    return proto


def _tensor_bytes(tensor: torch.Tensor) -> memoryview:
    """The tensor's little-endian bytes without a copy when it is contiguous on the CPU."""
    if isinstance(tensor, LazyTensor):  # whole; initializers stream theirs in chunks instead
        tensor = tensor.materialize()
    tensor = tensor.detach()
    if tensor.is_quantized:
        tensor = tensor.int_repr()
    tensor = tensor.cpu().contiguous()
    if tensor.dtype == torch.bfloat16:
        tensor = tensor.view(torch.int16)
    elif tensor.dtype in (torch.float8_e5m2, torch.float8_e4m3fn):
        tensor = tensor.view(torch.uint8)
    return memoryview(tensor.numpy()).cast("B")


tensor_bytes = _tensor_bytes  # public: the optimizer compares tensors by these bytes


def _attribute(name: str, kind: str, value) -> onnx.AttributeProto:
    if kind == "t":
        return helper.make_attribute(name, tensor_proto(value))
    if kind == "ts":
        return helper.make_attribute(name, [tensor_proto(v) for v in value])
    if kind == "g":
        return helper.make_attribute(name, graph_proto(value, name=name) if isinstance(value, Graph) else value)
    if kind == "s":
        return helper.make_attribute(name, value.encode() if isinstance(value, str) else value)
    attr_type = {
        "i": onnx.AttributeProto.INT, "f": onnx.AttributeProto.FLOAT,
        "is": onnx.AttributeProto.INTS, "fs": onnx.AttributeProto.FLOATS, "ss": onnx.AttributeProto.STRINGS,
    }[kind]
    return helper.make_attribute(name, value, attr_type=attr_type)


def graph_proto(graph: Graph, name: str = "main_graph", keep_initializers_as_inputs: bool = False) -> onnx.GraphProto:
    """The graph without its initializers (``write_model`` streams those)."""
    proto = onnx.GraphProto(name=name)
    for node in graph.nodes:
        proto.node.append(onnx.NodeProto(
            op_type=node.op_type,
            domain=node.domain,
            name=node.name,
            input=["" if v is None else v.name for v in node.inputs],
            output=[v.name for v in node.outputs],
            attribute=[_attribute(k, kind, v) for k, (kind, v) in node.attrs.items()],
        ))
    proto.input.extend(_value_info(v) for v in graph.inputs)
    if keep_initializers_as_inputs:
        for name, tensor in graph.initializers.items():
            proto.input.append(_value_info(Value(name, tensor.dtype, tuple(tensor.shape))))
    proto.output.extend(_value_info(v) for v in graph.outputs)
    return proto


def model_proto_without_weights(graph: Graph, opset: int, custom_domains: dict[str, int],
                                keep_initializers_as_inputs: bool, producer_version: str,
                                metadata: dict[str, str] | None = None) -> onnx.ModelProto:
    model = onnx.ModelProto(
        ir_version=IR_VERSION_FOR_OPSET[opset],
        producer_name=PRODUCER_NAME,
        producer_version=producer_version,
    )
    model.opset_import.append(helper.make_opsetid("", opset))
    for domain, version in sorted(custom_domains.items()):
        model.opset_import.append(helper.make_opsetid(domain, version))
    for key, value in sorted((metadata or {}).items()):
        model.metadata_props.append(onnx.StringStringEntryProto(key=key, value=value))
    model.graph.CopyFrom(graph_proto(graph, keep_initializers_as_inputs=keep_initializers_as_inputs))
    return model


def _initializer_chunks(graph: Graph) -> Iterator[tuple[bytes, Iterator[memoryview]]]:
    """(field header, raw byte pieces) per initializer; together one GraphProto.initializer field.

    A lazy tensor's pieces are computed one row block at a time, each freed once written.
    """
    for name, tensor in graph.initializers.items():
        header = onnx.TensorProto(name=name, data_type=dtypes.to_onnx(tensor.dtype),
                                  dims=list(tensor.shape)).SerializeToString()
        if isinstance(tensor, LazyTensor):
            nbytes = tensor.numel() * tensor.element_size()
            pieces = (_tensor_bytes(rows) for rows in tensor.chunks())
        else:
            raw = _tensor_bytes(tensor)
            nbytes, pieces = raw.nbytes, iter((raw,))
        body_len = len(header) + len(_key(_TENSOR_RAW_DATA)) + len(_varint(nbytes)) + nbytes
        yield _key(_GRAPH_INITIALIZER) + _varint(body_len) + header + _key(_TENSOR_RAW_DATA) + _varint(nbytes), pieces


def _initializer_field_sizes(graph: Graph) -> int:
    total = 0
    for name, tensor in graph.initializers.items():
        header = onnx.TensorProto(name=name, data_type=dtypes.to_onnx(tensor.dtype),
                                  dims=list(tensor.shape)).ByteSize()
        nbytes = tensor.numel() * tensor.element_size() if not tensor.is_quantized else tensor.numel()
        body = header + len(_key(_TENSOR_RAW_DATA)) + len(_varint(nbytes)) + nbytes
        total += len(_key(_GRAPH_INITIALIZER)) + len(_varint(body)) + body
    return total


def write_model(model: onnx.ModelProto, graph: Graph, stream) -> None:
    """Write ``model`` (whose graph has no initializers) plus ``graph``'s initializers to ``stream``."""
    graph_bytes = model.graph.SerializeToString()
    rest = onnx.ModelProto()
    rest.CopyFrom(model)
    rest.ClearField("graph")
    stream.write(rest.SerializeToString())
    stream.write(_key(_MODEL_GRAPH) + _varint(len(graph_bytes) + _initializer_field_sizes(graph)))
    stream.write(graph_bytes)
    for header, pieces in _initializer_chunks(graph):
        stream.write(header)
        for raw in pieces:
            stream.write(raw)


def to_bytes(model: onnx.ModelProto, graph: Graph) -> bytes:
    buffer = io.BytesIO()
    write_model(model, graph, buffer)
    return buffer.getvalue()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def save(model: onnx.ModelProto, graph: Graph, f) -> None:
    """Write to a path atomically, or to a binary file-like object."""
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        folder = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=".torchscript-onnx-", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as stream:
                write_model(model, graph, stream)
            os.chmod(tmp, 0o666 & ~_umask())
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
        return
    write_model(model, graph, f)
