"""``bench.gpu_timing.checked_kernel_us``, the check every kernel probe runs before it
times a config: a result within the tolerance is timed, a wrong one or a config that
fails is recorded as such (here on CPU tensors, the GPU's synchronize and timing stubbed)."""

from __future__ import annotations

import pytest
import torch

from bench import gpu_timing


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    import dnnc.timing

    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(dnnc.timing, "device_time_ms", lambda fn: 0.01234)


def test_a_result_within_the_tolerance_is_timed(no_gpu: None) -> None:
    want = torch.tensor([1.0, -2.0, 4.0])
    out = torch.full((3,), float("nan"))
    assert gpu_timing.checked_kernel_us(lambda: out.copy_(want + 0.1), out, want, 0.05) == 12.34


def test_a_wrong_result_says_by_how_much(no_gpu: None) -> None:
    want = torch.tensor([1.0, -2.0, 4.0])
    out = torch.empty(3)
    assert gpu_timing.checked_kernel_us(lambda: out.copy_(want + 0.5), out, want, 0.05) == "wrong by 0.5"


def test_a_config_that_fails_is_recorded_not_raised(no_gpu: None) -> None:
    def fails() -> None:
        raise RuntimeError("out of resources: shared memory")

    got = gpu_timing.checked_kernel_us(fails, torch.empty(3), torch.ones(3), 0.05)
    assert got == "error: out of resources: shared memory"
