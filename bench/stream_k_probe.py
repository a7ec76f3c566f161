"""ResNet-50's 3x3 convolutions (+ bias + ReLU, NHWC in and out, OHWI weights) as Triton
implicit GEMMs of one program per output tile and as stream-K kernels, beside torch's
cuDNN convolution (no epilogue): what a kernel that splits K evenly across the SMs buys
where a product's tiles do not fill the last wave.

At batch 32 the 3x3 convolutions of stages 2-4 have 52-196 output tiles of 128 x 128 for
132 SMs, and cuDNN's best plans run them at 417-442 TFLOP/s against 579-676 at batch 128
(``cudnn-plan-probe-sweep-b{32,128}-2026-11-29-h200.json``). A stream-K kernel launches
``PROGRAMS`` programs (one or two per SM) and gives each the same count of K steps of the
whole product (tiles x K steps), so every SM works to the end; a tile whose K steps
several programs share is summed by the program that stores its last partial (an
arrival count per tile, as dnnc's split-K kernels do), which then runs the epilogue.
Splitting K in fixed slices lost at batch 32 (BENCHMARKS.md, "serving-batch products
split over K"): every tile's partials went through memory; here only the tiles that
straddle two programs' ranges do.

    python bench/stream_k_probe.py [--batch 32] [--shapes s2,s3,s4] [--out DIR]

Each kernel's output is checked against float32 first; times are CUDA-graph replays
(``dnnc.timing.device_time_ms``). Writes ``DIR/stream-k.json`` (default /tmp) after each
shape.

Measured on an H200 (2026-11-29, BENCHMARKS.md, thirty-first session): stream-K lost to one
program per tile on every shape at batch 32 and 128, and both Triton forms to cuDNN where K
is deep (stages 3-4).
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

from bench.gemm_tile_probe import grouped

SHAPES = {
    "s1": (56, 64, 64, 1),
    "s2": (28, 128, 128, 1),
    "s2s2": (56, 128, 128, 2),
    "s3": (14, 256, 256, 1),
    "s3s2": (28, 256, 256, 2),
    "s4": (7, 512, 512, 1),
    "s4s2": (14, 512, 512, 2),
}
"""(input height = width, input channels, output channels, stride) of ResNet-50's 3x3
convolutions, stage by stage; ``s2s2`` and so on are each stage's first, strided one."""
CONFIGS = [
    (128, 128, 64, 8, 3),
    (128, 64, 64, 4, 3),
    (64, 128, 64, 4, 3),
    (128, 128, 32, 4, 4),
    (64, 64, 64, 4, 3),
]
"""(BLOCK_M, BLOCK_N, BLOCK_K, warps, stages)."""


@triton.jit
def conv_steps(
    x,
    w,
    acc,
    pm,
    pn,
    k_first,
    k_last,
    H,
    W,
    OH,
    OW,
    M,
    C: tl.constexpr,
    STRIDE: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
):
    """K steps ``k_first`` up to ``k_last`` of an output tile's product: step ``kk`` is
    tap ``kk // (C / BK)`` (row-major over the 3x3 window) and its ``BK`` input channels
    from ``(kk % (C / BK)) * BK``; rows outside the input (the padding) read zeros."""
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    ow = rm % OW
    oh = (rm // OW) % OH
    nb = rm // (OW * OH)
    CB: tl.constexpr = C // BK
    for kk in range(k_first, k_last):
        tap = kk // CB
        c0 = (kk % CB) * BK
        ih = oh * STRIDE - 1 + tap // 3
        iw = ow * STRIDE - 1 + tap % 3
        inside = (rm < M) & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        a = tl.load(x + (((nb * H + ih) * W + iw) * C + c0)[:, None] + rk[None, :], mask=inside[:, None], other=0.0)
        b = tl.load(w + rn[None, :] * (9 * C) + (tap * C + c0 + rk)[:, None])
        acc = tl.dot(a, b, acc)
    return acc


@triton.jit
def _epilogue(acc, b, y, pm, pn, M, N: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    out = tl.maximum(acc + tl.load(b + rn).to(tl.float32)[None, :], 0.0)
    tl.store(y + rm[:, None] * N + rn[None, :], out.to(y.dtype.element_ty), mask=(rm < M)[:, None])


@triton.jit
def conv_tiles(
    x,
    w,
    b,
    y,
    H,
    W,
    OH,
    OW,
    M,
    C: tl.constexpr,
    N: tl.constexpr,
    STRIDE: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    GROUP: tl.constexpr,
):
    """One program per output tile, the whole K loop (as dnnc's generated convolutions)."""
    pm, pn = grouped(tl.program_id(0), tl.cdiv(M, BM), N // BN, GROUP)
    acc = tl.zeros((BM, BN), tl.float32)
    acc = conv_steps(x, w, acc, pm, pn, 0, 9 * C // BK, H, W, OH, OW, M, C, STRIDE, BM, BN, BK)
    _epilogue(acc, b, y, pm, pn, M, N, BM, BN)


@triton.jit
def conv_stream_k(
    x,
    w,
    b,
    y,
    partials,
    arrivals,
    H,
    W,
    OH,
    OW,
    M,
    C: tl.constexpr,
    N: tl.constexpr,
    STRIDE: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    GROUP: tl.constexpr,
    PROGRAMS: tl.constexpr,
    MAX_SHARES: tl.constexpr,
):
    """``PROGRAMS`` programs, each taking the next ``ceil(tiles * steps / PROGRAMS)`` K
    steps of the product in tile order. A tile a program covers whole is stored at once;
    a tile's share is stored as a float32 partial in ``partials`` (slot: the tile, and the
    program's place among those sharing it) and counted in ``arrivals``; the program
    whose count comes last adds the shares in order, resets the count for the next launch
    and runs the epilogue."""
    tm = tl.cdiv(M, BM)
    tn = N // BN
    STEPS: tl.constexpr = 9 * C // BK
    total = tm * tn * STEPS
    per = tl.cdiv(total, PROGRAMS)
    pid = tl.program_id(0)
    it = pid * per
    end = tl.minimum(it + per, total)
    slot = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    while it < end:
        tile = it // STEPS
        k_first = it - tile * STEPS
        k_last = tl.minimum(STEPS, k_first + end - it)
        pm, pn = grouped(tile, tm, tn, GROUP)
        acc = tl.zeros((BM, BN), tl.float32)
        acc = conv_steps(x, w, acc, pm, pn, k_first, k_last, H, W, OH, OW, M, C, STRIDE, BM, BN, BK)
        if (k_first == 0) & (k_last == STEPS):
            _epilogue(acc, b, y, pm, pn, M, N, BM, BN)
        else:
            first = (tile * STEPS) // per
            shares = ((tile + 1) * STEPS - 1) // per - first + 1
            tl.store(partials + (tile * MAX_SHARES + pid - first) * (BM * BN) + slot, acc)
            tl.debug_barrier()  # the whole share is stored before it is counted
            arrived = tl.atomic_add(arrivals + tile, 1, sem="acq_rel")
            if arrived == shares - 1:
                acc = tl.zeros((BM, BN), tl.float32)
                for q in range(0, shares):
                    acc += tl.load(partials + (tile * MAX_SHARES + q) * (BM * BN) + slot, cache_modifier=".cg")
                tl.store(arrivals + tile, 0)
                _epilogue(acc, b, y, pm, pn, M, N, BM, BN)
        it += k_last - k_first


class Conv:
    """One 3x3 convolution's tensors (NHWC input and output, OHWI weight) and its launches."""

    def __init__(self, n: int, hw: int, c: int, o: int, stride: int, device: torch.device, seed: int = 0) -> None:
        gen = torch.Generator().manual_seed(seed)
        self.n, self.hw, self.c, self.o, self.stride = n, hw, c, o, stride
        self.out_hw = (hw + 2 - 3) // stride + 1
        self.m = n * self.out_hw * self.out_hw
        dtype = torch.float16
        self.x = torch.randn(n, hw, hw, c, generator=gen).to(device, dtype)
        self.w = (torch.randn(o, 3, 3, c, generator=gen) / (9 * c) ** 0.5).to(device, dtype)
        self.b = torch.randn(o, generator=gen).to(device, dtype)
        self.y = torch.empty(n, self.out_hw, self.out_hw, o, device=device, dtype=dtype)

    def want(self) -> torch.Tensor:
        """float32 reference, NHWC."""
        x, w = self.x.float().permute(0, 3, 1, 2), self.w.float().permute(0, 3, 1, 2)
        y = torch.nn.functional.conv2d(x, w, self.b.float(), stride=self.stride, padding=1)
        return torch.relu(y).permute(0, 2, 3, 1)

    def sizes(self) -> tuple:
        return (self.hw, self.hw, self.out_hw, self.out_hw, self.m, self.c, self.o, self.stride)

    def tiles(self, bm: int, bn: int, bk: int, warps: int, stages: int) -> None:
        grid = (triton.cdiv(self.m, bm) * (self.o // bn),)
        conv_tiles[grid](self.x, self.w, self.b, self.y, *self.sizes(), bm, bn, bk, 8, num_warps=warps, num_stages=stages)

    def stream_k_scratch(self, bm: int, bn: int, bk: int, programs: int) -> tuple[torch.Tensor, torch.Tensor, int]:
        """The partials and arrival counts a stream-K launch needs, and the most programs
        that can share one tile."""
        tiles = triton.cdiv(self.m, bm) * (self.o // bn)
        steps = 9 * self.c // bk
        per = triton.cdiv(tiles * steps, programs)
        shares = triton.cdiv(steps, per) + 1
        partials = torch.empty(tiles * shares * bm * bn, device=self.x.device, dtype=torch.float32)
        return partials, torch.zeros(tiles, device=self.x.device, dtype=torch.int32), shares

    def stream_k(self, bm: int, bn: int, bk: int, warps: int, stages: int, programs: int, scratch: tuple) -> None:
        partials, arrivals, shares = scratch
        conv_stream_k[(programs,)](
            self.x, self.w, self.b, self.y, partials, arrivals, *self.sizes(),
            bm, bn, bk, 8, programs, shares, num_warps=warps, num_stages=stages,
        )  # fmt: skip


def checked_us(fn, got: torch.Tensor, expected: torch.Tensor) -> float | str:
    """``fn``'s time in microseconds (a CUDA-graph replay) once what it writes to ``got``
    is within 2% of ``expected``'s largest value; else why not, as text."""
    from dnnc.timing import device_time_ms

    try:
        got.zero_()
        fn()
        torch.cuda.synchronize()
        err = (got.float().reshape(expected.shape) - expected).abs().max().item()
        if not err <= 0.02 * expected.abs().max().item():  # NaN included
            return f"wrong by {err}"
        return round(1000 * device_time_ms(fn), 2)
    except Exception as e:  # a tile that does not fit shared memory or registers
        return f"error: {str(e)[:160]}"


def probe(name: str, batch: int, sms: int, device: str = "cuda") -> dict:
    """One shape's kernels, every config checked then timed; ``device`` other than the GPU
    only to walk the code on the interpreter."""
    from dnnc.timing import device_time_ms

    hw, c, o, stride = SHAPES[name]
    conv = Conv(batch, hw, c, o, stride, torch.device(device))
    want = conv.want()
    row: dict = {"shape": name, "batch": batch, "M": conv.m, "N": o, "K": 9 * c, "gflop": 2 * conv.m * o * 9 * c / 1e9}
    x_cl = conv.x.permute(0, 3, 1, 2)  # NCHW view of NHWC: torch runs cuDNN channels-last
    w_cl = conv.w.permute(0, 3, 1, 2)
    row["cudnn_conv_us"] = 1000 * device_time_ms(lambda: torch.nn.functional.conv2d(x_cl, w_cl, stride=stride, padding=1))
    kernels: dict[str, float | str] = {}

    def run(tag: str, fn) -> None:
        kernels[tag] = checked_us(fn, conv.y, want)

    for bm, bn, bk, warps, stages in CONFIGS:
        bn, bk = min(bn, o), min(bk, c)
        tag = f"{bm}x{bn}x{bk}_w{warps}s{stages}"
        run(f"tiles_{tag}", lambda bm=bm, bn=bn, bk=bk, warps=warps, stages=stages: conv.tiles(bm, bn, bk, warps, stages))
        for per_sm in (1, 2):
            programs = sms * per_sm
            scratch = conv.stream_k_scratch(bm, bn, bk, programs)
            run(
                f"streamk{per_sm}_{tag}",
                lambda bm=bm, bn=bn, bk=bk, warps=warps, stages=stages, programs=programs, scratch=scratch: conv.stream_k(
                    bm, bn, bk, warps, stages, programs, scratch
                ),
            )
    row["triton"] = kernels
    timed = sorted((v, tag) for tag, v in kernels.items() if isinstance(v, float))
    row["best_tiles"] = next(((v, t) for v, t in timed if t.startswith("tiles")), None)
    row["best_stream_k"] = next(((v, t) for v, t in timed if t.startswith("streamk")), None)
    return row


def main() -> None:
    from bench.gpu_timing import environment

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--shapes", default="s2,s2s2,s3,s3s2,s4,s4s2")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
    args = ap.parse_args()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    out: dict = {"environment": environment(), "rows": []}
    for name in args.shapes.split(","):
        row = probe(name, args.batch, sms)
        out["rows"].append(row)
        print(
            f"b{args.batch} {name}: cuDNN {row['cudnn_conv_us']:.1f} us, tiles {row['best_tiles']}, "
            f"stream-K {row['best_stream_k']}",
            flush=True,
        )
        Path(args.out, "stream-k.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
