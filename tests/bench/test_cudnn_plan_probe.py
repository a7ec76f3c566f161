"""``bench/cudnn_plan_probe.py``'s knob sweep on the host side: which values of a knob are
tried, and that a product of knobs too large to build is sampled, never enumerated."""

from __future__ import annotations

from types import SimpleNamespace

from bench.cudnn_plan_probe import MAX_KNOB_VALUES, _knob_values, knob_combinations


def knob(lo: int, hi: int, stride: int = 1) -> SimpleNamespace:
    return SimpleNamespace(min_value=lo, max_value=hi, stride=stride)


def test_a_knob_of_few_values_is_tried_whole() -> None:
    assert _knob_values(knob(0, 5)) == [0, 1, 2, 3, 4, 5]
    assert _knob_values(knob(1, 7, 2)) == [1, 3, 5, 7]


def test_a_wide_knob_is_tried_from_its_minimum_only() -> None:
    values = _knob_values(knob(0, 2**31))  # split-K slices: a plan with 2^31 of them runs for minutes
    assert values == list(range(MAX_KNOB_VALUES))


def test_every_combination_when_there_are_few() -> None:
    combos = knob_combinations([[0, 1], [2, 3, 4]], most=10, seed=0)
    assert sorted(combos) == [(0, 2), (0, 3), (0, 4), (1, 2), (1, 3), (1, 4)]


def test_many_combinations_are_sampled_distinct_and_repeatably() -> None:
    values = [list(range(8))] * 6  # 262144 combinations
    combos = knob_combinations(values, most=50, seed=3)
    assert len(combos) == len(set(combos)) == 50
    assert all(len(c) == 6 and all(0 <= v < 8 for v in c) for c in combos)
    assert combos == knob_combinations(values, most=50, seed=3)
