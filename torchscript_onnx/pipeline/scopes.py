"""Module scopes and source locations, read once for the converter and the provenance writer:
the short name a submodule's scope carries in node names (``/layer1/layer1.0/conv1``), the atoms
of a traced scope name, and the frames of a node's recorded source range.
"""

from __future__ import annotations

import re

# tracer stacks: "path(42): forward", one frame a line, innermost first
_TRACE_FRAME = re.compile(r"^(.*)\((\d+)\): (.*)$")
# script source ranges: their first line names the file and line
_SCRIPT_FRAME = re.compile(r'File "(.*)", line (\d+)')


def scope_atom(name: str) -> str:
    """The atom TorchScript's traced scopes give the submodule with qualified ``name``: from its last
    non-numeric part on (``encoder.layers.0`` -> ``layers.0``, ``blocks.3.attn`` -> ``attn``)."""
    atoms = name.split(".")
    for i in range(len(atoms) - 1, -1, -1):
        if not atoms[i].isnumeric():
            return ".".join(atoms[i:])
    return name


def traced_scope_atoms(scope_name: str) -> list[tuple[str, str]]:
    """``(class, attribute name)`` of each module below the root in the tracer's scope name
    (``__main__.M::/torch.nn.modules.container.Sequential::blocks/...Linear::l`` ->
    ``[("torch.nn...Sequential", "blocks"), ("...Linear", "l")]``)."""
    atoms = []
    for part in scope_name.split("/")[1:]:
        cls, separator, name = part.partition("::")
        if separator:
            atoms.append((cls, name))
    return atoms


def script_location(source_range: str) -> tuple[str, str] | None:
    """``(file, line)`` of a scripted node's source range, None for a traced node's."""
    found = _SCRIPT_FRAME.search(source_range.split("\n", 1)[0])
    return (found.group(1), found.group(2)) if found else None


def trace_frame(text: str) -> tuple[str, str, str] | None:
    """``(path, line, function)`` of one line of a traced node's source range, None for another line."""
    found = _TRACE_FRAME.match(text)
    return found.groups() if found else None
