"""Module scopes: the short name a submodule's scope carries in node names (``/layer1/layer1.0/conv1``)."""

from __future__ import annotations


def scope_atom(name: str) -> str:
    """The atom TorchScript's traced scopes give the submodule with qualified ``name``: from its last
    non-numeric part on (``encoder.layers.0`` -> ``layers.0``, ``blocks.3.attn`` -> ``attn``)."""
    atoms = name.split(".")
    for i in range(len(atoms) - 1, -1, -1):
        if not atoms[i].isnumeric():
            return ".".join(atoms[i:])
    return name
