"""GPU timing: a candidate whose plain call is already slower than the bound is not
captured; one under the bound is captured and timed by replay; a kernel of a few
microseconds is timed as it runs among others, not with a launch or an idle GPU's start
added."""

from __future__ import annotations

import pytest
import torch

from dnnc import timing

pytestmark = pytest.mark.gpu


def _matmul_fn():
    a = torch.randn(2048, 2048, device="cuda", dtype=torch.float16)
    b = torch.randn(2048, 2048, device="cuda", dtype=torch.float16)
    return lambda: a @ b


def test_a_losing_candidate_is_not_captured(monkeypatch: pytest.MonkeyPatch) -> None:
    fn = _matmul_fn()
    monkeypatch.setattr(torch.cuda, "CUDAGraph", lambda *a, **k: pytest.fail("captured a candidate known to lose"))
    ms = timing.device_time_ms(fn, give_up_above_ms=1e-4)
    assert ms > 1e-4


def test_a_candidate_under_the_bound_is_timed_by_replay() -> None:
    fn = _matmul_fn()
    replayed = timing.device_time_ms(fn, give_up_above_ms=1e3)
    plain = timing.device_time_ms(fn)
    assert 0 < replayed < 1.0  # 17 GFLOP at several hundred TFLOP/s
    assert replayed == pytest.approx(plain, rel=0.5)


def test_a_kernel_of_microseconds_is_timed_as_it_runs_back_to_back() -> None:
    """Against the same kernel 400 times in one graph, replayed with the GPU busy: the
    time of one call there, launch gaps included, is what it costs inside a program."""
    x = torch.ones(200_000, device="cuda", dtype=torch.float16)
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        x.add_(1.0)
    stream.synchronize()
    with torch.cuda.graph(graph, stream=stream):
        for _ in range(400):
            x.add_(1.0)
    graph.replay()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        graph.replay()
    end.record()
    end.synchronize()
    in_a_program = start.elapsed_time(end) / 2000
    timed = timing.device_time_ms(lambda: x.add_(1.0))
    assert timed == pytest.approx(in_a_program, rel=0.25), (timed, in_a_program)
