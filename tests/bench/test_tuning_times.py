"""The tuning-time study's summary (``bench/tuning_times.py``) on recorded rows."""

from __future__ import annotations

from bench.tuning_times import kernels, summarize


def _row(kind: str, shapes: list[list[int]], config: dict[str, int], ms: float) -> dict[str, object]:
    return {"kind": kind, "shapes": shapes, "config": config, "ms": ms}


def _plan(rank: int, ms: float, runtime_compiled: bool, shapes: list[list[int]] | None = None) -> dict[str, object]:
    shapes = shapes or [[8, 64, 32, 32]]
    return {"backend": "cudnn", "kind": "conv", "shapes": shapes, "rank": rank, "runtime_compiled": runtime_compiled, "ms": ms}


def test_rankless_triton_timings_group_by_kernel_and_sum_the_choices() -> None:
    a, b = [[2, 64]], [[2, 128]]
    rows = [
        {"model": "m"},
        _row("pointwise", a, {"BLOCK": 1024, "num_warps": 4}, 0.004),
        _row("pointwise", a, {"BLOCK": 512, "num_warps": 4}, 0.002),
        _row("pointwise", a, {"BLOCK": 2048, "num_warps": 8}, 0.001),
        _row("pointwise", a, {"BLOCK": 1024, "num_warps": 4}, 0.003),  # the same kernel timed again: another one
        _row("pointwise", b, {"BLOCK": 1024, "num_warps": 4}, 0.005),
        {"compiled": "m", "seconds": 1.0, "spans": {}},
    ]
    assert [len(k) for k in kernels(rows)] == [3, 1, 1]
    s = summarize(rows)["triton pointwise"]
    assert s["tunings"] == 3 and s["timed"] == 5 and s["pair_timed"] == 4
    assert s["first_us"] == 12.0 and s["best_us"] == 9.0 and s["pair_us"] == 10.0, "the pair misses the 2048 config's 1 us"
    assert s["top2_us"] == 10.0 and s["wins"] == {"0": 2, "2": 1}


def test_cudnn_plans_group_by_rank_and_count_runtime_compiled_builds() -> None:
    rows = [
        _plan(0, 0.010, True),
        _plan(2, 0.008, False),  # rank 1 did not build
        _plan(3, 0.006, True),
        _plan(4, 0.005, True),
        _plan(0, 0.020, False),  # ranks start again: the next graph of the same shapes
    ]
    assert [len(k) for k in kernels(rows)] == [4, 1]
    s = summarize(rows)["cudnn conv"]
    assert s["tunings"] == 2 and s["timed"] == 5 and s["rc"] == 3
    assert s["best_us"] == 25.0 and s["first_us"] == 30.0 and s["top3_us"] == 26.0
    assert s["rc1_us"] == 28.0 and s["rc1_rc"] == 1, "every precompiled plan and the first runtime-compiled one"
    assert s["rc2_us"] == 26.0 and s["rc2_rc"] == 2
    assert s["wins"] == {"0": 1, "4": 1}
