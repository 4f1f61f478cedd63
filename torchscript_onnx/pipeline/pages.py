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

A model larger than the page cache is read twice, by the trace and by the writer, and the writer's
own output competes with the weights for the cache. So the writer takes first the weights whose
pages are still cached (``resident_fraction``); and when its output is larger than half the memory
available (``streams_out``), each weight it has written leaves the cache (``page_out``), and so do
its output's pages once they are on the disk (``WriteBehind``): what the cache holds stays what is
still to be written.
"""

from __future__ import annotations

import bisect
import collections
import contextlib
import ctypes
import functools
import mmap
import os
from collections.abc import Iterable, Iterator

import torch

# How far ahead of the module being called its successors' weights are asked for: a few layers of
# a large model, so that the reads run during the layers before them without filling the cache.
AHEAD_BYTES = 512 << 20


def _madvise():
    """The C library's ``madvise``, or None where there is none to call."""
    if not hasattr(mmap, "MADV_WILLNEED"):
        return None
    return _libc_function("madvise", ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)


def _advise(tensors: Iterable, advice: int) -> None:
    """``madvise`` each CPU tensor's pages, a hint: whatever the kernel answers, nothing else changes."""
    advise = _madvise()
    if advise is None:
        return
    for tensor in tensors:
        span = _page_span(tensor)
        if span is not None:
            advise(span[0], span[1], advice)


@functools.cache
def _libc_function(name: str, *argtypes):
    """A function of the C library (Linux), or None where there is none to call."""
    try:
        function = getattr(ctypes.CDLL(None, use_errno=True), name)
    except Exception:  # noqa: BLE001 - no C library or no such function: every use is a hint
        return None
    function.argtypes, function.restype = list(argtypes), ctypes.c_int
    return function


def _page_span(tensor) -> tuple[int, int] | None:
    """The page-aligned address range of a CPU tensor's bytes, or None for no bytes to speak of."""
    if not isinstance(tensor, torch.Tensor) or tensor.device.type != "cpu" or tensor.numel() == 0:
        return None
    start = tensor.data_ptr() // mmap.PAGESIZE * mmap.PAGESIZE
    return start, tensor.data_ptr() + tensor.numel() * tensor.element_size() - start


def resident_fraction(tensors: Iterable) -> float:
    """The fraction of these tensors' pages that are in memory now (``mincore``): a weight the trace
    read recently is still in the page cache and costs no disk read to write. 1.0 where unknown."""
    mincore = _libc_function("mincore", ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)
    resident = total = 0
    for tensor in tensors:
        span = _page_span(tensor)
        if span is None:
            continue
        count = -(-span[1] // mmap.PAGESIZE)
        flags = (ctypes.c_ubyte * count)()
        if mincore is None or mincore(span[0], span[1], flags) != 0:
            return 1.0
        resident += int(torch.frombuffer(flags, dtype=torch.uint8).bitwise_and(1).sum())  # bit 0: in memory
        total += count
    return resident / total if total else 1.0


# MADV_PAGEOUT (Linux 5.4): reclaim these pages now; a clean page of a file is simply dropped, and
# one changed in memory stays (there is no swap to send it to, or it goes there): nothing is lost.
_MADV_PAGEOUT = getattr(mmap, "MADV_PAGEOUT", 21)


def page_out(tensors: Iterable) -> None:
    """Let the kernel drop these (memory-mapped) tensors' pages now, a hint: written once, they are
    not read again by the export, and the cache is better spent on the weights still to write (an
    old kernel refuses the advice, and that is all)."""
    _advise(tensors, _MADV_PAGEOUT)


def _available_memory() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def streams_out(nbytes: int) -> bool:
    """Whether a file of ``nbytes`` should go through the page cache without staying there: when it
    is larger than half the memory available, keeping it cached would push out the weights still
    to be written. A smaller one stays cached, and the export need not wait for the disk."""
    available = _available_memory()
    return available is not None and nbytes > available // 2


# sync_file_range's flags (linux/fs.h)
_WAIT_BEFORE, _WRITE, _WAIT_AFTER = 1, 2, 4
# Bytes written but not yet waited for: enough for the disk to stay busy while the writer goes on.
WRITE_BEHIND_BYTES = 256 << 20


class WriteBehind:
    """The pages of a file being written go to the disk as the writer goes and then leave the page
    cache: each written range's write-back starts at once, and a range ``WRITE_BEHIND_BYTES`` back
    is waited for and dropped. Linux only; elsewhere it does nothing."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.sync_range = _libc_function("sync_file_range", ctypes.c_int, ctypes.c_int64, ctypes.c_int64,
                                          ctypes.c_uint)
        self.pending: collections.deque[tuple[int, int]] = collections.deque()  # (offset, nbytes) not dropped
        self.pending_bytes = 0  # their total: the list can hold many small weights' ranges

    def written(self, offset: int, nbytes: int) -> None:
        if self.sync_range is None or nbytes == 0:
            return
        self.sync_range(self.fd, offset, nbytes, _WRITE)
        self.pending.append((offset, nbytes))
        self.pending_bytes += nbytes
        while self.pending_bytes - self.pending[0][1] >= WRITE_BEHIND_BYTES:  # enough written after the oldest
            self._drop_oldest()

    def finish(self) -> None:
        while self.pending:
            self._drop_oldest()

    def _drop_oldest(self) -> None:
        offset, nbytes = self.pending.popleft()
        self.pending_bytes -= nbytes
        self.sync_range(self.fd, offset, nbytes, _WAIT_BEFORE | _WRITE | _WAIT_AFTER)
        os.posix_fadvise(self.fd, offset, nbytes, os.POSIX_FADV_DONTNEED)


def read_ahead(tensors: Iterable) -> None:
    """Ask the kernel to start reading the pages of these CPU tensors, without waiting for them
    (pass only ``mapped_from_files`` ones)."""
    _advise(tensors, getattr(mmap, "MADV_WILLNEED", 3))


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
