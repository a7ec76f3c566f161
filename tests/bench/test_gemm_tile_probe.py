"""``bench/gemm_tile_probe.py``'s TMA kernels against float32 on fresh random inputs
(Triton's interpreter where there is no GPU): the residual read through its descriptor after
the K loop, and through pointers before it, and the warp-specialized forms (one tile a
program, and persistent over tiles), on a shape whose rows and columns leave partial tiles."""

from __future__ import annotations

import pytest
import torch
from triton.tools.tensor_descriptor import TensorDescriptor

from bench.gemm_tile_probe import persistent_tma, tma_early_residual, tma_tiles


@pytest.mark.parametrize("strategy", ["tma", "early", "ws", "wsp"])
def test_fused_1x1_gemm_with_residual(strategy: str) -> None:
    m, n, k, bm, bn, bk = 200, 96, 64, 64, 64, 32
    gen = torch.Generator().manual_seed(len(strategy))
    x = torch.randn(m, k, generator=gen).half()
    w = (torch.randn(n, k, generator=gen) / k**0.5).half()
    b = torch.randn(n, generator=gen).half()
    r = torch.randn(m, n, generator=gen).half()
    o = torch.zeros(m, n, dtype=torch.float16)
    xd, wd = TensorDescriptor.from_tensor(x, [bm, bk]), TensorDescriptor.from_tensor(w, [bn, bk])
    rd, od = TensorDescriptor.from_tensor(r, [bm, bn]), TensorDescriptor.from_tensor(o, [bm, bn])
    tiles = -(-m // bm) * -(-n // bn)
    if strategy == "early":
        tma_early_residual[(tiles,)](xd, wd, b, r, od, m, n, k, bm, bn, bk, 8)
    elif strategy == "tma":
        tma_tiles[(tiles,)](xd, wd, b, rd, od, m, n, k, bm, bn, bk, 8)
    elif strategy == "ws":
        tma_tiles[(tiles,)](xd, wd, b, rd, od, m, n, k, bm, bn, bk, 8, True)
    else:  # fewer programs than tiles: each loops over several
        persistent_tma[(3,)](xd, wd, b, rd, od, m, n, k, bm, bn, bk, 8, 3, True)
    want = torch.relu(x.float() @ w.float().T + b.float() + r.float())
    torch.testing.assert_close(o.float(), want, rtol=2e-3, atol=2e-3)
