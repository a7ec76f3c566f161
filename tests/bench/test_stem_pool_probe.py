"""``bench/stem_pool_probe.py``'s kernels against torch on fresh random inputs (Triton's
interpreter where there is no GPU): the fused stem (convolution, bias, ReLU, 3x3/2 max pool)
where the pooled width takes one tile and where it takes several, and the convolution alone;
each form of the kernel-row loop (unrolled, pipelined)."""

from __future__ import annotations

import pytest
import torch

from bench.stem_pool_probe import conv_pool, conv_rows, out_size, pack_input, pack_weight, reference

SHAPES = {
    "7x7/2, one tile": (2, 3, 20, 16, 7, 2, 3),
    "7x7/2, three tiles": (1, 3, 70, 16, 7, 2, 3),
    "3x3/2": (1, 3, 17, 16, 3, 2, 1),
}


def _operands(shape: tuple[int, ...], seed: int):
    n, cin, size, co, k, _, _ = shape
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, cin, size, size, generator=gen)
    w = torch.randn(co, cin, k, k, generator=gen) / (cin * k * k) ** 0.5
    b = torch.randn(co, generator=gen) * 0.1
    return x, w, b


@pytest.mark.parametrize("unroll", [1, 0])
@pytest.mark.parametrize("name", list(SHAPES))
def test_fused_stem_matches_conv_relu_pool(name: str, unroll: int) -> None:
    shape = SHAPES[name]
    x, w, b = _operands(shape, seed=list(SHAPES).index(name) * 2 + unroll)
    wp, ks = pack_weight(w, 4)
    block = 8 if "three" in name else 16  # 18 pooled columns: three tiles of seven
    got = conv_pool(pack_input(x, 4), wp, ks, b, shape, dict(BLOCK_PW=block, BAND=2, UNROLL=unroll, num_warps=4))
    want = reference(x.double(), w.double(), b.double(), shape[5], shape[6]).float()
    assert got.shape[1] == out_size(out_size(shape[2], shape[4], shape[5], shape[6]), 3, 2, 1)
    torch.testing.assert_close(got.permute(0, 3, 1, 2), want, rtol=1e-4, atol=1e-4)


def test_conv_rows_match_conv_relu() -> None:
    shape = SHAPES["7x7/2, three tiles"]
    x, w, b = _operands(shape, seed=7)
    wp, ks = pack_weight(w, 4)
    got = conv_rows(pack_input(x, 4), wp, ks, b, shape, dict(BLOCK_OW=16, ROWS=2, UNROLL=0, num_warps=4, num_stages=2))
    want = reference(x.double(), w.double(), b.double(), shape[5], shape[6], pool=False).float()
    torch.testing.assert_close(got.permute(0, 3, 1, 2), want, rtol=1e-4, atol=1e-4)
