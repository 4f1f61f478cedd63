"""Fold an inference BatchNormalization into the Conv or ConvTranspose it reads (eval exports only).

``BN(conv(x, W, b))`` with per-channel ``s = scale / sqrt(var + eps)`` equals
``conv(x, W * s, (b - mean) * s + B)``, the scale applied along the weight's output-channel axis
(dim 0 of a Conv weight; dim 1 of a ConvTranspose weight, per group). The legacy exporter does this
in eval mode. Folded only when:

- the conv output is read by the BatchNormalization alone (not a graph output, not by a subgraph);
- the BatchNormalization is the inference form: one output, no ``training_mode=1``, ``spatial=1``;
- the weight, the conv bias if any and the four BN parameters are initializers or Constant nodes,
  of floating dtypes, with one value per output channel.

The new weight is a ``LazyTensor``: it is computed a row block at a time while ``serialize`` writes
it, so no second copy of the weights exists during export. The recipe reads the original tensors,
so the same conv + BN folded twice (a block called twice) gives equal keys, which initializer
deduplication shares. The new bias is lazy too, for the same reason.
"""

from __future__ import annotations

import re

import torch

from ...builder.ir import Graph, Node, Value
from ...builder.lazy import LazyTensor
from .subgraphs import subgraph_references

CONV_OPS = ("Conv", "ConvTranspose")
FOLDED_NAME = "onnx::Conv"  # the legacy exporter's names for folded weights: onnx::Conv_<n>
_LAST_NUMBER = re.compile(r"[0-9]+$")


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def _channel_scale(bn_scale, var, eps: float, dtype: torch.dtype) -> torch.Tensor:
    return bn_scale.to(dtype) * torch.rsqrt(var.to(dtype) + eps)


def fused_weight_rows(sources, start: int, stop: int, transposed: bool, groups: int, eps: float) -> torch.Tensor:
    """Rows [start, stop) of ``W * s`` along the output-channel axis."""
    weight, bn_scale, var = sources
    dtype = _compute_dtype(weight.dtype)
    scale = _channel_scale(bn_scale, var, eps, dtype)
    rows = weight[start:stop].to(dtype)
    trailing = [1] * (weight.dim() - 2)
    if transposed:  # weight (C_in, C_out / groups, k...); row r belongs to group r // (C_in / groups)
        per_group = weight.shape[0] // groups
        group_of_row = torch.arange(start, stop) // per_group
        multiplier = scale.reshape(groups, weight.shape[1])[group_of_row].reshape(stop - start, -1, *trailing)
    else:  # weight (C_out, C_in / groups, k...)
        multiplier = scale[start:stop].reshape(-1, 1, *trailing)
    return (rows * multiplier).to(weight.dtype)


def fused_bias_rows(sources, start: int, stop: int, eps: float, out_dtype: torch.dtype) -> torch.Tensor:
    """Rows [start, stop) of ``(b - mean) * s + B``; ``b`` is zero when the conv has no bias."""
    conv_bias, bn_scale, bn_bias, mean, var = sources
    dtype = _compute_dtype(out_dtype)
    scale = _channel_scale(bn_scale[start:stop], var[start:stop], eps, dtype)
    bias = torch.zeros(stop - start, dtype=dtype) if conv_bias is None else conv_bias[start:stop].to(dtype)
    return ((bias - mean[start:stop].to(dtype)) * scale + bn_bias[start:stop].to(dtype)).to(out_dtype)


def _known_tensor(graph: Graph, value: Value | None):
    """The tensor of an initializer or Constant node output, else None."""
    if value is None:
        return None
    if value.is_param and value.name in graph.initializers:
        return graph.initializers[value.name]
    node = value.producer
    if node is not None and node.op_type == "Constant" and not node.domain and "value" in node.attrs:
        kind, tensor = node.attrs["value"]
        return tensor if kind == "t" else None
    return None


def _output_channels(conv: Node, weight) -> int | None:
    if len(weight.shape) < 3:
        return None
    if conv.op_type == "Conv":
        return weight.shape[0]
    return weight.shape[1] * conv.attr("group", 1)


def _foldable(graph: Graph, conv: Node, bn: Node):
    """(weight, conv bias or None, [scale, B, mean, var]) when ``bn`` folds into ``conv``, else None."""
    if bn.op_type != "BatchNormalization" or bn.domain or len(bn.outputs) != 1 or len(bn.inputs) != 5:
        return None
    if bn.attr("training_mode", 0) != 0 or bn.attr("spatial", 1) != 1:
        return None
    if bn.inputs[0] is not conv.outputs[0] or len(conv.outputs) != 1 or len(conv.inputs) not in (2, 3):
        return None
    weight = _known_tensor(graph, conv.inputs[1])
    has_bias = len(conv.inputs) == 3 and conv.inputs[2] is not None
    bias = _known_tensor(graph, conv.inputs[2]) if has_bias else None
    params = [_known_tensor(graph, v) for v in bn.inputs[1:]]
    if weight is None or (has_bias and bias is None) or any(p is None for p in params):
        return None
    if not all(t.dtype.is_floating_point for t in [weight, *params] + ([bias] if has_bias else [])):
        return None
    channels = _output_channels(conv, weight)
    if channels is None or conv.op_type == "ConvTranspose" and weight.shape[0] % conv.attr("group", 1):
        return None
    if any(tuple(t.shape) != (channels,) for t in params + ([bias] if has_bias else [])):
        return None
    return weight, bias, params


def _fold(graph: Graph, conv: Node, bn: Node, weight, bias, params, names: tuple[str, str],
          number: int | None) -> None:
    """Rewrite ``conv`` to produce ``bn``'s output with lazily folded weight and bias, named ``names``;
    ``number``: the legacy number of the new output."""
    scale, shift, mean, var = params
    eps = bn.attr("epsilon", 1e-5)
    transposed = conv.op_type == "ConvTranspose"
    new_weight = LazyTensor(weight.shape, weight.dtype, fused_weight_rows, (weight, scale, var),
                            (transposed, conv.attr("group", 1), eps))
    new_bias = LazyTensor((_output_channels(conv, weight),), weight.dtype, fused_bias_rows,
                          (bias, scale, shift, mean, var), (eps, weight.dtype))
    conv.inputs = [conv.inputs[0], graph.add_initializer(names[0], new_weight, const=False),
                   graph.add_initializer(names[1], new_bias, const=False)]
    result, own = bn.outputs[0], conv.outputs[0]  # readers keep reading the BN's output value
    if any(v is result for v in graph.outputs):  # a graph output keeps its name, or its number changes
        graph.value_names.release(own.name)
        if id(result) in graph.numbered_outputs and number is not None:
            graph.rename(result, _LAST_NUMBER.sub(str(number), result.name))
    else:  # and another value the Conv's, as in the legacy exporter (/c1/Conv_output_0)
        graph.value_names.release(result.name)
        result.name = own.name
    result.producer = conv
    conv.outputs[0] = result


class FoldConvBatchNorm:
    @staticmethod
    def _numbers(graph: Graph, conv: Node) -> tuple[tuple[str, str], int | None]:
        """Legacy's names for a folded Conv's weight and bias, and the number of its output. Its
        fold makes three values per Conv, numbered on from the values the converted graph has
        (``legacy_next_number``, set by the converter): the new Conv's output (which a graph
        output named by its number takes), then the weight and bias, named after their reader
        (``onnx::Conv_193``, ``onnx::Conv_194``). Legacy does not fold ConvTranspose: those take
        ``onnx::ConvTranspose`` with a suffix, outside that numbering."""
        number = graph.legacy_next_number
        if conv.op_type != "Conv" or number is None:
            return (f"onnx::{conv.op_type}",) * 2, None
        graph.legacy_next_number = number + 3
        return (f"{FOLDED_NAME}_{number + 1}", f"{FOLDED_NAME}_{number + 2}"), number

    def run(self, graph: Graph) -> bool:
        readers = graph.consumers()
        pinned = {id(v) for v in graph.outputs}
        inner = subgraph_references(graph)
        folded: set[int] = set()
        for conv in graph.nodes:
            if conv.op_type not in CONV_OPS or conv.domain or not conv.outputs:
                continue
            out = conv.outputs[0]
            users = readers.get(id(out), [])
            if len(users) != 1 or id(out) in pinned or out.name in inner:
                continue
            found = _foldable(graph, conv, users[0])
            if found is not None:
                names, number = self._numbers(graph, conv)
                _fold(graph, conv, users[0], *found, names=names, number=number)
                folded.add(id(users[0]))
        if folded:
            graph.nodes = [node for node in graph.nodes if id(node) not in folded]
        return bool(folded)
