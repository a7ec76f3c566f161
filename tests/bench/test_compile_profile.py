"""``bench/compile_profile.py --keep-auto``: the whole-program contest sees ``auto``'s cover
alone while the profile compiles, and is itself again afterwards."""

from __future__ import annotations

from bench.compile_profile import auto_cover_kept
from dnnc.partition import partitioner


def test_keep_auto_hands_the_contest_auto_alone_and_restores_it() -> None:
    original = partitioner.contest
    seen = []

    def fake(program: object, contenders: dict) -> tuple:
        seen.append(sorted(contenders))
        return next(iter(contenders)), {}, None

    partitioner.contest = fake  # type: ignore[assignment]
    try:
        with auto_cover_kept(True):
            partitioner.contest(None, {"auto": 1, "cudnn-only": 2, "triton-only": 3})
        with auto_cover_kept(False):
            partitioner.contest(None, {"auto": 1, "cudnn-only": 2})
        assert partitioner.contest is fake
    finally:
        partitioner.contest = original  # type: ignore[assignment]
    assert seen == [["auto"], ["auto", "cudnn-only"]]


def test_the_timeline_counts_overlaps_once_and_keeps_calls_apart() -> None:
    """Two calls of three kernels: the second overlaps the first (PDL), a 2 us stretch idles
    before the third; 100 us of host time lie between the calls."""
    from types import SimpleNamespace

    from torch.autograd import DeviceType

    from bench.compile_profile import timeline

    def kernel(start: float, end: float, name: str) -> SimpleNamespace:
        return SimpleNamespace(device_type=DeviceType.CUDA, time_range=SimpleNamespace(start=start, end=end), name=name)

    host = SimpleNamespace(device_type=DeviceType.CPU, time_range=SimpleNamespace(start=0.0, end=500.0), name="call")
    events = [host]
    for t0 in (0.0, 120.0):
        events += [kernel(t0, t0 + 10, "a"), kernel(t0 + 8, t0 + 15, "b"), kernel(t0 + 17, t0 + 20, "c")]
    found = timeline(SimpleNamespace(events=lambda: events), calls=2)
    assert found is not None
    assert found["busy_ms"] == 18.0 / 1e3 and found["idle_ms"] == 2.0 / 1e3 and found["idle_stretches"] == 1
    assert found["longest"][0] == {"us": 2.0, "after": "b", "before": "c"}
