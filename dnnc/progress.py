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
from collections.abc import Callable, Iterator
from dataclasses import dataclass


@dataclass
class Progress:
    stage: str = ""
    timed: int = 0
    """Candidate groups whose time is known (measured now or found in the cache)."""
    to_time: int = 0
    """Candidate groups the partitioner asked times of."""
    kernels: int = 0
    """Kernels built for executors (cuDNN plans, Triton kernels), contenders' included."""

    def line(self) -> str:
        parts = [self.stage] if self.stage else []
        if self.to_time:
            parts.append(f"{self.timed}/{self.to_time} candidates timed")
        if self.kernels:
            parts.append(f"{self.kernels} kernels built")
        return ", ".join(parts)


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
