"""Lazy tensors: initializers computed only when they are written, a few rows at a time.

An optimisation that derives new weights (conv + batchnorm folding) must not hold a second copy of
them during export. It puts a ``LazyTensor`` into ``Graph.initializers`` instead: shape and dtype
are known up front (for the protobuf headers and the printer), the values are computed by
``serialize`` in row chunks along dim 0 (``chunks``) and freed right after being written.

``key`` names the recipe (the function, the identities of its source tensors and its arguments),
so two lazy tensors computed the same way from the same tensors can be shared without computing
either.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence

import torch

from .heap import release_free_memory

# Rows computed at once are at most this many bytes (at least one row): two blocks are alive at
# once while writing, small next to the weights of any model worth folding. At most 128 KiB:
# glibc serves larger blocks by mmap and, once one is freed, keeps later ones on the heap, which
# held about 1 MB more at the peak (MobileNetV2: 1.8 MB with 256 KiB blocks, 0.8 MB with 128 KiB).
CHUNK_BYTES = 1 << 17

# fn(sources, start, stop, *args) -> rows [start, stop) along dim 0 of the result
# (a 0-d result: called with (0, 1), returns the one value)
RowFunction = Callable[..., torch.Tensor]


class LazyTensor:
    """A tensor defined by ``fn(sources, start, stop, *args)``, computed on demand."""

    is_quantized = False

    def __init__(self, shape: Sequence[int], dtype: torch.dtype, fn: RowFunction,
                 sources: Sequence[torch.Tensor | LazyTensor | None], args: tuple = (),
                 chunk_bytes: int | None = None):
        self.shape = torch.Size(shape)
        self.dtype = dtype
        self._fn = fn
        self._sources = tuple(sources)
        self._args = tuple(args)
        # ``chunks``' default block size: a recipe that runs faster on larger blocks (a transpose,
        # which reads a column block of its source) asks for more than ``CHUNK_BYTES``.
        self.chunk_bytes = chunk_bytes

    @property
    def sources(self) -> tuple:
        """The tensors (and lazy tensors) the recipe reads."""
        return self._sources

    @property
    def key(self) -> tuple:
        """Equal keys mean equal values (the sources are the same objects, kept alive here)."""
        sources = tuple(
            s.key if isinstance(s, LazyTensor) else ("none",) if s is None else ("tensor", id(s))
            for s in self._sources
        )
        return (self._fn.__module__, self._fn.__qualname__, sources, self._args, self.dtype, tuple(self.shape))

    def numel(self) -> int:
        return math.prod(self.shape)

    def element_size(self) -> int:
        return self.dtype.itemsize

    def dim(self) -> int:
        return len(self.shape)

    def _rows(self, start: int, stop: int) -> torch.Tensor:
        sources = [s.materialize() if isinstance(s, LazyTensor) else s for s in self._sources]
        rows = self._fn(sources, start, stop, *self._args)
        if rows.dtype != self.dtype or tuple(rows.shape[1:]) != tuple(self.shape[1:]):
            raise RuntimeError(
                f"lazy tensor recipe {self._fn.__qualname__} gave {rows.dtype}{list(rows.shape)} for "
                f"rows {start}:{stop} of {self.dtype}{list(self.shape)}"
            )
        return rows

    def materialize(self) -> torch.Tensor:
        """The whole tensor (tests, small tensors); ``serialize`` uses ``chunks`` instead."""
        if not self.shape:
            return self._rows(0, 1).reshape(())
        return self._rows(0, self.shape[0]).contiguous()

    def chunks(self, max_bytes: int | None = None) -> Iterator[torch.Tensor]:
        """Contiguous row blocks along dim 0 that concatenate to the tensor, each computed on demand
        (at most ``max_bytes`` each; default: the tensor's ``chunk_bytes``, else ``CHUNK_BYTES``)."""
        if max_bytes is None:
            max_bytes = self.chunk_bytes or CHUNK_BYTES
        if not self.shape or self.shape[0] == 0:
            yield self.materialize()
            return
        row_bytes = max(1, self.numel() // self.shape[0] * self.element_size())
        step = max(1, max_bytes // row_bytes)
        for start in range(0, self.shape[0], step):
            yield self._rows(start, min(start + step, self.shape[0])).contiguous()
        if max_bytes > CHUNK_BYTES and self.numel() * self.element_size() > max_bytes:
            # Blocks of a few MB stay in the heap once freed (glibc serves them from the heap after
            # the first is unmapped): give them back before the next tensor's blocks are computed.
            release_free_memory()

    def __repr__(self) -> str:
        return f"LazyTensor({self._fn.__qualname__}, {self.dtype}, {list(self.shape)})"


def materialize(tensor: torch.Tensor | LazyTensor) -> torch.Tensor:
    return tensor.materialize() if isinstance(tensor, LazyTensor) else tensor
