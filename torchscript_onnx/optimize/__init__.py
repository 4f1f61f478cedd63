"""Graph optimisation passes, run in the order declared here.

Each pass is an object with ``run(graph) -> bool`` (whether it changed anything). Folding of
constant subgraphs already happens while the graph is built (``GraphContext.op``); these passes
clean up what conversion leaves behind.
"""

from __future__ import annotations

import logging

from ..ir import Graph
from .dead_code import DeadCode
from .identity import RemoveIdentity

logger = logging.getLogger(__name__)

# Identity removal exposes dead Constant nodes, so dead-code elimination runs last.
PASSES = (RemoveIdentity(), DeadCode())


def optimize(graph: Graph) -> Graph:
    for optimization in PASSES:
        before = len(graph.nodes)
        changed = optimization.run(graph)
        if changed:
            logger.debug("%s: %d -> %d nodes", type(optimization).__name__, before, len(graph.nodes))
    return graph
