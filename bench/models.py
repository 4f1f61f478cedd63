"""The models the benchmark runs: the zoo (``bench.zoo.MODELS``) plus a few tiny local ones.

A factory returns ``(model, example_args)``. The local models keep the runner usable (and its smoke
test fast) without the zoo; a zoo model of the same name wins.
"""

from __future__ import annotations

import torch


def _tiny_mlp():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    return model, (torch.randn(4, 32),)


def _tiny_cnn():
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(8 * 8 * 8, 10),
    )
    return model, (torch.randn(2, 3, 16, 16),)


LOCAL_MODELS = {"tiny_mlp": _tiny_mlp, "tiny_cnn": _tiny_cnn}


def zoo_models() -> dict:
    """The zoo's factories."""
    from bench.zoo import MODELS

    return dict(MODELS)


def all_models() -> dict:
    return {**LOCAL_MODELS, **zoo_models()}


def default_names() -> list[str]:
    """Every zoo model; the local tiny models only when there is no zoo."""
    return list(zoo_models()) or list(LOCAL_MODELS)


def build(name: str):
    """``(model in eval mode, args as a tuple)`` for the model called ``name``."""
    factories = all_models()
    if name not in factories:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(sorted(factories))}")
    model, args = factories[name]()
    if isinstance(model, torch.nn.Module):
        model.eval()
    if not isinstance(args, tuple):
        args = tuple(args) if isinstance(args, list) else (args,)
    return model, args


def weight_bytes(model) -> int:
    """Bytes held by the model's parameters and buffers, each storage counted once."""
    if not isinstance(model, torch.nn.Module):
        return 0
    seen, total = set(), 0
    for t in list(model.parameters()) + list(model.buffers()):
        storage = t.untyped_storage()
        key = storage.data_ptr()
        if key in seen:
            continue
        seen.add(key)
        total += storage.nbytes()
    return total


def flat_tensors(args) -> list:
    """The tensors in ``args`` in the order the exporters make them graph inputs."""
    out = []
    if isinstance(args, torch.Tensor):
        out.append(args)
    elif isinstance(args, (list, tuple)):
        for a in args:
            out.extend(flat_tensors(a))
    elif isinstance(args, dict):
        for a in args.values():
            out.extend(flat_tensors(a))
    return out
