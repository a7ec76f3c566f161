"""The static memory planner: no two buffers live at the same step share a byte,
offsets are aligned, and the peak is never below the live-bytes bound."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dnnc.runtime.memory_plan import ALIGNMENT, live_bytes_peak, plan_memory


def assert_no_overlap(sizes, lifetimes, offsets) -> None:
    for i in range(len(sizes)):
        for j in range(i + 1, len(sizes)):
            (a0, a1), (b0, b1) = lifetimes[i], lifetimes[j]
            if not sizes[i] or not sizes[j] or a1 < b0 or b1 < a0:
                continue  # empty, or never live at the same step
            disjoint = offsets[i] + sizes[i] <= offsets[j] or offsets[j] + sizes[j] <= offsets[i]
            assert disjoint, f"buffers {i} {lifetimes[i]} and {j} {lifetimes[j]} overlap at {offsets[i]} / {offsets[j]}"


buffers = st.lists(
    st.tuples(st.integers(0, 5000), st.integers(0, 30), st.integers(0, 10)).map(lambda t: (t[0], (t[1], t[1] + t[2]))),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(buffers)
def test_live_buffers_never_overlap(items) -> None:
    sizes = [s for s, _ in items]
    lifetimes = [lt for _, lt in items]
    offsets, peak = plan_memory(sizes, lifetimes)
    assert_no_overlap(sizes, lifetimes, offsets)
    assert all(o % ALIGNMENT == 0 for o in offsets)
    assert all(o + s <= peak for o, s in zip(offsets, sizes))
    assert live_bytes_peak(sizes, lifetimes) <= peak <= sum(-(-s // ALIGNMENT) * ALIGNMENT for s in sizes)


def test_a_chain_reuses_memory() -> None:
    # a -> b -> c -> d, each read only by the next: two slots suffice
    sizes = [1024] * 4
    lifetimes = [(0, 1), (1, 2), (2, 3), (3, 4)]
    offsets, peak = plan_memory(sizes, lifetimes)
    assert peak == 2048 and offsets[0] == offsets[2] and offsets[1] == offsets[3] != offsets[0]


def test_bad_plans_are_named() -> None:
    with pytest.raises(ValueError, match="2 sizes but 1 lifetimes"):
        plan_memory([1, 2], [(0, 1)])
    with pytest.raises(ValueError, match=r"buffer 0 has lifetime \(3, 1\)"):
        plan_memory([8], [(3, 1)])
    with pytest.raises(ValueError, match="buffer 0 has negative size"):
        plan_memory([-8], [(0, 1)])
