"""What the programs of one bucketed module share on the GPU: each weight uploaded
once, and one memory arena (the largest program's, built first).

Each bucket is a program of its own, compiled from its own export, so two buckets'
weights are equal tensors rather than the same one: a weight already uploaded for
another bucket, by name, shape, dtype and equal contents, is reused. The programs
run one at a time on one stream (as calls to one program do), so their
intermediates can live in the same memory.

``sharing(pool)`` makes ``pool`` the one executors and arenas built in the block use.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

import torch

from dnnc.runtime import compressible

_current: contextvars.ContextVar[SharedMemory | None] = contextvars.ContextVar("dnnc_shared_memory", default=None)


class SharedMemory:
    def __init__(self) -> None:
        self._weights: dict[tuple[str, tuple[int, ...], torch.dtype, str], list[tuple[torch.Tensor, torch.Tensor]]] = {}
        self._arena: torch.Tensor | None = None
        self.reused_bytes = 0
        """Bytes of weights not uploaded again."""

    def upload(self, name: str, value: torch.Tensor, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
        """``value`` on ``device`` in ``dtype``: the copy made for an equal weight before, else a new one."""
        key = (name, tuple(value.shape), dtype, str(device))
        known = self._weights.setdefault(key, [])
        for source, uploaded in known:
            if source is value or (source.dtype == value.dtype and torch.equal(source, value)):
                self.reused_bytes += uploaded.numel() * uploaded.element_size()
                return uploaded
        uploaded = value.to(device, dtype).contiguous()
        known.append((value, uploaded))
        return uploaded

    def arena(self, nbytes: int, device: torch.device) -> torch.Tensor:
        """``nbytes`` of the shared arena, which grows (a new allocation, the old one
        kept by the programs that use it) when a program needs more than it holds."""
        held, where = self._arena, torch.device(device)
        elsewhere = held is not None and (held.device.type != where.type or where.index not in (None, held.device.index))
        if held is None or held.numel() < nbytes or elsewhere:
            held = self._arena = compressible.arena(nbytes, device)
        return held[: max(nbytes, 1)]


def current() -> SharedMemory | None:
    return _current.get()


@contextlib.contextmanager
def sharing(pool: SharedMemory) -> Iterator[SharedMemory]:
    token = _current.set(pool)
    try:
        yield pool
    finally:
        _current.reset(token)
