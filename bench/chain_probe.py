"""Two 1x1 convolutions across a ResNet block boundary as one Triton kernel, against the
two kernels dnnc runs for them now: what fusing a 1x1 chain (the issue's third lever)
would save where bytes bound the layers.

A bottleneck block ends with a 1x1 expansion + bias + residual + ReLU (``K1 -> N1``
channels) whose result is the next block's residual and the input of its first 1x1
reduction + bias + ReLU (``N1 -> N2``). Run apart, the reduction reads the ``M x N1``
tensor back: at batch 128, stage 1, 205 MB, about 49 us at 4.2 TB/s. The chained kernel
computes the expansion ``BLOCK_N1`` columns at a time, stores them (the residual stream
still needs them) and multiplies them, still in registers, into the reduction's
accumulator, so that tensor is written once and never read back. The baseline is the
expansion as a TMA kernel of ``gemm_tile_probe`` (the best of its tiles, as dnnc's Triton
1x1 convolutions with a residual run) plus cuDNN's reduction convolution without its
epilogue. Every kernel's outputs are checked against float32 first.

    python bench/chain_probe.py [--out DIR]     # GPU: writes DIR/chain-probe.json (default /tmp)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.gemm_tile_probe import TILES, tma_tiles
from bench.gpu_timing import environment

SHAPES = {
    "stage1-b32": (32 * 56 * 56, 64, 256, 64),
    "stage2-b32": (32 * 28 * 28, 128, 512, 128),
    "stage1-b128": (128 * 56 * 56, 64, 256, 64),
    "stage2-b128": (128 * 28 * 28, 128, 512, 128),
    "stage3-b128": (128 * 14 * 14, 256, 1024, 256),
}
"""(M pixels, K1 block input channels, N1 residual channels, N2 next reduction's channels)."""
CHAIN_TILES = [(64, 64, 4, 3), (64, 128, 8, 3), (128, 64, 8, 3), (128, 128, 8, 2), (64, 64, 8, 2)]
"""(BLOCK_M, BLOCK_N1, warps, stages) of the chained kernel."""


@triton.jit
def chain(
    ad,
    w1d,
    b1,
    rd,
    y1d,
    w2d,
    b2,
    y2d,
    K1: tl.constexpr,
    N1: tl.constexpr,
    N2: tl.constexpr,
    BM: tl.constexpr,
    BN1: tl.constexpr,
    BK: tl.constexpr,
):
    """``y1 = relu(a @ w1.T + b1 + r)``, ``y2 = relu(y1 @ w2.T + b2)`` for ``BM`` rows: ``y1``
    ``BN1`` columns at a time, each stored and multiplied into ``y2``'s accumulator."""
    row = tl.program_id(0) * BM
    acc2 = tl.zeros((BM, N2), tl.float32)
    for n0 in range(0, N1, BN1):
        acc1 = tl.zeros((BM, BN1), tl.float32)
        for k0 in range(0, K1, BK):
            acc1 = tl.dot(ad.load([row, k0]), w1d.load([n0, k0]).T, acc1)
        cols = n0 + tl.arange(0, BN1)
        y = acc1 + tl.load(b1 + cols).to(tl.float32)[None, :] + rd.load([row, n0]).to(tl.float32)
        y = tl.maximum(y, 0.0).to(tl.float16)
        y1d.store([row, n0], y)
        acc2 = tl.dot(y, w2d.load([0, n0]).T, acc2)
    out = acc2 + tl.load(b2 + tl.arange(0, N2)).to(tl.float32)[None, :]
    y2d.store([row, 0], tl.maximum(out, 0.0).to(tl.float16))


def operands(m: int, k1: int, n1: int, n2: int, device: str) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)

    def rand(*shape: int, scale: float = 1.0) -> torch.Tensor:
        return (torch.randn(*shape, generator=g) * scale).half().to(device)

    return {
        "a": rand(m, k1),
        "w1": rand(n1, k1, scale=k1**-0.5),
        "b1": rand(n1),
        "r": rand(m, n1),
        "w2": rand(n2, n1, scale=n1**-0.5),
        "b2": rand(n2),
    }


def reference(x: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Both outputs in float32, from the float16 operands (``y1`` rounded to float16 before
    the reduction, as the kernels store and read it)."""
    f = {k: v.float().cpu() for k, v in x.items()}
    y1 = torch.relu(f["a"] @ f["w1"].T + f["b1"] + f["r"]).half().float()
    return y1, torch.relu(y1 @ f["w2"].T + f["b2"])


def run_chain(
    x: dict[str, torch.Tensor], bm: int, bn1: int, warps: int, stages: int
) -> tuple[torch.Tensor, torch.Tensor, object]:
    """The chained kernel's outputs and a launch that rewrites them."""
    m, k1 = x["a"].shape
    n1, n2 = x["w1"].shape[0], x["w2"].shape[0]
    bk = min(k1, 64)
    y1 = torch.empty(m, n1, dtype=torch.float16, device=x["a"].device)
    y2 = torch.empty(m, n2, dtype=torch.float16, device=x["a"].device)
    d = TensorDescriptor.from_tensor
    args = (
        d(x["a"], [bm, bk]),
        d(x["w1"], [bn1, bk]),
        x["b1"],
        d(x["r"], [bm, bn1]),
        d(y1, [bm, bn1]),
        d(x["w2"], [n2, bn1]),
        x["b2"],
        d(y2, [bm, n2]),
    )

    def launch() -> None:
        chain[(triton.cdiv(m, bm),)](*args, k1, n1, n2, bm, bn1, bk, num_warps=warps, num_stages=stages)

    launch()
    return y1, y2, launch


def _matches(got: torch.Tensor, want: torch.Tensor) -> float:
    return float((got.float().cpu() - want).abs().max() / want.abs().max().clamp_min(1e-6))


def _time(fn) -> float:
    return triton.testing.do_bench(fn, warmup=10, rep=50) * 1e3


def probe(m: int, k1: int, n1: int, n2: int) -> dict:
    x = operands(m, k1, n1, n2, "cuda")
    want1, want2 = reference(x)
    row: dict = {"M": m, "K1": k1, "N1": n1, "N2": n2}
    row["mb_chained"] = (m * k1 + 2 * m * n1 + m * n2) * 2 / 1e6
    row["mb_apart"] = row["mb_chained"] + m * n1 * 2 / 1e6  # the reduction reads y1 back
    chained = {}
    for bm, bn1, warps, stages in CHAIN_TILES:
        tag = f"{bm}x{bn1}_w{warps}s{stages}"
        try:
            y1, y2, launch = run_chain(x, bm, bn1, warps, stages)
            torch.cuda.synchronize()
            errors = (_matches(y1, want1), _matches(y2, want2))
            chained[tag] = round(_time(launch), 2) if max(errors) < 1e-2 else f"wrong by {errors}"
        except Exception as e:  # a tile that does not fit shared memory or registers
            chained[tag] = f"error: {type(e).__name__}: {str(e)[:160]}"
        print(f"  chain {tag}: {chained[tag]}", flush=True)
    row["chained_us"] = chained
    expansion = {}
    y1 = torch.empty(m, n1, dtype=torch.float16, device="cuda")
    for bm, bn, bk, warps, stages in TILES:
        bn, bk = min(bn, n1), min(bk, k1)
        d = TensorDescriptor.from_tensor
        args = (
            d(x["a"], [bm, bk]),
            d(x["w1"], [bn, bk]),
            x["b1"],
            d(x["r"], [bm, bn]),
            d(y1, [bm, bn]),
            m,
            n1,
            k1,
            bm,
            bn,
            bk,
            8,
        )
        tiles = triton.cdiv(m, bm) * triton.cdiv(n1, bn)

        def launch(args=args, tiles=tiles, warps=warps, stages=stages) -> None:
            tma_tiles[(tiles,)](*args, num_warps=warps, num_stages=stages)

        tag = f"{bm}x{bn}x{bk}_w{warps}s{stages}"
        try:
            launch()
            torch.cuda.synchronize()
            expansion[tag] = round(_time(launch), 2) if _matches(y1, want1) < 1e-2 else "wrong"
        except Exception as e:
            expansion[tag] = f"error: {type(e).__name__}"
    row["expansion_us"] = expansion
    y1_nchw = want1.half().cuda().view(-1, 1, 1, n1).permute(0, 3, 1, 2)  # NHWC rows as an NCHW view
    row["cudnn_reduction_us"] = round(_time(lambda: torch.nn.functional.conv2d(y1_nchw, x["w2"].view(n2, n1, 1, 1))), 2)
    best = [v for v in chained.values() if isinstance(v, float)]
    apart = [v for v in expansion.values() if isinstance(v, float)]
    row["best_chained_us"] = min(best) if best else None
    row["best_apart_us"] = round(min(apart) + row["cudnn_reduction_us"], 2) if apart else None
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("/tmp"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = {}
    for name, shape in SHAPES.items():
        print(name, shape, flush=True)
        rows[name] = probe(*shape)
        print(name, {k: v for k, v in rows[name].items() if not k.endswith("_us") or k.startswith("best")}, flush=True)
        (args.out / "chain-probe.json").write_text(json.dumps({"environment": environment(), "results": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
