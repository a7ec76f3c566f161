"""Outputs handed to the caller without a copy, in buffers the caller has let go of.

A CUDA-graph replay rewrites the memory its graph writes, so a call's outputs may not
live where the next replay writes while the caller still holds them. Copying them out
of the graph's buffers costs an allocation and a copy launch per output: 7.3 of the
18 us of host time of a call of the conv block at batch 1 (H200), where eager in one
CUDA graph spends 2.5 us. Instead, a graph may write its returned values into buffers
of its own (``HandedOut``), outside the arena, and a call gives the caller views of
those buffers as they are. The next call replays a graph whose buffers nobody refers
to any more: a loop that keeps one result at a time (``y = model(x)``: the previous
``y`` is still held while the call runs) alternates between two such graphs.

Whether anyone refers to a buffer is its storage's use count. Every tensor viewing the
storage holds one, so a result the caller keeps, or any view of it, keeps its buffer
from being written again. The count read when the buffer was made, before anything else
viewed it, is what "nobody else" means. A caller that keeps only a raw pointer or the
storage object (``untyped_storage()``, which does not count), or reads a result on another
stream after dropping it, is not protected, as with memory PyTorch's caching allocator
hands out again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from dnnc.runtime.outputs import owned_copy

use_count = torch._C._storage_Use_Count


@dataclass(frozen=True)
class _Layout:
    """Where a returned value lives in one of the buffers: which, and the view of it."""

    buffer: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int
    whole: bool
    """The value is the buffer itself (same shape, strides and start)."""


class HandedOut:
    """The buffers one graph writes its returned values into, and how the values view them."""

    def __init__(self, like: Sequence[torch.Tensor]):
        with torch.inference_mode(False):  # ordinary tensors, even when made inside inference mode
            self.buffers = [torch.empty(t.shape, dtype=t.dtype, device=t.device) for t in like]
        self._storages = [b.untyped_storage()._cdata for b in self.buffers]
        self._alone = [use_count(s) for s in self._storages]
        """Each storage's use count with only this object referring to it."""
        self._layouts: list[_Layout | torch.Tensor] = []
        self._whole: list[torch.Tensor] | None = None
        """The buffers in return order, where every returned value is one of them whole."""

    def describe(self, returned: Sequence[torch.Tensor]) -> None:
        """Learn where each returned value of the captured run lives; a value outside the
        buffers (an input, a constant) is kept and copied at every call."""
        where = {b.untyped_storage().data_ptr(): i for i, b in enumerate(self.buffers)}
        layouts: list[_Layout | torch.Tensor] = []
        for t in returned:
            i = where.get(t.untyped_storage().data_ptr())
            if i is None:
                layouts.append(t)
                continue
            b = self.buffers[i]
            whole = t.shape == b.shape and t.stride() == b.stride() and t.storage_offset() == b.storage_offset()
            layouts.append(_Layout(i, tuple(t.shape), tuple(t.stride()), t.storage_offset(), whole))
        self._layouts = layouts
        whole = [self.buffers[x.buffer] for x in layouts if isinstance(x, _Layout) and x.whole]
        self._whole = whole if len(whole) == len(layouts) else None

    def free(self) -> bool:
        """Whether nothing outside refers to any buffer: a replay may rewrite them."""
        return [use_count(s) for s in self._storages] == self._alone

    def give(self) -> list[torch.Tensor]:
        """The returned values for the caller: views of the buffers, copies of the rest."""
        if self._whole is not None:
            return [b.detach() for b in self._whole]
        out = []
        for layout in self._layouts:
            if isinstance(layout, torch.Tensor):
                out.append(owned_copy(layout))
                continue
            b = self.buffers[layout.buffer]
            out.append(b.detach() if layout.whole else b.as_strided(layout.shape, layout.stride, layout.offset))
        return out
