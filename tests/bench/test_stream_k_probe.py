"""``bench/stream_k_probe.py``'s kernels against float32 on fresh random inputs (Triton's
interpreter where there is no GPU): a 3x3 convolution, stride 1 and 2, with partial row
tiles, one program per tile and stream-K with fewer programs than tiles, so that tiles are
shared between programs, some by three."""

from __future__ import annotations

import pytest
import torch

from bench.stream_k_probe import Conv


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
