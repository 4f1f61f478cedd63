"""Weights memory-mapped from a checkpoint, asked for from the disk before they are read.

A tensor from safetensors or ``torch.load(mmap=True)`` is a view of a file's pages: the first read
of a page faults, and the kernel reads a window around it and waits for it, one window at a time.
``MADV_WILLNEED`` on the whole tensor instead queues its reads at once and returns, so that the
disk reads while the process computes or writes what came before. The pages go to the page cache
(which the kernel can drop again), never to the process's own memory; for memory the process
owns, the advice does nothing.

Two readers use it: the trace, which reads each module's weights when the module is called
(``read_ahead_while_tracing``: the weights of the modules registered next, up to ``AHEAD_BYTES``),
and the writer, which reads each initializer's tensor (or a transposed weight's source) in turn
(``serialize`` asks for the next one while it writes the current one).
"""

from __future__ import annotations

import bisect
import contextlib
import ctypes
import functools
import mmap
from collections.abc import Iterable, Iterator

import torch

# How far ahead of the module being called its successors' weights are asked for: a few layers of
# a large model, so that the reads run during the layers before them without filling the cache.
AHEAD_BYTES = 512 << 20


@functools.cache
def _madvise():
    """The C library's ``madvise``, or None where there is none to call."""
    if not hasattr(mmap, "MADV_WILLNEED"):
        return None
    try:
        advise = ctypes.CDLL(None, use_errno=True).madvise
    except Exception:  # noqa: BLE001 - no C library to load: reading ahead is only a hint
        return None
    advise.argtypes, advise.restype = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int], ctypes.c_int
    return advise


def read_ahead(tensors: Iterable) -> None:
    """Ask the kernel to start reading the pages of these CPU tensors, without waiting for them
    (pass only ``mapped_from_files`` ones)."""
    advise = _madvise()
    if advise is None:
        return
    for tensor in tensors:
        if not isinstance(tensor, torch.Tensor) or tensor.device.type != "cpu" or tensor.numel() == 0:
            continue
        start = tensor.data_ptr() // mmap.PAGESIZE * mmap.PAGESIZE
        end = tensor.data_ptr() + tensor.numel() * tensor.element_size()
        advise(start, end - start, mmap.MADV_WILLNEED)  # a hint: its result does not matter


def _file_ranges() -> list[tuple[int, int]]:
    """Sorted address ranges of this process's mappings of files (Linux; elsewhere none)."""
    ranges = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(maxsplit=5)
                if len(parts) == 6 and parts[4] != "0" and parts[5].startswith("/"):
                    low, high = parts[0].split("-")
                    ranges.append((int(low, 16), int(high, 16)))
    except OSError:
        return []
    return sorted(ranges)


def mapped_from_files(tensors: Iterable) -> list[torch.Tensor]:
    """Those of ``tensors`` that are views of a file's pages. Only those are worth advising: on the
    process's own memory the advice reads nothing, yet costs a walk of the tensor's page tables
    (it made tracing a 0.9 GB model in memory three times slower)."""
    if _madvise() is None:
        return []
    ranges = _file_ranges()
    starts = [low for low, _ in ranges]
    found = []
    for tensor in tensors:
        if not isinstance(tensor, torch.Tensor) or tensor.device.type != "cpu" or tensor.numel() == 0:
            continue
        k = bisect.bisect_right(starts, tensor.data_ptr()) - 1
        if k >= 0 and tensor.data_ptr() < ranges[k][1]:
            found.append(tensor)
    return found


def _nbytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


@contextlib.contextmanager
def read_ahead_while_tracing(model) -> Iterator[None]:
    """While in ``with``: when a module of ``model`` is called, the weights of the modules registered
    from it on (its own included), up to ``AHEAD_BYTES``, are asked for, each once. Models call
    their modules in about the order they register them (a decoder's layers, a layer's
    projections). Nothing happens for a model whose weights are fewer than ``AHEAD_BYTES``."""
    if not isinstance(model, torch.nn.Module) or _madvise() is None:
        yield
        return
    owners = [(module, [*module._parameters.values(), *module._buffers.values()]) for module in model.modules()]
    owners = [(module, [t for t in tensors if t is not None]) for module, tensors in owners]
    owners = [(module, tensors) for module, tensors in owners if tensors]
    if _nbytes(t for _, tensors in owners for t in tensors) < AHEAD_BYTES:
        yield
        return
    mapped = {id(t) for t in mapped_from_files(t for _, tensors in owners for t in tensors)}
    owners = [(module, [t for t in tensors if id(t) in mapped]) for module, tensors in owners]
    owners = [(module, tensors) for module, tensors in owners if tensors]
    if not owners:  # a model in the process's own memory: nothing to read from a disk
        yield
        return
    position = {id(module): k for k, (module, _) in enumerate(owners)}
    asked = [0]  # owners[:asked[0]] have been asked for

    def ask(module, args) -> None:
        k = position.get(id(module))
        if k is None:
            return
        budget, stop = AHEAD_BYTES, k
        while stop < len(owners) and budget > 0:
            budget -= _nbytes(owners[stop][1])
            stop += 1
        if stop > asked[0]:
            read_ahead(t for _, tensors in owners[max(k, asked[0]):stop] for t in tensors)
            asked[0] = stop

    handle = torch.nn.modules.module.register_module_forward_pre_hook(ask)
    try:
        yield
    finally:
        handle.remove()
