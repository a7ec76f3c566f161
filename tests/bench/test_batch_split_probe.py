"""``bench/batch_split_probe.py`` walked on the CPU reference backend: the conv block at
batch 32 compiled whole and in 2 and 4 parts, each part bound in one expression
(``compile(...).bind(...)``, the program held only by its binding), the parts' outputs
matching the whole batch's; and a NaN in the outputs stops the probe instead of passing
its check."""

from __future__ import annotations

import pytest
import torch

from bench import batch_split_probe


def test_parts_match_the_whole_batch_on_the_reference_backend() -> None:
    row = batch_split_probe.probe("conv-block-b32", [2, 4, 3], device="cpu")
    assert row["batch"] == 32 and row["whole_error"] < 1e-5
    assert set(row["splits"]) == {"2", "4"}  # 3 does not divide 32
    assert all(s["error_vs_whole"] <= 1e-6 for s in row["splits"].values())


def test_a_nan_is_an_error_not_a_pass() -> None:
    error = batch_split_probe.relative_error(torch.tensor([1.0, float("nan")]), torch.tensor([1.0, 2.0]))
    assert not error <= batch_split_probe.TOLERANCE


def test_a_part_holding_nans_stops_the_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    real = batch_split_probe.relative_error
    calls = iter([None, float("nan")])

    def second_is_nan(got: torch.Tensor, want: torch.Tensor) -> float:
        value = next(calls, None)
        return real(got, want) if value is None else value

    monkeypatch.setattr(batch_split_probe, "relative_error", second_is_nan)
    with pytest.raises(SystemExit, match="differ from the whole batch"):
        batch_split_probe.probe("conv-block-b32", [2], device="cpu")
