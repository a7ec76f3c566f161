"""Shared helpers that give the test models realistic random weights."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch import nn


@contextlib.contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Run a block with a fixed torch seed without disturbing the caller's RNG."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def randomize_norm_affine(model: nn.Module) -> None:
    """Give every norm layer a non-identity scale and shift."""
    for module in model.modules():
        if isinstance(module, (nn.BatchNorm2d, nn.BatchNorm1d, nn.LayerNorm)):
            if module.weight is not None:
                nn.init.uniform_(module.weight, 0.5, 1.5)
            if module.bias is not None:
                nn.init.normal_(module.bias, 0.0, 0.1)


@torch.no_grad()
def calibrate_batchnorm(model: nn.Module, example: torch.Tensor, passes: int = 2) -> None:
    """Set BatchNorm running statistics from random data, as training would.

    Statistics that match the activations keep a deep random network well scaled;
    a small perturbation afterwards makes sure folding them is not a no-op.
    """
    norms = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    for bn in norms:
        bn.reset_running_stats()
        bn.momentum = None  # cumulative average over the calibration passes
    # Train-mode batch norm needs two values per channel: at batch 1 a squeeze-excite
    # block's 1x1 map has one, so calibration runs on at least two random examples.
    shape = (max(example.shape[0], 2), *example.shape[1:])
    model.train()
    with torch.no_grad():
        for _ in range(passes):
            model(torch.randn(shape, dtype=example.dtype, device=example.device))
    model.eval()
    for bn in norms:
        bn.running_mean.add_(torch.randn_like(bn.running_mean) * 0.05)
        bn.running_var.mul_(torch.empty_like(bn.running_var).uniform_(0.8, 1.25))
