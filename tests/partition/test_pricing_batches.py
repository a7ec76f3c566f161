"""Pricing's rounds compile the next batch of candidates' kernels while the caller times
the batch before (``pricing.compiled_in_batches``), checked on the CPU with a fake compile."""

from __future__ import annotations

import threading

import pytest

from dnnc.partition import pricing


def test_every_program_comes_once_in_order_and_the_next_batch_compiles_meanwhile(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pricing, "BATCH", 3)
    compiled: list[list[int]] = []
    second_batch_started = threading.Event()

    def fake_precompile(programs, device) -> None:
        compiled.append(list(programs))
        if len(compiled) == 2:
            second_batch_started.set()

    monkeypatch.setattr(pricing, "_precompile", fake_precompile)
    seen = []
    for key, program in pricing.compiled_in_batches({k: 10 * k for k in range(7)}, "cuda"):
        if key == 0:  # the caller is still on the first batch while the second compiles
            assert second_batch_started.wait(5)
        assert [program] in [[p] for batch in compiled for p in batch], "its batch was compiled before it came"
        seen.append((key, program))
    assert seen == [(k, 10 * k) for k in range(7)]
    assert compiled == [[0, 10, 20], [30, 40, 50], [60]]


def test_a_batch_whose_compile_fails_still_comes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Compiling ahead only saves time: a batch it failed for is built (and compiled) as it comes."""
    monkeypatch.setattr(pricing, "BATCH", 2)

    def broken(programs, device) -> None:
        raise RuntimeError("compile worker 7 stopped answering")

    monkeypatch.setattr(pricing, "_precompile", broken)
    assert [k for k, _ in pricing.compiled_in_batches(dict.fromkeys(range(5), None), "cuda")] == list(range(5))
