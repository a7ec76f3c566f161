"""Numerical comparison with stated per-dtype tolerances.

Errors are normwise, ``||actual - expected|| / ||expected||``, over the finite
elements; NaN and infinity must appear in the same places. Integer and boolean
results must be equal.

    float32   1e-5   (PyTorch eager vs the reference, same float32 arithmetic)
    float16   2e-3   (one rounding of the result: 2^-11 ~ 4.9e-4, plus input effects)
    bfloat16  1.6e-2 (one rounding: 2^-8 ~ 3.9e-3)
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

TOLERANCE = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.float64: 1e-12}


def relative_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    a, e = actual.double(), expected.double()
    finite = torch.isfinite(e)
    diff = (a[finite] - e[finite]).norm()
    scale = e[finite].norm()
    return float(diff / scale) if scale > 0 else float(diff)


def assert_matches(actual: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype | None = None, what: str = "output") -> None:
    assert isinstance(actual, torch.Tensor), f"{what}: expected a tensor, got {type(actual).__name__}"
    assert tuple(actual.shape) == tuple(expected.shape), f"{what}: shape {list(actual.shape)} != {list(expected.shape)}"
    if not expected.is_floating_point():
        assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
        assert torch.equal(actual, expected), f"{what}: integer/boolean values differ"
        return
    a, e = actual.double(), expected.double()
    assert torch.equal(torch.isnan(a), torch.isnan(e)), f"{what}: NaNs in different places"
    assert torch.equal(torch.isposinf(a), torch.isposinf(e)), f"{what}: +inf in different places"
    assert torch.equal(torch.isneginf(a), torch.isneginf(e)), f"{what}: -inf in different places"
    tol = TOLERANCE[dtype or actual.dtype]
    err = relative_error(a, e)
    assert err <= tol, f"{what}: relative error {err:.3e} exceeds the {dtype or actual.dtype} tolerance {tol:.1e}"


def assert_all_match(actual: object, expected: object, dtype: torch.dtype | None = None) -> None:
    if isinstance(expected, torch.Tensor):
        assert_matches(actual, expected, dtype)  # type: ignore[arg-type]
        return
    assert isinstance(actual, Sequence) and isinstance(expected, Sequence) and len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert_matches(a, e, dtype, what=f"output {i}")
