"""``bench/gemm_tile_probe.py``'s TMA kernels against float32 on fresh random inputs
(Triton's interpreter where there is no GPU): the residual read through its descriptor after
the K loop, and through pointers before it, on a shape whose rows and columns leave partial
tiles."""

from __future__ import annotations

import pytest
import torch
from triton.tools.tensor_descriptor import TensorDescriptor

from bench.gemm_tile_probe import tma_early_residual, tma_tiles


@pytest.mark.parametrize("early", [False, True])
def test_fused_1x1_gemm_with_residual(early: bool) -> None:
    m, n, k, bm, bn, bk = 200, 96, 64, 64, 64, 32
    gen = torch.Generator().manual_seed(int(early))
    x = torch.randn(m, k, generator=gen).half()
    w = (torch.randn(n, k, generator=gen) / k**0.5).half()
    b = torch.randn(n, generator=gen).half()
    r = torch.randn(m, n, generator=gen).half()
    o = torch.zeros(m, n, dtype=torch.float16)
    xd, wd = TensorDescriptor.from_tensor(x, [bm, bk]), TensorDescriptor.from_tensor(w, [bn, bk])
    od = TensorDescriptor.from_tensor(o, [bm, bn])
    programs = -(-m // bm) * -(-n // bn)
    if early:
        tma_early_residual[(programs,)](xd, wd, b, r, od, m, n, k, bm, bn, bk, 8)
    else:
        tma_tiles[(programs,)](xd, wd, b, TensorDescriptor.from_tensor(r, [bm, bn]), od, m, n, k, bm, bn, bk, 8)
    want = torch.relu(x.float() @ w.float().T + b.float() + r.float())
    torch.testing.assert_close(o.float(), want, rtol=2e-3, atol=2e-3)
