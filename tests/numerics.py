"""Numerical assertions for the tests, on dnnc's own comparison rules and
per-dtype tolerances (``dnnc.numerics``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch

from dnnc.numerics import GPU_TOLERANCE, TOLERANCE, mismatch, relative_error

__all__ = ["TOLERANCE", "assert_all_match", "assert_matches", "relative_error", "tf32"]


def assert_matches(
    actual: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype | None = None, what: str = "output", gpu: bool = False
) -> None:
    """``gpu``: hold float32 to GPU_TOLERANCE (TF32 tensor cores)."""
    assert isinstance(actual, torch.Tensor), f"{what}: expected a tensor, got {type(actual).__name__}"
    problem = mismatch(actual.cpu(), expected.cpu(), dtype, GPU_TOLERANCE if gpu else TOLERANCE)
    assert problem is None, f"{what}: {problem}"


def assert_all_match(actual: object, expected: object, dtype: torch.dtype | None = None) -> None:
    if isinstance(expected, torch.Tensor):
        assert_matches(actual, expected, dtype)  # type: ignore[arg-type]
        return
    assert isinstance(actual, Sequence) and isinstance(expected, Sequence) and len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert_matches(a, e, dtype, what=f"output {i}")


@contextmanager
def tf32(enabled: bool) -> Iterator[None]:
    """PyTorch's float32 convolutions and matmuls on TF32 tensor cores or not, for the
    block, restored after it: the flags are process-wide, and a test that left them off
    made every later eager reference in its process exact IEEE float32."""
    cudnn, matmul = torch.backends.cudnn, torch.backends.cuda.matmul
    saved = cudnn.allow_tf32, matmul.allow_tf32
    cudnn.allow_tf32 = matmul.allow_tf32 = enabled
    try:
        yield
    finally:
        cudnn.allow_tf32, matmul.allow_tf32 = saved
