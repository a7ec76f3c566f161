"""The config-timing study's summary (``bench/triton_config_times.py``) on recorded rows."""

from __future__ import annotations

from bench.triton_config_times import kernels, summarize


def _row(kind: str, shapes: list[list[int]], config: dict[str, int], ms: float) -> dict[str, object]:
    return {"kind": kind, "shapes": shapes, "config": config, "ms": ms}


def test_timings_group_by_kernel_and_sum_the_choices() -> None:
    a, b = [[2, 64]], [[2, 128]]
    rows = [
        {"model": "m"},
        _row("pointwise", a, {"BLOCK": 1024, "num_warps": 4}, 0.004),
        _row("pointwise", a, {"BLOCK": 512, "num_warps": 4}, 0.002),
        _row("pointwise", a, {"BLOCK": 2048, "num_warps": 8}, 0.001),
        _row("pointwise", a, {"BLOCK": 1024, "num_warps": 4}, 0.003),  # the same kernel timed again: another one
        _row("pointwise", b, {"BLOCK": 1024, "num_warps": 4}, 0.005),
    ]
    assert [len(k) for k in kernels(rows)] == [3, 1, 1]
    s = summarize(rows)["pointwise"]
    assert s["kernels"] == 3 and s["configs"] == 5 and s["pair_configs"] == 4
    assert s["first_us"] == 12.0 and s["best_us"] == 9.0 and s["pair_us"] == 10.0, "the pair misses the 2048 config's 1 us"
