"""ResNet-50's expansion + downsample kernels (``ops.summed_products``) at the serving
batches, as dnnc generates them (one loop over both products' K, ``kernels._summed_operand_tiles``),
in the configs it offers first, against variants of that text: ``k_masks`` (each
operand's mask also tests K, as before ``k_whole``), ``bias_tile`` (each bias loaded as a
whole tile, as before ``KernelEmitter.columns``), and against a hand-written kernel
(``concat``): the
two weights stored side by side, each K step reading its tile from the block's 3x3
output or from its input at the strided pixel, masks on rows only.

    python bench/summed_probe.py [--batches 32,128] [--out DIR]     # GPU: DIR/summed-probe-b32-128.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import split_k_probe
from bench.gpu_timing import environment
from dnnc.backends.triton.configs import SUMMED_PRODUCT_TILES, _tile
from dnnc.backends.triton.kernels import generate
from dnnc.backends.triton.skeleton import GroupInfo, product_sizes
from dnnc.timing import device_time_ms

BLOCKS = [(56, 64, 256, 1), (56, 256, 512, 2), (28, 512, 1024, 2), (14, 1024, 2048, 2)]
"""(input size, input channels, output channels, stride) of the four blocks that change width."""
CONCAT_CONFIGS = SUMMED_PRODUCT_TILES
"""(BLOCK_M, BLOCK_N, BLOCK_K, warps, stages): the best of eight for every block at batch
32 and 128 (H200, 2026-11-28) were among these."""


@triton.jit
def concat_kernel(
    y,
    x,
    w,
    b,
    out,
    M,
    HO: tl.constexpr,
    WO: tl.constexpr,
    H: tl.constexpr,
    W: tl.constexpr,
    S: tl.constexpr,
    K1: tl.constexpr,
    K2: tl.constexpr,
    N: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
):
    """``out = relu([y | x at stride S] @ w.T + b)``, ``w`` = [w1 | w2] (``N x (K1+K2)``), NHWC."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)[:, None]
    rn = pid_n * BN + tl.arange(0, BN)[None, :]
    n_i = rm // (HO * WO)
    ho = (rm // WO) % HO
    wo = rm % WO
    row_x = n_i * (H * W) + ho * S * W + wo * S
    rk = tl.arange(0, BK)[None, :]
    kb = tl.arange(0, BK)[:, None]
    mmask = rm < M
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in range(0, K1 + K2, BK):
        first = k0 < K1
        pa = tl.where(first, y + rm * K1 + k0 + rk, x + row_x * K2 + (k0 - K1) + rk)
        a = tl.load(pa, mask=mmask, other=0.0)
        bt = tl.load(w + rn * (K1 + K2) + k0 + kb)
        acc = tl.dot(a, bt, acc)
    acc += tl.load(b + rn).to(tl.float32)
    tl.store(out + rm * N + rn, tl.maximum(acc, 0.0).to(tl.float16), mask=mmask)


def _with_k_masks(text: str, k1: int, k2: int) -> str:
    """The generated text with each operand mask testing K too (as every kernel did)."""
    for suffix, k in (("", k1), ("_s", k2)):
        text = re.sub(rf"amask{suffix} = \(rm < (\d+)\)", rf"amask{suffix} = (rm < \1) & (ka{suffix} < {k})", text)
        text = re.sub(rf"bmask{suffix} = \(rn < (\d+)\)", rf"bmask{suffix} = (kb{suffix} < {k}) & (rn < \1)", text)
    return text


def _with_bias_tile(text: str, n: int) -> str:
    """The generated text with each bias loaded as a whole ``BLOCK_M x BLOCK_N`` tile (as
    every product kernel did before ``KernelEmitter.columns``)."""
    return text.replace(f"+ o_i, mask=rn < {n}, other=0)", "+ tl.broadcast_to(o_i, (BLOCK_M, BLOCK_N)), mask=cmask, other=0)")


def variant_rows(name: str, ir: str, device: torch.device) -> list[dict]:
    """dnnc's kernel and its text variants, each config of ``SUMMED_PRODUCT_TILES``."""
    group, ins, want = split_k_probe.prepared(name, ir, device)
    info = GroupInfo.of(group)
    m, n, k, _ = product_sizes(info.anchor)
    k2 = product_sizes(info.summed)[2]
    rows = []
    for bm, bn, bk, warps, stages in SUMMED_PRODUCT_TILES:
        config = _tile(bm, bn, bk, warps, stages, (m, n, min(k, k2)))
        source = generate(group, config, info=info)
        texts = {
            "generated": source.text,
            "k_masks": _with_k_masks(source.text, k, k2),
            "bias_tile": _with_bias_tile(source.text, n),
        }
        for variant, text in texts.items():
            row = {"variant": variant, "config": config, "changed": text != source.text}
            row |= split_k_probe.timed(group, dataclasses.replace(source, text=text), config, ins, want, device)
            rows.append(row)
            print(f"{name} {variant} {json.dumps(config)} {row.get('ms', row.get('status'))}", flush=True)
    return rows


def concat_rows(n: int, h: int, c2: int, o: int, stride: int) -> list[dict]:
    ho = h // stride
    k1, m = o // 4, n * ho * ho
    g = torch.Generator().manual_seed(0)
    y = torch.randn(n, ho, ho, k1, generator=g).half().cuda()
    x = torch.randn(n, h, h, c2, generator=g).half().cuda()
    w1 = (torch.randn(o, k1, generator=g) * k1**-0.5).half().cuda()
    w2 = (torch.randn(o, c2, generator=g) * c2**-0.5).half().cuda()
    bias = torch.randn(o, generator=g).half().cuda()
    want = torch.relu(
        y.reshape(m, k1).float() @ w1.float().T + x[:, ::stride, ::stride].reshape(m, c2).float() @ w2.float().T + bias.float()
    )
    w = torch.cat([w1, w2], dim=1).contiguous()
    rows = []
    for bm, bn, bk, warps, stages in CONCAT_CONFIGS:
        out = torch.empty(m, o, dtype=torch.float16, device="cuda")
        grid = (triton.cdiv(m, bm), triton.cdiv(o, bn))

        def launch(bm=bm, bn=bn, bk=bk, warps=warps, stages=stages, out=out, grid=grid) -> None:
            concat_kernel[grid](
                y, x, w, bias, out, m, ho, ho, h, h, stride, k1, c2, o, bm, bn, bk, num_warps=warps, num_stages=stages
            )

        try:
            launch()
            error = float((out.float() - want).abs().max() / want.abs().max())
            ms = device_time_ms(launch) if error < 1e-2 else None
            rows.append({"config": [bm, bn, bk, warps, stages], "ms": ms, "rel_error": error})
        except Exception as e:  # a config that does not build is reported, not fatal
            rows.append({"config": [bm, bn, bk, warps, stages], "status": f"failed: {type(e).__name__}: {str(e)[:200]}"})
        print(f"concat b{n} {h}x{c2}->{o}/{stride} {rows[-1]}", flush=True)
    return rows


def floors_us(n: int, h: int, c2: int, o: int, stride: int, tflops: float = 688.0, gbs: float = 4190.0) -> dict:
    ho = h // stride
    m = n * ho * ho
    flops = 2 * m * o * (o // 4 + c2)
    moved = 2 * (m * o // 4 + m * c2 + m * o)
    return {"flops_us": flops / tflops / 1e6, "bytes_us": moved / gbs / 1e3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("/tmp"))
    parser.add_argument("--batches", default="32,128")
    args = parser.parse_args()
    device = torch.device("cuda")
    out = args.out / f"summed-probe-b{args.batches.replace(',', '-')}.json"
    args.out.mkdir(parents=True, exist_ok=True)
    results = []
    for n in (int(b) for b in args.batches.split(",")):
        for i, (h, c2, o, stride) in enumerate(BLOCKS, start=1):
            name = f"stage{i}-summed-b{n}"
            row = {"shape": name, "variants": variant_rows(name, split_k_probe.summed(h, c2, o, n, stride), device)}
            row["concat"] = concat_rows(n, h, c2, o, stride)
            row["floor"] = floors_us(n, h, c2, o, stride)
            results.append(row)
            out.write_text(json.dumps({"environment": environment(), "results": results}, indent=1) + "\n")
    for r in results:
        best = {
            v: min((c["ms"] for c in r["variants"] if c["variant"] == v and c.get("ms")), default=None)
            for v in ("generated", "k_masks", "bias_tile")
        }
        cat = min((c["ms"] for c in r["concat"] if c.get("ms")), default=None)
        print(f"{r['shape']}: best {best}; concat {cat}; floor {r['floor']}")


if __name__ == "__main__":
    main()
