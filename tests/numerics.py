"""Numerical assertions for the tests, on dnnc's own comparison rules and
per-dtype tolerances (``dnnc.numerics``)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from dnnc.numerics import TOLERANCE, mismatch, relative_error

__all__ = ["TOLERANCE", "assert_all_match", "assert_matches", "relative_error"]


def assert_matches(actual: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype | None = None, what: str = "output") -> None:
    assert isinstance(actual, torch.Tensor), f"{what}: expected a tensor, got {type(actual).__name__}"
    problem = mismatch(actual, expected, dtype)
    assert problem is None, f"{what}: {problem}"


def assert_all_match(actual: object, expected: object, dtype: torch.dtype | None = None) -> None:
    if isinstance(expected, torch.Tensor):
        assert_matches(actual, expected, dtype)  # type: ignore[arg-type]
        return
    assert isinstance(actual, Sequence) and isinstance(expected, Sequence) and len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert_matches(a, e, dtype, what=f"output {i}")
