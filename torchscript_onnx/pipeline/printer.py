"""A readable text form of the built graph, one node per line with its module scope."""

from __future__ import annotations

import torch

from ..builder.ir import Graph, Value


def _value(value: Value | None) -> str:
    if value is None:
        return '""'
    dtype = str(value.dtype).replace("torch.", "") if value.dtype is not None else "?"
    shape = "" if value.shape is None else "[" + ",".join("?" if d is None else str(d) for d in value.shape) + "]"
    return f"%{value.name}: {dtype}{shape}"


def _attr(kind: str, value) -> str:
    if isinstance(value, torch.Tensor):
        return f"tensor({str(value.dtype).replace('torch.', '')}{list(value.shape)})" if value.numel() > 8 \
            else f"tensor({value.tolist()})"
    return repr(value)


def graph_text(graph: Graph, opset: int) -> str:
    return "\n".join([f"graph (opset {opset})"] + _body_lines(graph, "  "))


def _body_lines(graph: Graph, indent: str) -> list[str]:
    lines = [f"{indent}input  {_value(v)}" for v in graph.inputs]
    lines += [f"{indent}weight %{name}: {str(t.dtype).replace('torch.', '')}{list(t.shape)}"
              for name, t in graph.initializers.items()]
    for node in graph.nodes:
        bodies = [(k, v) for k, (kind, v) in node.attrs.items() if kind == "g" and isinstance(v, Graph)]
        attrs = ", ".join(f"{k}={_attr(kind, v)}" for k, (kind, v) in node.attrs.items()
                          if not (kind == "g" and isinstance(v, Graph)))
        op = f"{node.domain}::{node.op_type}" if node.domain else node.op_type
        outs = ", ".join(_value(v) for v in node.outputs)
        ins = ", ".join("" if v is None else f"%{v.name}" for v in node.inputs)
        where = f"  # {node.scope or '/'}" + (f" {node.source}" if node.source else "")
        lines.append(f"{indent}{outs} = {op}[{attrs}]({ins}){where}")
        for name, body in bodies:
            lines.append(f"{indent}  {name}:")
            lines += _body_lines(body, indent + "    ")
    lines += [f"{indent}output {_value(v)}" for v in graph.outputs]
    return lines
