"""A chain of small dependent Triton products in one CUDA graph, launched plainly and with
Programmatic Dependent Launch (PDL, Hopper and later): what PDL would save per kernel
boundary before dnnc's launcher and kernel emitter take it up.

ResNet-50 at batch 1 runs 52 kernels in about 0.29 ms on an H200, and its program takes
about 15 us more than its kernels' sum (``compile-profile-2026-11-29-h200-resnet50-b1.json``):
the gaps between dependent kernels in the CUDA graph, and each kernel's ramp while the
previous one drains. With PDL a kernel is launched while its predecessor still runs and
waits (``griddepcontrol.wait``, ``tl.extra.cuda.gdc_wait``) only where it first reads what
the predecessor wrote. A batch-1 convolution's bytes are mostly its weights, which no
earlier kernel writes: those could be read before the wait.

The chain alternates a ResNet-50 bottleneck's 1x1 products (stage 3 at batch 1: 196 pixels,
1024 <-> 256 channels; stage 2 at batch 1; stage 3 at batch 32 in 128 x 128 tiles, several
waves a kernel), each with a ReLU, ping-ponging two activation buffers. Variants:
``plain`` (no PDL); ``pdl`` (launched with PDL, the wait before any load, the next kernel
let launch after the K loop); ``pdl-no-trigger`` (the same without that trigger: the next
kernel launches as each program exits, which a code generator can have without knowing
where a kernel's loop ends); ``pdl-weights`` (as ``pdl``, the first K tile of the weights
loaded before the wait; ``weights-first`` is that kernel without PDL). Every variant's
result is checked against float32 first; a variant the GPU, driver or CUDA graph capture
refuses is reported as such.

    python bench/pdl_probe.py [--kernels 32] [--out DIR]                 # GPU (sm_90+)
    TRITON_INTERPRET=1 python bench/pdl_probe.py --check-only --shape tiny   # CPU: plain only
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.gpu_timing import environment, in_cuda_graph, median_ms

SHAPES = {
    "resnet-b1-stage3": (196, 1024, 256),
    "resnet-b1-stage2": (784, 512, 128),
    "resnet-b32-stage3": (6272, 1024, 256),
    "tiny": (20, 48, 32),
}
"""(pixels, wide channels, narrow channels): the chain alternates wide -> narrow and back."""

VARIANTS = {
    "plain": (False, False, False),
    "weights-first": (False, True, False),
    "pdl": (True, False, True),
    "pdl-no-trigger": (True, False, False),
    "pdl-weights": (True, True, True),
}
"""(launched with PDL, weights' first K tile read before the wait, dependents let launch
after the K loop)."""


@triton.jit
def product_relu(
    x,
    w,
    y,
    M,
    N,
    K: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    USE_GDC: tl.constexpr,
    WEIGHTS_FIRST: tl.constexpr,
    TRIGGER: tl.constexpr,
):
    """``y = relu(x @ w.T)`` for row-major ``x`` (M x K) and ``w`` (N x K)."""
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)[:, None]
    rn = pn * BN + tl.arange(0, BN)[None, :]
    kk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    if WEIGHTS_FIRST:  # no earlier kernel writes the weights: read before the wait
        wt = tl.load(w + rn * K + kk[:, None], mask=(rn < N) & (kk[:, None] < K), other=0.0)
        if USE_GDC:
            tl.extra.cuda.gdc_wait()
        acc += tl.dot(tl.load(x + rm * K + kk[None, :], mask=(rm < M) & (kk[None, :] < K), other=0.0), wt)
        start = BK
    else:
        if USE_GDC:
            tl.extra.cuda.gdc_wait()
        start = 0
    for k0 in range(start, K, BK):
        wt = tl.load(w + rn * K + (k0 + kk[:, None]), mask=(rn < N) & (k0 + kk[:, None] < K), other=0.0)
        a = tl.load(x + rm * K + (k0 + kk[None, :]), mask=(rm < M) & (k0 + kk[None, :] < K), other=0.0)
        acc += tl.dot(a, wt)
    if TRIGGER:
        tl.extra.cuda.gdc_launch_dependents()
    tl.store(y + rm * N + rn, tl.maximum(acc, 0.0).to(y.dtype.element_ty), mask=(rm < M) & (rn < N))


def blocks(m: int) -> tuple[int, int, int, int]:
    """BM x BN x BK and warps: dnnc's few-row product tile (``configs.product`` at 16 rows)
    up to a thousand rows, a 128 x 128 tile at a serving batch's."""
    return (16, 64, 64, 4) if m <= 1024 else (128, 128, 64, 8)


def operands(shape: tuple[int, int, int], kernels: int, device: str, dtype: torch.dtype, seed: int = 0):
    """The input rows, one weight matrix per kernel (wide -> narrow, narrow -> wide, ...),
    and the two activation buffers the chain ping-pongs."""
    m, wide, narrow = shape
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(m, wide, generator=gen)
    weights = []
    for i in range(kernels):
        n, k = (narrow, wide) if i % 2 == 0 else (wide, narrow)
        weights.append(torch.randn(n, k, generator=gen) * (2.0 / k) ** 0.5)
    buffers = (torch.empty(m, narrow, device=device, dtype=dtype), torch.empty(m, wide, device=device, dtype=dtype))
    return x.to(device, dtype), [w.to(device, dtype) for w in weights], buffers


def reference(x: torch.Tensor, weights: list[torch.Tensor]) -> torch.Tensor:
    y = x.float()
    for w in weights:
        y = torch.relu(y @ w.float().T)
    return y


def chain(x: torch.Tensor, weights: list[torch.Tensor], buffers, variant: str) -> torch.Tensor:
    """Launches the chain; returns the buffer holding its result."""
    pdl, weights_first, trigger = VARIANTS[variant]
    m = x.shape[0]
    bm, bn, bk, warps = blocks(m)
    src = x
    for i, w in enumerate(weights):
        n, k = w.shape
        dst = buffers[i % 2]  # even kernels narrow the rows, odd ones widen them back
        grid = (triton.cdiv(m, bm), triton.cdiv(n, bn))
        extra = {"launch_pdl": True} if pdl else {}
        product_relu[grid](src, w, dst, m, n, k, bm, bn, bk, pdl, weights_first, trigger, num_warps=warps, num_stages=3, **extra)
        src = dst
    return src


def probe(shape: tuple[int, int, int], kernels: int, variants: list[str]) -> dict:
    x, weights, buffers = operands(shape, kernels, "cuda", torch.float16)
    want = reference(x, weights)
    row: dict = {"shape": list(shape), "kernels": kernels}
    for variant in variants:
        try:
            err = relative_error(chain(x, weights, buffers, variant), want)
            if not err <= 2e-2:  # NaN included
                row[variant] = f"wrong by {err:.2e}"
                continue
            replay, _ = in_cuda_graph(lambda variant=variant: chain(x, weights, buffers, variant))
            ms = median_ms(replay)
            row[variant] = {"ms": round(ms, 5), "us_per_kernel": round(ms * 1e3 / kernels, 3), "rel_error": err}
        except Exception as e:  # a GPU, driver or capture without PDL
            row[variant] = f"error: {str(e)[:300]}"
    return row


def relative_error(got: torch.Tensor, want: torch.Tensor) -> float:
    """Largest difference over the largest magnitude of the float32 result."""
    got, want = got.float().cpu(), want.cpu()
    return ((got - want).abs().max() / want.abs().max()).item()


def chain_error(shape: tuple[int, int, int], variant: str, seed: int = 0) -> float:
    """A chain of four against float32, relative (Triton's interpreter where there is no
    GPU, which runs the variants without PDL)."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.float16 if device == "cuda" else torch.float32
    x, weights, buffers = operands(shape, 4, device, dtype, seed)
    return relative_error(chain(x, weights, buffers, variant), reference(x.cpu(), [w.cpu() for w in weights]))


def check_only(shape: tuple[int, int, int]) -> None:
    for variant in ("plain", "weights-first"):
        err = chain_error(shape, variant)
        print(f"{variant} chain of 4 on {shape}: relative error {err:.2e}")
        if not err <= 2e-2:  # NaN included
            raise SystemExit("wrong")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="resnet-b1-stage3,resnet-b1-stage2,resnet-b32-stage3")
    ap.add_argument("--kernels", type=int, default=32)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--check-only", action="store_true")
    ap.add_argument("--out", default="/tmp")
    args = ap.parse_args()
    names = args.shape.split(",")
    if args.check_only:
        for name in names:
            check_only(SHAPES[name])
        return
    if not torch.cuda.is_available():
        sys.exit("pdl_probe times kernels on an NVIDIA GPU (sm_90+); --check-only runs on the CPU")
    out: dict = {name: probe(SHAPES[name], args.kernels, args.variants.split(",")) for name in names}
    for name in names:
        print(name, out[name], flush=True)
    out["environment"] = environment()
    path = Path(args.out) / "pdl-probe.json"
    path.write_text(json.dumps(out, indent=1))
    print("wrote", path)


if __name__ == "__main__":
    main()
