"""A 1x1 convolution as a GEMM with its bias + residual + ReLU epilogue, in hand-written
Triton kernels of three tile strategies, against cuDNN's convolution and cuBLAS's GEMM
without the epilogue: what ``backends/triton/tma.py`` was chosen on.

Shapes are ResNet-50's residual 1x1 convolutions (pixels x channels, NHWC) at batch 128
(stages 1-4) and 32. Strategies: ``ptr`` (pointer tiles, as the generated kernels had;
``g8``: row tiles in groups of eight for L2 reuse), ``tma`` (TMA descriptors for the
operands, the residual and the output, one program per tile), ``early`` (the same with the
residual read through pointers before the K loop), ``pers1``/``pers2``
(TMA, persistent: one or two programs per SM looping over tiles), and Triton's warp
specialization (``tl.range(..., warp_specialize=True)``: warps that load apart from warps
that multiply): ``ws`` over the K loop of one tile, ``wsp1``/``wsp2`` over a persistent
program's tiles, the epilogue of one tile beside the next tile's loads. Every kernel's result is
checked against float32 first, then timed as a CUDA-graph replay (``dnnc.timing.device_time_ms``;
until 2026-11-29 ``triton.testing.do_bench``, which flushes L2 before each run and so measured
the flush more than kernels of 10-30 us). Run on the GPU: ``python bench/gemm_tile_probe.py``;
writes ``$OUT/gemm.json`` (default /tmp)."""

from __future__ import annotations

import argparse
import json
import os

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

SHAPES = {
    "s1": (128 * 56 * 56, 256, 64),
    "s2": (128 * 28 * 28, 512, 128),
    "s3": (128 * 14 * 14, 1024, 256),
    "s4": (128 * 7 * 7, 2048, 512),
    "s3b32": (32 * 14 * 14, 1024, 256),
    "s1b32": (32 * 56 * 56, 256, 64),
    "s2b32": (32 * 28 * 28, 512, 128),
    "s4b32": (32 * 7 * 7, 2048, 512),
}
"""(M pixels, N output channels, K input channels) per stage, batch 128 unless named."""
TILES = [
    (64, 128, 64, 4, 3),
    (128, 128, 64, 8, 3),
    (128, 128, 64, 4, 3),
    (128, 256, 64, 8, 3),
    (256, 128, 64, 8, 3),
    (128, 64, 64, 4, 3),
    (128, 128, 32, 4, 3),
    (128, 128, 32, 8, 4),
    (128, 128, 128, 8, 2),
]
"""(BLOCK_M, BLOCK_N, BLOCK_K, warps, stages)."""


@triton.jit
def grouped(t, tm, tn, GROUP: tl.constexpr):
    per = GROUP * tn
    first = (t // per) * GROUP
    size = min(tm - first, GROUP)
    return first + (t % per) % size, (t % per) // size


@triton.jit
def pointer_tiles(
    x, w, b, r, o, M, N, K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr
):
    pid = tl.program_id(0)
    tm, tn = tl.cdiv(M, BM), tl.cdiv(N, BN)
    if GROUP > 0:
        pm, pn = grouped(pid, tm, tn, GROUP)
    else:
        pm, pn = pid % tm, pid // tm
    rm = pm * BM + tl.arange(0, BM)[:, None]
    rn = pn * BN + tl.arange(0, BN)[None, :]
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in range(0, K, BK):
        ka = k0 + tl.arange(0, BK)[None, :]
        kb = k0 + tl.arange(0, BK)[:, None]
        a = tl.load(x + rm * K + ka, mask=(rm < M) & (ka < K), other=0.0)
        wt = tl.load(w + rn * K + kb, mask=(kb < K) & (rn < N), other=0.0)
        acc += tl.dot(a, wt)
    inside = (rm < M) & (rn < N)
    y = (
        acc
        + tl.load(b + rn, mask=rn < N, other=0.0).to(tl.float32)
        + tl.load(r + rm * N + rn, mask=inside, other=0.0).to(tl.float32)
    )
    tl.store(o + rm * N + rn, tl.maximum(y, 0.0).to(tl.float16), mask=inside)


@triton.jit
def _tma_product(xd, wd, pm, pn, K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, WS: tl.constexpr):
    """The tile's product, its operands through TMA; ``WS``: the K loop warp-specialized."""
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in tl.range(0, K, BK, warp_specialize=WS):
        acc = tl.dot(xd.load([pm * BM, k0]), wd.load([pn * BN, k0]).T, acc)
    return acc


@triton.jit
def _tma_tile(
    xd, wd, b, rd, od, pm, pn, N, K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, WS: tl.constexpr
):
    acc = _tma_product(xd, wd, pm, pn, K, BM, BN, BK, WS)
    rn = pn * BN + tl.arange(0, BN)
    y = acc + tl.load(b + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :] + rd.load([pm * BM, pn * BN]).to(tl.float32)
    od.store([pm * BM, pn * BN], tl.maximum(y, 0.0).to(tl.float16))


@triton.jit
def tma_early_residual(
    xd, wd, b, r, od, M, N, K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr
):
    """TMA operands and store; the residual read through pointers before the K loop, so
    its latency hides behind the loop instead of following it."""
    pm, pn = grouped(tl.program_id(0), tl.cdiv(M, BM), tl.cdiv(N, BN), GROUP)
    rm = pm * BM + tl.arange(0, BM)[:, None]
    rn = pn * BN + tl.arange(0, BN)[None, :]
    res = tl.load(r + rm * N + rn, mask=(rm < M) & (rn < N), other=0.0)
    acc = _tma_product(xd, wd, pm, pn, K, BM, BN, BK, False)
    y = acc + tl.load(b + rn, mask=rn < N, other=0.0).to(tl.float32) + res.to(tl.float32)
    od.store([pm * BM, pn * BN], tl.maximum(y, 0.0).to(tl.float16))


@triton.jit
def tma_tiles(
    xd,
    wd,
    b,
    rd,
    od,
    M,
    N,
    K: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    GROUP: tl.constexpr,
    WS: tl.constexpr = False,
):
    """One tile a program; ``WS``: its K loop warp-specialized."""
    pm, pn = grouped(tl.program_id(0), tl.cdiv(M, BM), tl.cdiv(N, BN), GROUP)
    _tma_tile(xd, wd, b, rd, od, pm, pn, N, K, BM, BN, BK, WS)


@triton.jit
def persistent_tma(
    xd,
    wd,
    b,
    rd,
    od,
    M,
    N,
    K: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    GROUP: tl.constexpr,
    PROGRAMS: tl.constexpr,
    WS: tl.constexpr = False,
):
    """Persistent over tiles; ``WS``: the tile loop warp-specialized (flattened with its K
    loop), one tile's epilogue beside the next tile's loads."""
    tm, tn = tl.cdiv(M, BM), tl.cdiv(N, BN)
    for t in tl.range(tl.program_id(0), tm * tn, PROGRAMS, flatten=True, warp_specialize=WS):
        pm, pn = grouped(t, tm, tn, GROUP)
        _tma_tile(xd, wd, b, rd, od, pm, pn, N, K, BM, BN, BK, False)


STRATEGIES = frozenset({"ptr", "tma", "early", "pers", "ws", "wsp"})
"""``early``: TMA tiles with the residual read through pointers before the K loop."""


def _time(fn) -> float:
    from dnnc.timing import device_time_ms

    return device_time_ms(fn) * 1e3


def probe(m: int, n: int, k: int, sms: int, strategies: frozenset[str] = STRATEGIES, tiles: list[tuple] | None = None) -> dict:
    from bench.gpu_timing import checked_kernel_us

    torch.manual_seed(0)
    x = torch.randn(m, k, device="cuda", dtype=torch.float16)
    w = torch.randn(n, k, device="cuda", dtype=torch.float16) / k**0.5
    b = torch.randn(n, device="cuda", dtype=torch.float16)
    r = torch.randn(m, n, device="cuda", dtype=torch.float16)
    o = torch.empty(m, n, device="cuda", dtype=torch.float16)
    want = torch.relu(x.float() @ w.float().T + b.float() + r.float())
    moved = (m * k + n * k + 2 * m * n) * 2
    row = {"M": m, "N": n, "K": k, "mb": moved / 1e6}
    conv_input = x.view(-1, 1, 1, k).permute(0, 3, 1, 2)  # NCHW view of the NHWC rows
    row["cudnn_conv_us"] = _time(lambda: torch.nn.functional.conv2d(conv_input, w.view(n, k, 1, 1)))
    row["cublas_mm_us"] = _time(lambda: torch.mm(x, w.T))
    kernels: dict[str, float | str] = {}

    def run(tag: str, kernel, programs: int, *args, **options) -> None:
        def fn() -> None:
            kernel[(programs,)](*args, **options)

        kernels[tag] = checked_kernel_us(fn, o, want, 0.05)  # an error: a tile that does not fit shared memory

    for bm, bn, bk, warps, stages in tiles or TILES:
        bn, bk = min(bn, n), min(bk, k)
        tiles = triton.cdiv(m, bm) * triton.cdiv(n, bn)
        name = f"{bm}x{bn}x{bk}_w{warps}s{stages}"
        launch = {"num_warps": warps, "num_stages": stages}
        if "ptr" in strategies:
            for group in (0, 8) if (bm, bn, warps) == (64, 128, 4) else (8,):
                run(f"ptr_{name}_g{group}", pointer_tiles, tiles, x, w, b, r, o, m, n, k, bm, bn, bk, group, **launch)
        xd, wd = TensorDescriptor.from_tensor(x, [bm, bk]), TensorDescriptor.from_tensor(w, [bn, bk])
        rd, od = TensorDescriptor.from_tensor(r, [bm, bn]), TensorDescriptor.from_tensor(o, [bm, bn])
        if "tma" in strategies:
            run(f"tma_{name}", tma_tiles, tiles, xd, wd, b, rd, od, m, n, k, bm, bn, bk, 8, **launch)
        if "early" in strategies:
            run(f"early_{name}", tma_early_residual, tiles, xd, wd, b, r, od, m, n, k, bm, bn, bk, 8, **launch)
        if "ws" in strategies:
            run(f"ws_{name}", tma_tiles, tiles, xd, wd, b, rd, od, m, n, k, bm, bn, bk, 8, True, **launch)
        for strategy, specialized in (("pers", False), ("wsp", True)):
            if strategy not in strategies:
                continue
            for per_sm in (1, 2):
                programs = min(tiles, sms * per_sm)
                run(
                    f"{strategy}{per_sm}_{name}",
                    persistent_tma,
                    programs,
                    xd,
                    wd,
                    b,
                    rd,
                    od,
                    m,
                    n,
                    k,
                    bm,
                    bn,
                    bk,
                    8,
                    programs,
                    specialized,
                    **launch,
                )
    row["triton"] = kernels
    timed = [(v, tag) for tag, v in kernels.items() if isinstance(v, float)]
    row["best"] = min(timed) if timed else None
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--strategies", default=",".join(sorted(STRATEGIES)))
    ap.add_argument("--tiles", default="", help="indices into TILES, comma-separated (default all)")
    args = ap.parse_args()
    strategies = frozenset(args.strategies.split(","))
    tiles = [TILES[int(i)] for i in args.tiles.split(",")] if args.tiles else TILES
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    out: dict = {"device": torch.cuda.get_device_name(), "versions": {"torch": torch.__version__, "triton": triton.__version__}}
    for name in args.shapes.split(","):  # written after each shape: a call's time limit keeps what ran
        out[name] = row = probe(*SHAPES[name], sms, strategies, tiles)
        print(name, {k: v for k, v in row.items() if k != "triton"}, flush=True)
        with open(os.path.join(os.environ.get("OUT", "/tmp"), "gemm.json"), "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
