"""Remove arithmetic with a neutral constant: ``x * 1``, ``1 * x``, ``x / 1`` and, for integers,
``x + 0``, ``0 + x``, ``x - 0``.

Models write them where a factor or an offset happens to be neutral for this configuration:
transformers' attention passes ``scale=1.0`` to ``scaled_dot_product_attention`` (T5, Whisper,
which scale the query beforehand), Llama's rotary embedding multiplies cos and sin by an
``attention_scaling`` of 1.0, RoBERTa adds a ``past_key_values_length`` of 0 to its positions.
Each leaves a node over a whole tensor (T5-small: 18).

Exact only: multiplying or dividing by one gives every value back (NaN, infinities and -0.0
included); adding zero is exact for integers only (``-0.0 + 0.0`` is ``+0.0``), so float sums stay.
The neutral operand must be a constant that is not a weight (a weight that happens to hold ones,
as a freshly initialised norm's, stays read: users may feed or inspect it), and it must not
broadcast the other operand to a larger shape or change its type: every dim of the constant is 1
and its rank is at most the other operand's known rank.

The output is kept when it is a graph output or read by an If/Loop body (by name).
"""

from __future__ import annotations

import torch

from ...builder.ir import Graph, Node, Value
from .bypass import bypass

# op type -> (neutral element, the operand positions it may take, integers only)
NEUTRAL_OPERANDS = {
    "Mul": (1, (0, 1), False),
    "Div": (1, (1,), False),
    "Add": (0, (0, 1), True),
    "Sub": (0, (1,), True),
}

_INTEGER_DTYPES = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.uint16, torch.uint32,
                   torch.uint64)


def _is_neutral(graph: Graph, value: Value | None, neutral: int, other: Value) -> bool:
    if value is None or not value.is_const or value.is_param or value.name in graph.initializers:
        return False
    const = value.const
    if isinstance(const, bool) or not isinstance(const, (int, float, torch.Tensor)):
        return False
    tensor = const if isinstance(const, torch.Tensor) else torch.tensor(const)
    if tensor.numel() != 1 or tensor.dtype == torch.bool or tensor.is_complex():
        return False
    if tensor.dim() > 0 and (other.rank is None or tensor.dim() > other.rank):
        return False
    return tensor.item() == neutral


def neutral_input(graph: Graph, node: Node) -> Value | None:
    """The operand that ``node`` gives back unchanged, or None."""
    rule = NEUTRAL_OPERANDS.get(node.op_type)
    if rule is None or node.domain or len(node.inputs) != 2 or len(node.outputs) != 1:
        return None
    neutral, positions, integers_only = rule
    out = node.outputs[0]
    for position in positions:
        other = node.inputs[1 - position]
        if other is None or other.dtype is None or other.dtype != out.dtype:
            continue
        if integers_only and other.dtype not in _INTEGER_DTYPES:
            continue
        if other.shape is not None and out.shape is not None and len(other.shape) != len(out.shape):
            continue
        if _is_neutral(graph, node.inputs[position], neutral, other):
            return other
    return None


class RemoveNoopArithmetic:
    def run(self, graph: Graph) -> bool:
        return bypass(graph, neutral_input)
