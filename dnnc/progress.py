"""What a compile is doing while it runs: its stage, the candidate groups timed of
those its partitioner asked for, and the kernels built. The stages report here
whether or not anyone watches; ``dnnc compile`` watches (``watching``) to show one
status line on a terminal and a one-line summary otherwise, and the Python API
shows nothing, so a library compile stays silent.

Counts add up over one compile: contending whole programs build kernels too, and a
warm compile finds its candidates' times in the cache (counted as timed: they need
no GPU time again).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field


@dataclass
class Progress:
    stage: str = ""
    timed: int = 0
    """Candidate groups whose time is known (measured now or found in the cache)."""
    to_time: int = 0
    """Candidate groups the partitioner asked times of."""
    kernels: int = 0
    """Kernels built for executors (cuDNN plans, Triton kernels), contenders' included."""
    spans: dict[str, Span] = field(default_factory=dict)
    """Wall time and count of each named piece of work (``span``), for a compile-time
    breakdown finer than the pipeline's stages (spans nest and overlap across threads:
    each is inclusive of what runs inside it)."""

    def line(self) -> str:
        parts = [self.stage] if self.stage else []
        if self.to_time:
            parts.append(f"{self.timed}/{self.to_time} candidates timed")
        if self.kernels:
            parts.append(f"{self.kernels} kernels built")
        return ", ".join(parts)


@dataclass
class Span:
    seconds: float = 0.0
    calls: int = 0
    items: int = 0


Listener = Callable[[Progress], None]

_watched: tuple[Progress, Listener] | None = None


@contextlib.contextmanager
def watching(listener: Listener) -> Iterator[Progress]:
    """Tell ``listener`` of every change while the block runs; yields the counts."""
    global _watched
    previous = _watched
    _watched = (Progress(), listener)
    try:
        yield _watched[0]
    finally:
        _watched = previous


def stage(name: str) -> None:
    if _watched is not None:
        _watched[0].stage = name
        _watched[1](_watched[0])


def add(*, timed: int = 0, to_time: int = 0, kernels: int = 0) -> None:
    if _watched is not None:
        progress, listener = _watched
        progress.timed += timed
        progress.to_time += to_time
        progress.kernels += kernels
        listener(progress)


@contextlib.contextmanager
def span(name: str) -> Iterator[None]:
    """Time the block under ``name`` in the watched compile's ``spans``; nothing when
    nobody watches."""
    if _watched is None:
        yield
        return
    progress = _watched[0]
    started = time.perf_counter()
    try:
        yield
    finally:
        entry = progress.spans.setdefault(name, Span())
        entry.seconds += time.perf_counter() - started
        entry.calls += 1


def tally(name: str, items: int) -> None:
    """Add ``items`` (kernels compiled, plans built) to span ``name``'s count."""
    if _watched is not None:
        _watched[0].spans.setdefault(name, Span()).items += items
