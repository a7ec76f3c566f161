"""GPU timing: a candidate whose plain call is already slower than the bound is not
captured; one under the bound is captured and timed by replay; a kernel of a few
microseconds is timed without the host's pauses."""

from __future__ import annotations

import time

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


def test_a_pause_of_the_host_before_a_launch_is_not_in_the_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The GPU's head start covers the host: a call that waits 0.2 ms before it launches a
    kernel of microseconds (timed call by call, as what cannot be captured is) is timed
    as the kernel alone. Without the head start the wait was in the time."""
    x = torch.ones(200_000, device="cuda", dtype=torch.float16)

    def late() -> None:
        time.sleep(2e-4)
        x.add_(1.0)

    def not_capturable(*args: object, **kwargs: object) -> None:
        raise RuntimeError("not capturable")

    monkeypatch.setattr(torch.cuda, "CUDAGraph", not_capturable)
    assert timing.device_time_ms(late) < 0.05
