"""Cheap walks over TorchScript graphs.

``node.inputs()``, ``node.outputs()`` and ``node.blocks()`` are pybind iterators that end by
throwing a C++ exception, which costs 20 to 100+ microseconds (more the more shared libraries the
process has loaded: the unwinder searches all of them). Walking every node that way costs more than
converting it. These helpers index instead (``inputsAt``/``outputsAt``) and only ask for the blocks
of nodes whose kind can have any.
"""

from __future__ import annotations

# Kinds that never carry blocks: aten:: ops (made from schemas, never with blocks) and the
# prim ops built without one. Other kinds (prim::If, prim::Loop, prim::With, prim::Closure, ...)
# are asked.
_LEAF_PRIMS = frozenset({
    "prim::Constant", "prim::ListConstruct", "prim::ListUnpack", "prim::TupleConstruct", "prim::TupleUnpack",
    "prim::TupleIndex", "prim::GetAttr", "prim::SetAttr", "prim::NumToTensor", "prim::device", "prim::dtype",
    "prim::layout", "prim::Uninitialized", "prim::unchecked_cast", "prim::RaiseException", "prim::PythonOp",
    "prim::CallMethod", "prim::CallFunction", "prim::DictConstruct", "prim::ListIndex", "prim::shape",
    "prim::min", "prim::max", "prim::data", "prim::requires_grad", "prim::is_cuda", "prim::Print",
    "prim::AutogradZero", "prim::AutogradAdd", "prim::ConstantChunk", "prim::MMTreeReduce",
    "prim::BroadcastSizes", "prim::ChunkSizes", "prim::ImplicitTensorToNum", "prim::StringIndex",
    "prim::isinstance", "prim::type", "prim::id", "prim::TypeCheck", "prim::Guard", "prim::Return",
    "prim::Param", "prim::Store", "prim::Load", "prim::Drop", "prim::unchecked_unwrap_optional",
    "prim::rpc_async", "prim::EnumName", "prim::EnumValue", "prim::tolist", "prim::Enter", "prim::Exit",
})


def may_have_blocks(kind: str) -> bool:
    return not (kind.startswith("aten::") or kind in _LEAF_PRIMS)


def inputs(node) -> list:
    return [node.inputsAt(k) for k in range(node.inputsSize())]


def outputs(node) -> list:
    return [node.outputsAt(k) for k in range(node.outputsSize())]


def blocks(node) -> list:
    return list(node.blocks()) if may_have_blocks(node.kind()) else []


def all_nodes(block) -> list:
    """Every node in ``block`` (a Graph or Block) and its nested blocks, each before its blocks' nodes."""
    found = []
    _collect(block, found)
    return found


def _collect(block, found: list) -> None:
    for node in block.nodes():
        found.append(node)
        if may_have_blocks(node.kind()):
            for sub in node.blocks():
                _collect(sub, found)


__all__ = ["all_nodes", "blocks", "inputs", "may_have_blocks", "outputs"]
