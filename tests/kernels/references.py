"""Reference implementations the kernel tests name in their declarations (importable
as ``tests.kernels.references:<name>``, as IR files written by hand name them)."""

from __future__ import annotations

import torch


def mul(lhs: torch.Tensor, rhs: torch.Tensor) -> torch.Tensor:
    return lhs * rhs


def scale_and_sum(x: torch.Tensor, alpha: float) -> tuple[torch.Tensor, torch.Tensor]:
    return x * alpha, x.sum(dim=1)
