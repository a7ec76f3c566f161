"""A compile lowers each distinct candidate group once: pricing's check, measure's
timing and the contest's re-decided policies share one memo (``partition.memo``).
On the CPU, with the GPU's part (timing, kernel compiles) stood in for."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from dnnc import knobs
from dnnc.models import resnet50
from dnnc.partition import memo, partitioner, pricing
from dnnc.partition.candidates import Candidate
from dnnc.passes import run_passes
from dnnc.pipeline import to_canonical_tcp


@pytest.mark.parametrize("measured", [False, True], ids=["estimated", "measured"])
def test_a_cold_auto_compile_of_resnet50_lowers_each_distinct_candidate_once(
    monkeypatch: pytest.MonkeyPatch, measured: bool
) -> None:
    lowerings: Counter[tuple[str, str, str]] = Counter()
    lower_alone = memo.lower_alone

    def counted(c: Candidate, params: Any) -> Any:
        lowerings[pricing.identity(c, params)] += 1
        return lower_alone(c, params)

    monkeypatch.setattr(memo, "lower_alone", counted)
    monkeypatch.setattr(partitioner, "should_measure", lambda: measured)  # on a GPU machine too
    if measured:  # every decision measures; the contest re-decides cudnn-only and triton-only
        monkeypatch.setattr(pricing, "time_alone", lambda c, program, device, text: c.estimated_ms)
        monkeypatch.setattr(pricing, "_precompile", lambda programs, device: None)
    model, inputs = resnet50(batch=1)
    program = to_canonical_tcp(model.eval(), inputs)
    with knobs.override(cache=False):
        run_passes(program, [partitioner.Partition(policy="auto", backends=("cudnn", "triton"))])
    backends = Counter(key[0] for key in lowerings)
    assert backends["cudnn"] > 20  # conv alone, with bias, with the add, with the ReLU, ... per shape
    assert (backends["triton"] > 0) == measured  # Triton groups are lowered only to be timed
    assert max(lowerings.values()) == 1, [k[:2] for k, n in lowerings.items() if n > 1]


def test_the_memo_ends_with_the_compile() -> None:
    with memo.one_compile() as outer:
        with memo.one_compile() as inner:
            assert inner is outer
        assert memo.current() is outer
    assert memo.current() is not outer
