"""Serialize: Graph -> ONNX protobuf bytes, with weights written once, straight from the tensors.

The model is encoded without its initializers by protobuf; each initializer is then appended by
hand as a ``GraphProto.initializer`` field whose ``raw_data`` bytes come from the tensor's own
memory. The protobuf wire format allows exactly this (the graph field's length is known up front),
so no copy of the weights is ever built in memory: a weight memory-mapped from a checkpoint
(safetensors, ``torch.load(mmap=True)``) is written from the file's pages, which the kernel reads
ahead while the weight before it is written (``pages.read_ahead``), and a background thread prepares
the next piece (a lazy tensor's next row block) during each write (``_ahead``).

Paths are written atomically (``atomic_files``): a temporary file beside the target, renamed over
it only when complete.

A model of 2 GiB or more (protobuf's limit) keeps its weights as external data: the tensors' bytes
in one file next to the model, ``<model file name>.data``, each at an aligned offset, and the
initializers in the model refer to them by location, offset and length. Both files are written to
temporaries and renamed only when both are complete. Weights memory-mapped from a checkpoint go
into the data file cached ones first, each at its offset (``write_data``): a model larger than the
page cache is then read from the disk about once, by the trace, instead of twice.
"""

from __future__ import annotations

import dataclasses
import io
import os
import queue
import stat
import threading
from collections.abc import Iterator

import onnx
import torch
from onnx import helper

from ..builder import dtypes
from . import pages, progress
from .atomic_files import file_target, save_files
from ..builder.ir import Graph, Value
from ..builder.lazy import LazyTensor

PRODUCER_NAME = "torchscript-onnx"


def ir_version_for_opset(opset: int) -> int:
    """The lowest IR version that knows ``opset`` (onnx.helper.VERSION_TABLE); onnxruntime accepts it."""
    return helper.find_min_ir_version_for([helper.make_opsetid("", opset)])


_LEN = 2  # protobuf wire type of length-delimited fields
_MODEL_GRAPH = 7  # ModelProto.graph
_GRAPH_INITIALIZER = 5  # GraphProto.initializer
_TENSOR_RAW_DATA = 9  # TensorProto.raw_data

# Protobuf refuses messages of 2 GiB and more: a model that large keeps its weights in a data file.
PROTOBUF_LIMIT = 2**31
# In a data file: tensors under this many bytes stay inline (onnx's size_threshold), the others
# start at a multiple of ALIGNMENT (64 KiB, Windows' allocation granularity) or, under that size,
# of PAGE_SIZE, so that onnxruntime can memory-map them.
EXTERNAL_THRESHOLD = 1024
ALIGNMENT = 1 << 16
PAGE_SIZE = 4096


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
    elif getattr(value, "optional", False):
        tensor_type = info.type.optional_type.elem_type.tensor_type
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
    proto.raw_data = dtypes.tensor_bytes(tensor).tobytes()
    return proto




def _attribute(name: str, kind: str, value, value_info: bool = False, metadata=None) -> onnx.AttributeProto:
    if kind == "t":
        return helper.make_attribute(name, tensor_proto(value))
    if kind == "ts":
        return helper.make_attribute(name, [tensor_proto(v) for v in value])
    if kind == "g":
        if not isinstance(value, Graph):
            return helper.make_attribute(name, value)
        return helper.make_attribute(name, graph_proto(value, name=name, value_info=value_info, metadata=metadata))
    if kind == "s":
        return helper.make_attribute(name, value.encode() if isinstance(value, str) else value)
    if kind == "tp":  # a tensor type, held as (torch dtype, shape) so that it stays hashable
        dtype, shape = value
        return helper.make_attribute(name, helper.make_tensor_type_proto(dtypes.to_onnx(dtype), shape))
    attr_type = {
        "i": onnx.AttributeProto.INT, "f": onnx.AttributeProto.FLOAT,
        "is": onnx.AttributeProto.INTS, "fs": onnx.AttributeProto.FLOATS, "ss": onnx.AttributeProto.STRINGS,
    }[kind]
    return helper.make_attribute(name, value, attr_type=attr_type)


def graph_proto(graph: Graph, name: str = "main_graph", keep_initializers_as_inputs: bool = False,
                value_info: bool = False, metadata=None, into: onnx.GraphProto | None = None) -> onnx.GraphProto:
    """The graph without its initializers (``write_model`` streams those).

    ``value_info``: a ``value_info`` entry for every node output that is not a graph output and
    whose dtype is known (its shape as far as known: dim names, numbers, unknown dims), so that
    viewers show intermediate shapes. ``metadata`` (a ``provenance.NodeMetadata``): each node's
    provenance as its ``metadata_props``. Both apply to If/Loop bodies too. ``into``: an empty
    GraphProto to fill (a model's graph, which then needs no copy).
    """
    proto = onnx.GraphProto(name=name) if into is None else into
    proto.name = name
    for node in graph.nodes:
        proto.node.append(onnx.NodeProto(
            op_type=node.op_type,
            domain=node.domain,
            name=node.name,
            input=["" if v is None else v.name for v in node.inputs],
            output=[v.name for v in node.outputs],
            attribute=[_attribute(k, kind, v, value_info, metadata) for k, (kind, v) in node.attrs.items()],
            metadata_props=metadata.entries(node) if metadata is not None else None,
        ))
    proto.input.extend(_value_info(v) for v in graph.inputs)
    if keep_initializers_as_inputs:
        for name, tensor in graph.initializers.items():
            proto.input.append(_value_info(Value(name, tensor.dtype, tuple(tensor.shape))))
    proto.output.extend(_value_info(v) for v in graph.outputs)
    if value_info:
        outputs = {v.name for v in graph.outputs}
        proto.value_info.extend(_value_info(v) for node in graph.nodes for v in node.outputs
                                if v.dtype is not None and v.name and v.name not in outputs)
    return proto


def model_proto_without_weights(graph: Graph, opset: int, custom_domains: dict[str, int],
                                keep_initializers_as_inputs: bool, producer_version: str,
                                metadata: dict[str, str] | None = None, value_info: bool = False,
                                node_metadata=None, doc_string: str = "") -> onnx.ModelProto:
    """The model without its weights. ``metadata``: the model's ``metadata_props``;
    ``value_info`` and ``node_metadata``: see ``graph_proto``."""
    model = onnx.ModelProto(
        ir_version=ir_version_for_opset(opset),
        producer_name=PRODUCER_NAME,
        producer_version=producer_version,
        doc_string=doc_string,
    )
    model.opset_import.append(helper.make_opsetid("", opset))
    for domain, version in sorted(custom_domains.items()):
        model.opset_import.append(helper.make_opsetid(domain, version))
    for key, value in sorted((metadata or {}).items()):
        model.metadata_props.append(onnx.StringStringEntryProto(key=key, value=value))
    graph_proto(graph, keep_initializers_as_inputs=keep_initializers_as_inputs, value_info=value_info,
                metadata=node_metadata, into=model.graph)
    return model


# -- initializers: inline raw data or external data -------------------------------------------------


@dataclasses.dataclass
class _Initializer:
    """One ``GraphProto.initializer`` field as written: ``prefix`` (the field's key and length and the
    tensor's header) followed by ``nbytes`` raw bytes inline, or, when ``offset`` is set, nothing
    more: the bytes go to the data file at ``offset``."""

    tensor: torch.Tensor | LazyTensor
    prefix: bytes
    nbytes: int
    offset: int | None = None

    @property
    def field_size(self) -> int:
        return len(self.prefix) + (self.nbytes if self.offset is None else 0)

    def pieces(self) -> Iterator[memoryview]:
        """The raw bytes; a lazy tensor's one row block at a time, each freed once written."""
        if isinstance(self.tensor, LazyTensor):
            return _blocks(self.tensor)
        return iter((dtypes.tensor_bytes(self.tensor),))

    def sources(self) -> list:
        """The tensors its bytes are read from: itself, or a lazy tensor's sources."""
        return list(self.tensor.sources) if isinstance(self.tensor, LazyTensor) else [self.tensor]


def _blocks(tensor: LazyTensor) -> Iterator[memoryview]:
    """A lazy tensor's row blocks as bytes, holding none of them once the caller lets go of it: the
    block before is freed before the next is computed, not after (one block less at the peak)."""
    for rows in tensor.chunks():
        view = dtypes.tensor_bytes(rows)
        del rows
        yield view
        del view


def _aligned(offset: int, nbytes: int) -> int:
    step = ALIGNMENT if nbytes >= ALIGNMENT else PAGE_SIZE
    return -(-offset // step) * step


def _layout(graph: Graph, location: str | None) -> list[_Initializer]:
    """The initializers' fields: all inline (``location`` None), or those of ``EXTERNAL_THRESHOLD``
    bytes and more as references into the data file ``location``, one after another, aligned."""
    fields = []
    end = 0
    for name, tensor in graph.initializers.items():
        nbytes = tensor.numel() * tensor.element_size()
        header = onnx.TensorProto(name=name, data_type=dtypes.to_onnx(tensor.dtype), dims=list(tensor.shape))
        if location is not None and nbytes >= EXTERNAL_THRESHOLD:
            offset = _aligned(end, nbytes)
            end = offset + nbytes
            header.data_location = onnx.TensorProto.EXTERNAL
            for key, value in (("location", location), ("offset", str(offset)), ("length", str(nbytes))):
                header.external_data.append(onnx.StringStringEntryProto(key=key, value=value))
            body = header.SerializeToString()
            fields.append(_Initializer(tensor, _key(_GRAPH_INITIALIZER) + _varint(len(body)) + body, nbytes, offset))
        else:
            body = header.SerializeToString() + _key(_TENSOR_RAW_DATA) + _varint(nbytes)
            fields.append(_Initializer(tensor, _key(_GRAPH_INITIALIZER) + _varint(len(body) + nbytes) + body, nbytes))
    return fields


def _model_size(model: onnx.ModelProto, initializers: list[_Initializer]) -> int:
    """The bytes ``write_model`` writes for ``model`` plus ``initializers``, computed without writing."""
    graph_size = model.graph.ByteSize()
    rest = model.ByteSize() - (len(_key(_MODEL_GRAPH)) + len(_varint(graph_size)) + graph_size
                               if model.HasField("graph") else 0)
    graph_size += sum(field.field_size for field in initializers)
    return rest + len(_key(_MODEL_GRAPH)) + len(_varint(graph_size)) + graph_size


# Initializers of this many bytes and more have their raw bytes prepared by a background thread
# (``_ahead``) while the writes before them go on; below, a thread would cost more than it saves.
AHEAD_MIN_BYTES = 16 << 20
# Pieces the background thread may have ready before the writer takes them: each is a view of a
# tensor or a lazy tensor's row block (``lazy.CHUNK_BYTES``, or its own ``chunk_bytes``). One is
# enough to overlap; each more kept about 12 MB more of the heap while transposed weights were written.
AHEAD_PIECES = 1


class _End:
    """What ``_ahead``'s thread queues after the last item: the error that ended it, if any."""

    def __init__(self, error: BaseException | None = None):
        self.error = error


def _ahead(items: Iterator, depth: int = AHEAD_PIECES) -> Iterator:
    """The items of ``items``, produced by a background thread up to ``depth`` items before the
    caller takes them: computing a transposed weight's next block (torch lets go of the GIL) and
    reading a memory-mapped weight overlap the write of the one before. An error in the thread is
    raised to the caller; the thread stops when the caller does (also on an error or a signal)."""
    ready: queue.Queue = queue.Queue(depth)
    stop = threading.Event()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put(item):
                    return
        except BaseException as error:  # noqa: BLE001 - handed to the caller, which raises it
            put(_End(error))
            return
        put(_End())

    thread = threading.Thread(target=produce, name="torchscript_onnx weights ahead", daemon=True)
    try:
        thread.start()
    except RuntimeError:  # no thread to be had (a process limit, interpreter shutdown): in line
        yield from items
        return
    try:
        while True:
            item = ready.get()
            if isinstance(item, _End):
                if item.error is not None:
                    raise item.error
                return
            yield item
    finally:
        stop.set()
        thread.join()


def _raw_pieces(fields: list[_Initializer], mapped: set[int]) -> Iterator[memoryview | None]:
    """The raw bytes of ``fields`` in order, each field's pieces followed by None; prepared ahead
    by a thread when some are read from a file's pages (``mapped``: the ids of those sources, from
    ``_mapped_sources``), so the disk reads while the writer writes."""

    def pieces(mapped: set[int]) -> Iterator[memoryview | None]:
        if fields:
            pages.read_ahead(t for t in fields[0].sources() if id(t) in mapped)
        for k, field in enumerate(fields):
            if k + 1 < len(fields):  # read from the disk while this one is computed and written
                pages.read_ahead(t for t in fields[k + 1].sources() if id(t) in mapped)
            yield from field.pieces()
            yield None

    if not mapped:
        # weights in memory: nothing to read ahead. A thread would add a hand-off per piece
        # (ResNet-18 to memory: 0.15 s to write instead of 0.08) and, computing transposed blocks,
        # an allocator arena of its own (Llama-small's peak above the model: 43 MB, 24 in line)
        return pieces(set())
    return _ahead(pieces(mapped))


def _mapped_sources(fields: list[_Initializer]) -> set[int]:
    """The ids of the tensors ``fields`` read that are views of a file's pages; none looked for
    when the fields hold less than ``AHEAD_MIN_BYTES`` (reading ahead would save nothing)."""
    if sum(field.nbytes for field in fields) < AHEAD_MIN_BYTES:
        return set()
    return {id(t) for t in pages.mapped_from_files(s for f in fields for s in f.sources())}


def _write_raw(stream, field: _Initializer, pieces: Iterator[memoryview | None]) -> None:
    """Write ``field``'s raw bytes: the pieces up to the next None."""
    written = 0
    for raw in pieces:
        if raw is None:
            break
        stream.write(raw)
        written += raw.nbytes
        del raw  # a computed block is freed before the next one is computed
    if written != field.nbytes:  # the header promised nbytes: a mismatch would corrupt the file
        raise RuntimeError(f"initializer gave {written} bytes, {field.nbytes} expected ({field.tensor!r:.80})")


def _is_repeated(field) -> bool:
    repeated = getattr(field, "is_repeated", None)  # protobuf >= 6; older ones have ``label``
    return repeated if repeated is not None else field.label == field.LABEL_REPEATED


def message_pieces(message, skip: str | None = None) -> Iterator[bytes]:
    """``message.SerializeToString()`` (less the field named ``skip``) in pieces: one per element
    of a repeated message field (a node, a value_info), one per other field. Fields come in number
    order as protobuf writes them, so the pieces concatenate to its bytes; only one piece is in
    memory at a time, not a copy of the whole graph."""
    for field, value in message.ListFields():
        if field.name == skip:
            continue
        if _is_repeated(field) and field.type == field.TYPE_MESSAGE:
            key = _key(field.number)
            for item in value:
                data = item.SerializeToString()
                yield key + _varint(len(data)) + data
            continue
        single = type(message)()
        if _is_repeated(field):
            getattr(single, field.name).extend(value)
        elif field.type == field.TYPE_MESSAGE:
            getattr(single, field.name).CopyFrom(value)
        else:
            setattr(single, field.name, value)
        yield single.SerializeToString()


def write_model(model: onnx.ModelProto, graph: Graph, stream, initializers: list[_Initializer] | None = None) -> None:
    """Write ``model`` (whose graph has no initializers) plus ``graph``'s initializers to ``stream``:
    inline by default, or as laid out by ``_layout`` (``write_data`` writes the external ones).
    Neither the weights nor the rest of the model are ever serialized whole in memory."""
    if initializers is None:
        initializers = _layout(graph, None)
    for piece in message_pieces(model, skip="graph"):
        stream.write(piece)
    graph_size = model.graph.ByteSize()
    stream.write(_key(_MODEL_GRAPH) + _varint(graph_size + sum(field.field_size for field in initializers)))
    for piece in message_pieces(model.graph):
        stream.write(piece)
    inline = [field for field in initializers if field.offset is None]
    pieces = _raw_pieces(inline, _mapped_sources(inline))
    try:
        for field in initializers:
            stream.write(field.prefix)
            if field.offset is None:
                _write_raw(stream, field, pieces)
    finally:
        _close(pieces)


def write_data(initializers: list[_Initializer], stream) -> None:
    """The external initializers' bytes, each at its offset (zero padding in between).

    Weights memory-mapped from a checkpoint, into a file of our own: those whose pages the cache
    still holds (the trace read them last) are written first, each at its offset, and the rest
    after them; a model larger than the cache is then read from the disk about once, not twice.
    A data file larger than half the memory available leaves the cache as it is written, and so
    does each mapped weight once written (``pages.streams_out``)."""
    external = [field for field in initializers if field.offset is not None]
    mapped = _mapped_sources(external)
    fd = _file_descriptor(stream) if mapped else None
    if fd is None:
        _write_in_order(external, stream, mapped)
        return

    def mapped_of(field: _Initializer) -> list:
        return [t for t in field.sources() if id(t) in mapped]

    end = max(field.offset + field.nbytes for field in external)
    cached_first = sorted(external, key=lambda field: -round(pages.resident_fraction(mapped_of(field)), 1))
    behind = pages.WriteBehind(fd) if pages.streams_out(end) else None
    pieces = _raw_pieces(cached_first, mapped)
    try:
        for field in cached_first:
            stream.seek(field.offset)
            _write_raw(stream, field, pieces)
            if behind is not None:
                stream.flush()
                behind.written(field.offset, field.nbytes)
                pages.page_out(mapped_of(field))
        stream.truncate(end)  # the padding after the last field written, if it was not the last one
        if behind is not None:
            stream.flush()
            behind.finish()
    finally:
        _close(pieces)


def _write_in_order(external: list[_Initializer], stream, mapped: set[int]) -> None:
    end = 0
    pieces = _raw_pieces(external, mapped)
    try:
        for field in external:
            stream.write(bytes(field.offset - end))
            _write_raw(stream, field, pieces)
            end = field.offset + field.nbytes
    finally:
        _close(pieces)


def _file_descriptor(stream) -> int | None:
    """The descriptor of a regular file ``stream`` writes to (and may seek in), else None."""
    try:
        fd = stream.fileno()
        return fd if stat.S_ISREG(os.fstat(fd).st_mode) and stream.seekable() else None
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None


def _close(pieces: Iterator) -> None:
    """Stop ``_ahead``'s thread now rather than when the garbage collector finds the generator."""
    close = getattr(pieces, "close", None)
    if close is not None:
        close()


def _size_text(size: int) -> str:
    return f"{size / 2**30:.2f} GiB ({size} bytes)"


def model_size(model: onnx.ModelProto, graph: Graph) -> int:
    """The bytes of ``model`` with ``graph``'s weights inline, as ``to_bytes`` would write them."""
    return _model_size(model, _layout(graph, None))


def to_bytes(model: onnx.ModelProto, graph: Graph) -> bytes:
    """The model with its weights as one serialized ModelProto (protobuf's limit: under 2 GiB)."""
    initializers = _layout(graph, None)
    size = _model_size(model, initializers)
    if size >= PROTOBUF_LIMIT:
        raise ValueError(
            f"the model with its weights is {_size_text(size)}, over protobuf's 2 GiB limit for one "
            "ModelProto, so it cannot be returned as bytes or as an onnx.ModelProto; save it to a path "
            "instead (export(..., f='model.onnx')), which writes the weights as external data"
        )
    buffer = io.BytesIO()
    write_model(model, graph, buffer, initializers)
    return buffer.getvalue()


# -- files --------------------------------------------------------------------------------------------


def _is_path(f) -> bool:
    return isinstance(f, (str, os.PathLike))


def check_external_data(f, external_data) -> None:
    """The checks of ``save``'s ``external_data`` that need no model: callers run them before any work."""
    if external_data is not None and not isinstance(external_data, bool):
        raise TypeError(
            f"external_data must be None (automatic: external only over 2 GiB), True or False; got {external_data!r}"
        )
    if external_data and not _is_path(f):
        got = "None" if f is None else f"a {type(f).__name__}"
        raise ValueError(
            f"external_data=True writes the weights to a second file next to the model, so f must be a "
            f"path (str or os.PathLike); got f={got}. Pass a path, or external_data=None/False for one "
            "self-contained model"
        )


def weight_bytes(module: torch.nn.Module) -> int:
    """Bytes of a module's parameters and buffers, each storage counted once (tied weights share one)."""
    sizes = {}
    for tensor in [*module.parameters(), *module.buffers()]:
        if tensor.device.type == "meta":
            continue
        storage = tensor.untyped_storage()
        sizes[storage.data_ptr()] = storage.nbytes()
    return sum(sizes.values())


def check_fits_in_one_proto(module, f) -> None:
    """Refuse, before any work, a file object or ``f=None`` for a module whose weights alone pass 2 GiB:
    such a model can only be saved to a path, with its weights as external data."""
    if _is_path(f) or not isinstance(module, torch.nn.Module):
        return
    size = weight_bytes(module)
    if size >= PROTOBUF_LIMIT:
        got = "f=None (return a ModelProto)" if f is None else f"f is a {type(f).__name__}"
        raise ValueError(
            f"the model's weights are {_size_text(size)}, over protobuf's 2 GiB limit for one ModelProto, "
            f"and {got}: save it to a path instead (export(..., f='model.onnx')), which writes the weights as "
            "external data next to the model"
        )


def _save_single(model: onnx.ModelProto, graph: Graph, path: str, size: int | None = None) -> int:
    """Returns the bytes written."""
    if size is None:
        size = _model_size(model, _layout(graph, None))
    save_files([(file_target(path), lambda stream: write_model(model, graph, stream))], size)
    return size


def _save_external(model: onnx.ModelProto, graph: Graph, path: str) -> int:
    """The model file plus ``<its name>.data`` next to it, both complete before either is renamed
    into place; if the second rename fails, the data file it replaced is put back. Each of the two
    paths is written through its own symlink, if it is one."""
    folder = os.path.dirname(os.path.abspath(path))
    data_name = os.path.basename(path) + ".data"
    data_path = os.path.join(folder, data_name)
    initializers = _layout(graph, data_name)
    size = _model_size(model, initializers)
    if size >= PROTOBUF_LIMIT:
        raise ValueError(
            f"the model is {_size_text(size)} even with its weights as external data, over protobuf's "
            "2 GiB limit (large constants in node attributes?)"
        )
    if not any(field.offset is not None for field in initializers):  # nothing large enough to move out
        return _save_single(model, graph, path)
    data_target = file_target(data_path, "the external data file")
    model_target = file_target(path)
    data_size = max(field.offset + field.nbytes for field in initializers if field.offset is not None)
    save_files([(data_target, lambda stream: write_data(initializers, stream)),
                 (model_target, lambda stream: write_model(model, graph, stream, initializers))],
                data_size + size)
    return data_size + size


def save(model: onnx.ModelProto, graph: Graph, f, external_data: bool | None = None, stage=None) -> None:
    """Write the model to a path, atomically, or to a binary file-like object.

    ``external_data``: None (default) writes one self-contained file unless it would reach
    protobuf's 2 GiB limit, then external data; True always external data; False never (a model
    over the limit is an error). External data: every tensor of ``EXTERNAL_THRESHOLD`` bytes or more
    goes to ``<model file name>.data`` next to the model, each at an aligned offset; it needs ``f``
    to be a path. Every check runs before anything is written.

    A path is written through a symlink to its target, keeps an existing file's mode, and is
    written in place when it is a device or FIFO (``/dev/null``, a named pipe); a regular file
    goes to a temporary file beside it, renamed over it only when complete, and removed on an
    error or on SIGTERM/SIGINT. Errors name the path as given. ``stage``: a
    ``progress.Progress`` that logs the write.
    """
    check_external_data(f, external_data)
    size = None
    if not external_data:
        size = _model_size(model, _layout(graph, None))
        if size >= PROTOBUF_LIMIT:
            if external_data is False:
                raise ValueError(
                    f"the model with its weights is {_size_text(size)}, over protobuf's 2 GiB limit for "
                    "one file: pass external_data=True (or leave it None) to write the weights to a "
                    "data file next to the model"
                )
            if not _is_path(f):
                raise ValueError(
                    f"the model with its weights is {_size_text(size)}, over protobuf's 2 GiB limit for "
                    f"one file, so its weights must go to a data file next to the model; f is a "
                    f"{type(f).__name__}: pass a path (str or os.PathLike) instead"
                )
            external_data = True
    if _is_path(f):
        path = os.fsdecode(os.fspath(f))
        written = (_save_external(model, graph, path) if external_data else _save_single(model, graph, path, size))
        where = repr(path) + (" and its .data file" if external_data else "")
    else:
        write_model(model, graph, f)
        written, where = size, f"a {type(f).__name__}"
    if stage is not None:
        def counted() -> dict:
            counts = progress.graph_counts(graph)
            return {"nodes": counts["nodes"], "initializers": counts["initializers"]}

        stage.lap("write", counted, bytes=written, to=where)
