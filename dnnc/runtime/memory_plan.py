"""Static memory plan: one arena for a program's intermediates.

Each buffer has a size in bytes and a lifetime, the inclusive range of steps from
the one that writes it to the last one that reads it. Two buffers may share
bytes only when their lifetimes are disjoint; a step's output therefore never
overlaps that step's inputs (both are live at that step).

Placement is greedy, largest buffer first, each at the lowest offset that does
not collide with an already placed buffer whose lifetime overlaps. This is not
optimal (the problem is NP-hard) but is close to the peak of live bytes on
inference graphs and takes milliseconds for thousands of buffers. Pure Python,
so it is tested without a GPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

ALIGNMENT = 256
"""Every offset is a multiple of this (cuDNN and vectorized Triton loads want 16; 256 is
what torch's allocator gives)."""


class MemoryPlan(NamedTuple):
    offsets: list[int]
    peak: int
    """Arena size in bytes: the end of the highest placed buffer."""


def _aligned(n: int, alignment: int) -> int:
    return -(-n // alignment) * alignment


def _check(sizes: Sequence[int], lifetimes: Sequence[tuple[int, int]]) -> None:
    if len(sizes) != len(lifetimes):
        raise ValueError(f"plan_memory: {len(sizes)} sizes but {len(lifetimes)} lifetimes")
    for i, (size, (first, last)) in enumerate(zip(sizes, lifetimes)):
        if size < 0:
            raise ValueError(f"plan_memory: buffer {i} has negative size {size}")
        if first > last:
            raise ValueError(f"plan_memory: buffer {i} has lifetime ({first}, {last}): its last use is before its definition")


def plan_memory(sizes: Sequence[int], lifetimes: Sequence[tuple[int, int]], alignment: int = ALIGNMENT) -> MemoryPlan:
    """Offsets (in input order) into one arena, and the arena's size."""
    _check(sizes, lifetimes)
    order = sorted(range(len(sizes)), key=lambda i: (-sizes[i], lifetimes[i][0], i))
    placed: list[tuple[int, int, int]] = []  # (offset, end, buffer index)
    offsets = [0] * len(sizes)
    peak = 0
    for i in order:
        size = _aligned(sizes[i], alignment)
        if size == 0:
            continue
        first, last = lifetimes[i]
        busy = sorted((off, end) for off, end, j in placed if lifetimes[j][0] <= last and first <= lifetimes[j][1])
        offset = 0
        for off, end in busy:
            if offset + size <= off:
                break  # fits in the gap before this one
            offset = max(offset, end)
        offsets[i] = offset
        placed.append((offset, offset + size, i))
        peak = max(peak, offset + size)
    return MemoryPlan(offsets, peak)


def live_bytes_peak(sizes: Sequence[int], lifetimes: Sequence[tuple[int, int]], alignment: int = ALIGNMENT) -> int:
    """The most bytes live at any one step: a lower bound for any plan's peak."""
    _check(sizes, lifetimes)
    steps = sorted({s for first, last in lifetimes for s in (first, last)})
    return max(
        (sum(_aligned(size, alignment) for size, (first, last) in zip(sizes, lifetimes) if first <= s <= last) for s in steps),
        default=0,
    )
