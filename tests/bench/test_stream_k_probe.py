"""``bench/stream_k_probe.py``'s kernels against float32 on fresh random inputs (Triton's
interpreter where there is no GPU): a 3x3 convolution, stride 1 and 2, with partial row
tiles, one program per tile and stream-K with fewer programs than tiles, so that tiles are
shared between programs, some by three; and both kernels built for sm_90 by Triton's
compiler, where their K loops must come out pipelined onto wgmma."""

from __future__ import annotations

import pytest
import torch

from bench.stream_k_probe import Conv
from tests.bench.sm90_build import built_for_sm90


def device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("programs", [0, 3, 5, 7])
def test_a_3x3_convolution_with_bias_and_relu(stride: int, programs: int) -> None:
    conv = Conv(n=2, hw=7, c=32, o=32, stride=stride, device=device(), seed=stride * 10 + programs)
    bm, bn, bk = 16, 16, 16  # 18 K steps a tile; rows 98 (stride 1) or 32 (stride 2)
    if programs == 0:
        conv.tiles(bm, bn, bk, warps=4, stages=2)
    else:
        scratch = conv.stream_k_scratch(bm, bn, bk, programs)
        conv.stream_k(bm, bn, bk, 4, 2, programs, scratch)
        conv_again = conv.y.clone()
        conv.stream_k(bm, bn, bk, 4, 2, programs, scratch)  # the arrival counts were reset
        torch.testing.assert_close(conv.y, conv_again)
        assert int(scratch[1].sum()) == 0
    torch.testing.assert_close(conv.y.float(), conv.want(), rtol=3e-3, atol=3e-3)


def test_stream_k_shares_a_tile_among_at_most_the_programs_it_sizes_for() -> None:
    conv = Conv(n=1, hw=7, c=32, o=32, stride=1, device=device())
    partials, arrivals, shares = conv.stream_k_scratch(16, 16, 16, programs=7)
    tiles, steps = 4 * 2, 18  # 49 rows in 16-row tiles, 32 channels in 16
    per = -(-tiles * steps // 7)
    assert shares == -(-steps // per) + 1
    assert arrivals.numel() == tiles and partials.numel() == tiles * shares * 16 * 16


@pytest.mark.parametrize("kernel", ["conv_tiles", "conv_stream_k"])
def test_the_kernels_build_for_sm90_pipelined_on_wgmma(kernel: str) -> None:
    """Triton's compiler takes the kernels for sm_90 (the stream-K one's K loop of dynamic
    bounds inside its while loop included) and pipelines their K loops (asynchronous
    copies, three stages of shared memory) onto wgmma."""
    values = dict(x="*fp16", w="*fp16", b="*fp16", y="*fp16", H=28, W=28, OH=28, OW=28, M=25088)
    values |= dict(C=128, N=128, STRIDE=1, BM=128, BN=128, BK=64, GROUP=8)
    values |= dict(partials="*fp32", arrivals="*i32", PROGRAMS=132, MAX_SHARES=3)
    built = built_for_sm90("bench.stream_k_probe", kernel, values, warps=8, stages=3)
    assert built["wgmma"] and built["cp_async"]
    assert built["shared"] >= 3 * (128 * 64 + 64 * 128) * 2
