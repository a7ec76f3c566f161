"""The chained 1x1 convolutions of ``bench/chain_probe.py`` compute both outputs as the
float32 reference does (Triton's interpreter on a CPU, CUDA on a GPU), over several
column blocks of the residual and K steps of the expansion."""

from __future__ import annotations

import pytest
import torch

from bench.chain_probe import operands, reference, run_chain

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@pytest.mark.parametrize(("k1", "bn1"), [(16, 16), (32, 32), (128, 32)])
def test_the_chained_kernel_matches_the_reference(k1: int, bn1: int) -> None:
    x = operands(40, k1, 64, 16, DEVICE)  # 40 rows: the last block of 32 is partly outside
    want1, want2 = reference(x)
    y1, y2, _ = run_chain(x, 32, bn1, 4, 2)
    for got, want, what in ((y1, want1, "y1"), (y2, want2, "y2")):
        error = float((got.float().cpu() - want).abs().max() / want.abs().max())
        assert error < 5e-3, f"{what}: relative error {error}"
