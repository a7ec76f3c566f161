"""What was allocated on the GPU at a run's peak, and where it was allocated from.

``recorded(into)`` keeps PyTorch's allocator history (``torch.cuda.memory``) of a
block; ``at_peak(snapshot)`` replays the snapshot's trace of allocations and frees,
finds the moment the most bytes were allocated, and sums what was live then by the
place in dnnc (or the caller) that allocated it: the innermost stack frame in a file
under ``dnnc/`` or ``bench/``. So a compile's peak (``bench/compile_profile.py
--memory``) names the arena, the weights, cuDNN workspaces or the buffers a timing
allocated, instead of one number.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

OURS = ("/dnnc/", "/bench/")
"""Path parts of the files whose frames name an allocation's place."""


@contextlib.contextmanager
def recorded(into: dict[str, Any], max_entries: int = 1_000_000) -> Iterator[None]:
    """The allocator's history (with Python stacks) while the block runs, put into
    ``into`` as ``torch.cuda.memory._snapshot()`` gives it, with ``resident_mb``: what
    was allocated when the recording began (not in the trace)."""
    import torch

    into["resident_mb"] = round(torch.cuda.memory_allocated() / 2**20, 1)
    torch.cuda.memory._record_memory_history(max_entries=max_entries)
    try:
        yield
    finally:
        into.update(torch.cuda.memory._snapshot())
        torch.cuda.memory._record_memory_history(enabled=None)


def place(frames: Sequence[Mapping[str, Any]]) -> str:
    """``file:line function`` of the innermost frame in our code, else of the innermost frame."""
    ours = [f for f in frames if any(part in str(f.get("filename", "")) for part in OURS)]
    frame = (ours or list(frames) or [{}])[0]
    name = str(frame.get("filename", "?"))
    for part in OURS:
        if part in name:
            name = part.strip("/") + "/" + name.split(part, 1)[1]
            break
    return f"{name}:{frame.get('line', '?')} {frame.get('name', '?')}"


def at_peak(snapshot: Mapping[str, Any], device: int = 0, top: int = 15) -> dict[str, Any]:
    """The peak of allocated bytes over the recorded trace of ``device``, and the live
    allocations then, summed by ``place``, largest first (MB). Bytes allocated before the
    recording began are not in the trace: ``before_mb`` is what the trace freed without
    having seen it allocated (a lower bound of it)."""
    trace = snapshot["device_traces"][device]
    sizes: dict[int, int] = {}
    total = unseen = peak = 0
    peak_at = -1
    for i, event in enumerate(trace):
        action, addr, size = event["action"], event["addr"], event["size"]
        if action == "alloc":
            sizes[addr] = size
            total += size
            if total > peak:
                peak, peak_at = total, i
        elif action == "free_completed":
            if addr in sizes:
                total -= sizes.pop(addr)
            else:
                unseen += size
    allocated: dict[int, Mapping[str, Any]] = {}  # address -> its allocation, live at the peak
    for event in trace[: peak_at + 1]:
        if event["action"] == "alloc":
            allocated[event["addr"]] = event
        elif event["action"] == "free_completed":
            allocated.pop(event["addr"], None)
    by_place: dict[str, int] = {}
    for event in allocated.values():
        where = place(event.get("frames", ()))
        by_place[where] = by_place.get(where, 0) + event["size"]
    ranked = sorted(by_place.items(), key=lambda kv: -kv[1])
    mb = 2**20
    return {
        "peak_mb": round(peak / mb, 1),
        "events": len(trace),
        "peak_event": peak_at,
        "before_mb": round(unseen / mb, 1),
        "live_at_peak": [{"place": where, "mb": round(size / mb, 1)} for where, size in ranked[:top]],
        "other_mb": round(sum(size for _, size in ranked[top:]) / mb, 1),
    }
