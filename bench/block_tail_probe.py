"""A bottleneck block's 3x3 convolution and its 1x1 expansion (+ bias, ReLU, the residual,
ReLU) as one Triton kernel, against the two as separate kernels: what keeping the 3x3's
output in registers, never written, buys against the programs it costs.

A block's 3x3 output (pixels x width, fp16) is written by one kernel and read back by the
next: 41.8 us of memory time over ResNet-50's 16 blocks at b32, 167 us at b128, at 4.2
TB/s. Here a program computes a ``BLOCK_M``-pixel tile of the 3x3 convolution over the whole
width (its accumulator ``BLOCK_M`` x width in float32), applies its bias and ReLU, and
multiplies that tile, as fp16 in registers, by the expansion's weight ``BLOCK_N`` output
channels at a time, each chunk stored with its epilogue. The cost: one program per pixel
tile, not per (pixel tile, channel tile) (stage 3 at b32: 49 or 98 programs on 132 SMs).

    python bench/block_tail_probe.py [--batch 32] [--stages 1,2,3,4] [--out DIR]

The separate pair is ``bench/stream_k_probe.py``'s tile kernel (3x3 + bias + ReLU) and
``bench/gemm_tile_probe.py``'s TMA expansion, each with its best config. Every output is
checked against float32 first; times are CUDA-graph replays (``dnnc.timing.device_time_ms``).
Writes ``DIR/block-tail.json`` (default /tmp) after each stage.

Measured on an H200 (2026-11-29, BENCHMARKS.md, thirty-first session): the one kernel lost
to the two apart on every stage at batch 32 and 128 (9-41% on stages 1-3, 3-5x on stage 4).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.stream_k_probe import Conv, checked_us, conv_steps

STAGES = {1: (56, 64, 256), 2: (28, 128, 512), 3: (14, 256, 1024), 4: (7, 512, 2048)}
"""(map size, width, output channels) of a ResNet-50 block after each stage's first."""
CONFIGS = [(128, 64, 128, 8, 3), (64, 64, 128, 8, 3), (64, 64, 128, 8, 2), (64, 32, 64, 8, 3), (64, 32, 64, 8, 2)]
"""(BLOCK_M, BLOCK_K of the 3x3, BLOCK_N of the expansion, warps, stages). Built for sm_90 without
a GPU, a 64-pixel tile of width 256 with BLOCK_K 64, BLOCK_N 128 and three stages asks 240 KB of
shared memory (the 3x3's weight tiles, the expansion's, the middle tile on its way to wgmma),
past the 227 KB an SM has: the narrower and two-stage configs are for widths 256 and 512."""


@triton.jit
def conv3x3_expand(
    x,
    w3,
    b3,
    we,
    be,
    r,
    y,
    H,
    W,
    M,
    C: tl.constexpr,
    N: tl.constexpr,
    BM: tl.constexpr,
    BK: tl.constexpr,
    BN: tl.constexpr,
):
    """``y = relu(relu(conv3x3(x) + b3) @ we.T + be + r)`` for pixel tile ``program_id``:
    ``x`` NHWC with ``C`` channels, ``w3`` OHWI (``C`` -> ``C``), ``we`` ``N`` x ``C``,
    ``r`` and ``y`` pixels x ``N``; stride 1, padding 1."""
    pm = tl.program_id(0)
    acc = tl.zeros((BM, C), tl.float32)
    acc = conv_steps(x, w3, acc, pm, 0, 0, 9 * C // BK, H, W, H, W, M, C, 1, BM, C, BK)
    rc = tl.arange(0, C)
    middle = tl.maximum(acc + tl.load(b3 + rc).to(tl.float32)[None, :], 0.0).to(x.dtype.element_ty)
    rm = pm * BM + tl.arange(0, BM)
    rows = (rm < M)[:, None]
    for n0 in range(0, N, BN):
        rn = n0 + tl.arange(0, BN)
        out = tl.dot(middle, tl.load(we + rn[None, :] * C + rc[:, None]))
        out += tl.load(be + rn).to(tl.float32)[None, :]
        out += tl.load(r + rm[:, None] * N + rn[None, :], mask=rows, other=0.0).to(tl.float32)
        tl.store(y + rm[:, None] * N + rn[None, :], tl.maximum(out, 0.0).to(y.dtype.element_ty), mask=rows)


class BlockTail:
    """A block's 3x3 convolution (``Conv``, stride 1) and its expansion's tensors."""

    def __init__(self, n: int, hw: int, width: int, cout: int, device: torch.device, seed: int = 0) -> None:
        self.conv = Conv(n, hw, width, width, 1, device, seed)
        gen = torch.Generator().manual_seed(seed + 1)
        self.n, self.width, self.cout, self.m = n, width, cout, self.conv.m
        self.we = (torch.randn(cout, width, generator=gen) / width**0.5).to(device, torch.float16)
        self.be = torch.randn(cout, generator=gen).to(device, torch.float16)
        self.r = torch.randn(self.m, cout, generator=gen).to(device, torch.float16)
        self.y = torch.empty(self.m, cout, device=device, dtype=torch.float16)

    def want(self) -> torch.Tensor:
        middle = self.conv.want().reshape(self.m, self.width).half().float()  # fp16 between, as the kernels hold it
        return torch.relu(middle @ self.we.float().T + self.be.float() + self.r.float())

    def fused(self, bm: int, bk: int, bn: int, warps: int, stages: int) -> None:
        c = self.conv
        conv3x3_expand[(triton.cdiv(self.m, bm),)](
            c.x, c.w, c.b, self.we, self.be, self.r, self.y, c.hw, c.hw, self.m,
            self.width, self.cout, bm, bk, bn, num_warps=warps, num_stages=stages,
        )  # fmt: skip


def probe(stage: int, batch: int, device: str = "cuda") -> dict:
    """One stage's block tail, fused and apart, every config checked then timed; ``device``
    other than the GPU only to walk the code on the interpreter."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    from bench.gemm_tile_probe import TILES, tma_tiles
    from bench.stream_k_probe import CONFIGS as CONV_CONFIGS

    hw, width, cout = STAGES[stage]
    block = BlockTail(batch, hw, width, cout, torch.device(device))
    want, want_middle = block.want(), block.conv.want()
    row: dict = {"stage": stage, "batch": batch, "pixels": block.m, "width": width, "out": cout}
    row["middle_mb"] = block.m * width * 2 / 1e6

    fused = {}
    for bm, bk, bn, warps, stages in CONFIGS:
        bk, bn = min(bk, width), min(bn, cout)
        fused[f"{bm}x{bk}x{bn}_w{warps}s{stages}"] = checked_us(
            lambda bm=bm, bk=bk, bn=bn, warps=warps, stages=stages: block.fused(bm, bk, bn, warps, stages), block.y, want
        )
    conv = block.conv
    apart_3x3 = {}
    for bm, bn, bk, warps, stages in CONV_CONFIGS:
        bn, bk = min(bn, width), min(bk, width)
        apart_3x3[f"{bm}x{bn}x{bk}_w{warps}s{stages}"] = checked_us(
            lambda bm=bm, bn=bn, bk=bk, warps=warps, stages=stages: conv.tiles(bm, bn, bk, warps, stages), conv.y, want_middle
        )
    middle = conv.y.reshape(block.m, width)
    middle.copy_(want_middle.reshape(block.m, width).half())
    apart_expand = {}
    for bm, bn, bk, warps, stages in TILES:
        bn, bk = min(bn, cout), min(bk, width)
        xd, wd = TensorDescriptor.from_tensor(middle, [bm, bk]), TensorDescriptor.from_tensor(block.we, [bn, bk])
        rd, od = TensorDescriptor.from_tensor(block.r, [bm, bn]), TensorDescriptor.from_tensor(block.y, [bm, bn])
        grid = (triton.cdiv(block.m, bm) * triton.cdiv(cout, bn),)
        apart_expand[f"{bm}x{bn}x{bk}_w{warps}s{stages}"] = checked_us(
            lambda grid=grid, xd=xd, wd=wd, rd=rd, od=od, bm=bm, bn=bn, bk=bk, warps=warps, stages=stages: tma_tiles[grid](
                xd, wd, block.be, rd, od, block.m, cout, width, bm, bn, bk, 8, num_warps=warps, num_stages=stages
            ),
            block.y,
            want,
        )
    row["fused"], row["apart_3x3"], row["apart_expand"] = fused, apart_3x3, apart_expand
    best = {
        name: min((v for v in d.values() if isinstance(v, float)), default=None)
        for name, d in row.items()
        if name.startswith(("fused", "apart"))
    }
    row["best"] = best
    if best["apart_3x3"] is not None and best["apart_expand"] is not None:
        row["best"]["apart"] = round(best["apart_3x3"] + best["apart_expand"], 2)
    return row


def main() -> None:
    from bench.gpu_timing import environment

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--stages", default="1,2,3,4")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
    args = ap.parse_args()
    out: dict = {"environment": environment(), "rows": []}
    for stage in (int(s) for s in args.stages.split(",")):
        row = probe(stage, args.batch)
        out["rows"].append(row)
        print(f"b{args.batch} stage {stage}: {row['best']}", flush=True)
        Path(args.out, "block-tail.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
