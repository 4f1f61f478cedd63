"""Graph optimisation passes, run in the order declared here.

Each pass is an object with ``run(graph) -> bool`` (whether it changed anything); a pass that fails
raises. Folding of constant subgraphs already happens while the graph is built
(``GraphContext.op``); these passes clean up what conversion leaves behind. Every pass logs its
node-count change at DEBUG level (logger ``torchscript_onnx.optimize``).
"""

from __future__ import annotations

import logging

from ...builder.ir import Graph
from .conv_batchnorm import FoldConvBatchNorm
from .cse import CommonSubexpressions
from .dead_code import DeadCode
from .identity import RemoveIdentity
from .initializers import DeduplicateInitializers
from .noop_arithmetic import RemoveNoopArithmetic
from .llm_ops import AttentionGroupedKV, FuseRMSNormalization, FuseRotaryEmbedding
from .noop_reshape import RemoveNoopReshape
from .slice_split import SlicesToSplit
from .weight_transpose import FoldWeightTranspose

logger = logging.getLogger("torchscript_onnx.optimize")  # the name docs/user_guide.md gives users


# The first opset with Attention, RMSNormalization and RotaryEmbedding
LLM_OPS_OPSET = 23


def passes(training: bool = False, initializers_are_inputs: bool = False, constant_folding: bool = True,
           opset: int | None = None) -> list:
    """The passes in order, for an export in training or eval mode.

    ``training``: parameters must stay what they are (no BN folding; initializers shared only when
    they are the same memory). ``initializers_are_inputs``: users may feed each initializer, so
    none is merged into another (as the legacy exporter). ``constant_folding`` (``do_constant_folding``):
    weights may be replaced by values computed from them (transposed weights). ``opset``: the
    target opset; from 23 on, hand-written RMS norms and rotary embeddings become the ops made for them.
    """
    order = [
        # Identity removal exposes dead Constant nodes and direct Conv -> BatchNormalization pairs;
        # dead code goes before folding so dead readers do not hide a conv's single reader.
        RemoveIdentity(),
        DeadCode(),
    ]
    if not training:
        order.append(FoldConvBatchNorm())
        if constant_folding and not initializers_are_inputs:
            # Users may not feed the weights: a transposed weight can replace the original.
            order.append(FoldWeightTranspose())
    if opset is not None and opset >= LLM_OPS_OPSET:
        # Opset 23's LLM ops for the patterns that mean them. Grouped kv after rotary: rotary
        # rewrites the key repeat_kv reads. Before CSE and the last dead-code pass, which clean up
        # the replaced nodes and what the fusions add.
        order += [FuseRMSNormalization(), FuseRotaryEmbedding(), AttentionGroupedKV()]
    order += [RemoveNoopReshape(), RemoveNoopArithmetic()]
    if not initializers_are_inputs:
        # Before CSE: nodes that read two copies of one constant (a mask each layer rebuilds) are
        # the same node only once the copies are one initializer.
        order.append(DeduplicateInitializers(by_value=not training))
    order.append(CommonSubexpressions())
    if opset is not None:
        # After CSE, which makes one Slice of two equal ones (equal pieces would not tile an axis);
        # after the LLM fusions, which match rotate_half by its Slices.
        order.append(SlicesToSplit(opset))
    order += [
        # Last: folding, deduplication and CSE leave unread initializers and Constant nodes.
        DeadCode(),
    ]
    return order


def optimize(graph: Graph, *, training: bool = False, initializers_are_inputs: bool = False,
             constant_folding: bool = True, opset: int | None = None) -> Graph:
    for optimization in passes(training, initializers_are_inputs, constant_folding, opset):
        before = len(graph.nodes), len(graph.initializers)
        changed = optimization.run(graph)
        logger.debug("%s: %d -> %d nodes, %d -> %d initializers%s", type(optimization).__name__, before[0],
                     len(graph.nodes), before[1], len(graph.initializers), "" if changed else " (unchanged)")
    return graph
