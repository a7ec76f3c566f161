"""``bench/block_tail_probe.py``'s fused kernel (a block's 3x3 convolution, its bias and
ReLU, then the 1x1 expansion with bias, residual and ReLU, the 3x3's output never stored)
against float32 on fresh random inputs (Triton's interpreter where there is no GPU), on a
map whose pixels leave a partial tile and an expansion wider than one channel chunk."""

from __future__ import annotations

import pytest
import torch

from bench.block_tail_probe import BlockTail
from tests.bench.sm90_build import built_for_sm90


@pytest.mark.parametrize("bm", [16, 32])
def test_the_3x3_and_its_expansion_in_one_kernel(bm: int) -> None:
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    block = BlockTail(n=2, hw=5, width=32, cout=64, device=device, seed=bm)  # 50 pixels
    block.y.zero_()
    block.fused(bm, bk=16, bn=32, warps=4, stages=2)
    torch.testing.assert_close(block.y.float(), block.want(), rtol=5e-3, atol=5e-3)


@pytest.mark.parametrize(("width", "cout", "bm"), [(64, 256, 128), (256, 1024, 64)])
def test_the_fused_kernel_builds_for_sm90_on_wgmma(width: int, cout: int, bm: int) -> None:
    """Both products of the fused kernel on wgmma for sm_90 (the 3x3's K loop pipelined),
    for ResNet-50's stage-1 and stage-3 widths."""
    values = dict(x="*fp16", w3="*fp16", b3="*fp16", we="*fp16", be="*fp16", r="*fp16", y="*fp16", H=14, W=14, M=6272)
    values |= dict(C=width, N=cout, BM=bm, BK=64, BN=128)
    built = built_for_sm90("bench.block_tail_probe", "conv3x3_expand", values, warps=8, stages=3)
    assert built["wgmma"] and built["cp_async"]
