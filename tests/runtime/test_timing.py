"""The GPU's head start before timed work (``dnnc.timing``), without a GPU: the spin is
queued where torch has it and left out where it has not."""

from __future__ import annotations

import pytest
import torch

from dnnc import timing


def test_the_head_start_queues_torchs_spin(monkeypatch: pytest.MonkeyPatch) -> None:
    spun: list[int] = []
    monkeypatch.setattr(torch.cuda, "_sleep", spun.append, raising=False)
    timing._head_start()
    assert spun == [timing.HEAD_START_CYCLES]


def test_a_torch_without_the_spin_times_without_a_head_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(torch.cuda, "_sleep", raising=False)
    timing._head_start()  # nothing to queue, nothing raised
