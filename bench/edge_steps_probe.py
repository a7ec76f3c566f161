"""ResNet-50's own Triton steps at the network's edges, each config timed alone: the max
pool after the stem (3x3/2 over the stem's channels-last output), the global mean over
the last stage's 7 x 7 channels-last map, and the classifier (2048 -> 1000 with its
bias), as the partitioner groups them. Every config ``configs.candidates`` offers, and
more (``EXTRA``), is generated, checked against the reference and timed as the
generated kernel runs (``launch.TritonKernel``), beside torch's kernels for the same
step and the step's floor in bytes.

In ResNet-50's program on an H200 these steps ran (us, in place) 21.5 / 9.1 / 9.2 at
batch 32 and 72 / 27 / 12 at batch 128, against floors of about 15 / 1.6 / 1 and
61 / 6 / 2 (``compile-profile-2026-11-2[89]-h200-resnet50-b*.json``).

    python bench/edge_steps_probe.py [--batches 1,32,128] [--out DIR]   # DIR/edge-steps-<date>-<gpu>.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.split_k_probe import prepared, timed
from dnnc.backends.triton.configs import Config, _unique, candidates
from dnnc.backends.triton.kernels import generate
from dnnc.backends.triton.launch import capability_of
from dnnc.backends.triton.skeleton import GroupInfo, product_sizes
from dnnc.timing import device_time_ms

POOL = """func.func @forward(%x: tensor<{n}x112x112x64xf16>) -> tensor<{n}x56x56x64xf16> {{
  %t = tcp.transpose %x {{dnnc.part = 0 : i64, permutation = array<i64: 0, 3, 1, 2>}} : tensor<{n}x112x112x64xf16> -> tensor<{n}x64x112x112xf16>
  %p = tcp.max_pool2d %t {{dnnc.part = 0 : i64, kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, ceil_mode = false}} : tensor<{n}x64x112x112xf16> -> tensor<{n}x64x56x56xf16>
  %y = tcp.transpose %p {{dnnc.part = 0 : i64, permutation = array<i64: 0, 2, 3, 1>}} : tensor<{n}x64x56x56xf16> -> tensor<{n}x56x56x64xf16>
  func.return %y : tensor<{n}x56x56x64xf16>
}}"""
MEAN = """func.func @forward(%x: tensor<{n}x7x7x2048xf16>) -> tensor<{n}x2048x1x1xf16> {{
  %t = tcp.transpose %x {{dnnc.part = 0 : i64, permutation = array<i64: 0, 3, 1, 2>}} : tensor<{n}x7x7x2048xf16> -> tensor<{n}x2048x7x7xf16>
  %m = tcp.reduce_mean %t {{dnnc.part = 0 : i64, axes = array<i64: 2, 3>, keepdim = true}} : tensor<{n}x2048x7x7xf16> -> tensor<{n}x2048x1x1xf16>
  func.return %m : tensor<{n}x2048x1x1xf16>
}}"""
CLASSIFIER = """func.func @forward(%x: tensor<{n}x2048x1x1xf16>) -> tensor<{n}x1000xf16> {{
  %w = tcp.param @w : tensor<2048x1000xf16>
  %b = tcp.param @b : tensor<1x1000xf16>
  %f = tcp.reshape %x {{dnnc.part = 0 : i64}} : tensor<{n}x2048x1x1xf16> to tensor<{n}x2048xf16>
  %m = tcp.matmul %f, %w {{dnnc.part = 0 : i64}} : (tensor<{n}x2048xf16>, tensor<2048x1000xf16>) -> tensor<{n}x1000xf16>
  %bb = tcp.broadcast %b {{dnnc.part = 0 : i64}} : tensor<1x1000xf16> to tensor<{n}x1000xf16>
  %a = tcp.add %m, %bb {{dnnc.part = 0 : i64}} : tensor<{n}x1000xf16>
  func.return %a : tensor<{n}x1000xf16>
}}"""
STEPS = {"pool": POOL, "mean": MEAN, "classifier": CLASSIFIER}


def extra(step: str, info: GroupInfo) -> list[Config]:
    """Configs beyond the candidates: other row and pool blocks and warps, and for the
    classifier narrow tiles with K cut into 4-16 slices and unsplit long-K tiles."""
    if step == "mean":
        return [{"BLOCK_M": bm, "BLOCK_R": 64, "num_warps": w} for bm, w in itertools.product((16, 32, 128, 256), (2, 4, 8))]
    if step == "pool":  # a channels-last pool: BLOCK consecutive outputs (``configs.pointwise``)
        return [{"BLOCK": b, "num_warps": w} for b, w in itertools.product((512, 1024, 2048, 4096), (4, 8))]
    m, _, k, _ = product_sizes(info.anchor)
    bm = 16 if m <= 16 else 32 if m <= 32 else 64
    split = [
        {"BLOCK_M": 16, "BLOCK_N": bn, "BLOCK_K": bk, "num_warps": 4, "num_stages": 3, "SPLIT_K": s}
        for bn, bk, s in itertools.product((32, 64), (64, 128), (4, 8, 16))
        if k // s >= bk
    ]
    whole = [
        {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "num_warps": 4, "num_stages": 3}
        for bn, bk in itertools.product((16, 32, 64), (128, 256))
    ]
    return split + whole


def library_ms(step: str, ins: list[torch.Tensor]) -> float:
    """torch's kernels for the step: channels-last max pool, the mean over H and W, addmm."""
    (x, *params) = ins
    if step == "pool":
        xc = x.permute(0, 3, 1, 2)  # NCHW view of the NHWC tensor: channels-last memory
        return device_time_ms(lambda: torch.nn.functional.max_pool2d(xc, 3, 2, 1))
    if step == "mean":
        return device_time_ms(lambda: x.mean((1, 2)))
    w, b = params
    flat = x.reshape(x.shape[0], -1)
    return device_time_ms(lambda: torch.addmm(b, flat, w))


def floor_us(step: str, n: int, gbs: float) -> float:
    """Bytes the step must move once (inputs, weights, outputs) at ``gbs``."""
    moved = {"pool": n * (112 * 112 + 56 * 56) * 64, "mean": n * (49 + 1) * 2048, "classifier": n * 3048 + 2049 * 1000}[step]
    return 2 * moved / gbs / 1e3


def probe(step: str, n: int, device: torch.device, gbs: float) -> dict:
    group, ins, want = prepared(f"{step}-b{n}", STEPS[step].format(n=n), device)
    info = GroupInfo.of(group)
    offered = candidates(info, capability_of(device))
    rows = []
    for config in _unique(offered + extra(step, info)):
        row = {
            "config": config,
            "candidate": config in offered,
            **timed(group, generate(group, config, info=info), config, ins, want, device),
        }
        if "ms" in row and not row["rel_error"] <= 2e-2:  # NaN included
            row["status"] = "wrong"
        rows.append(row)
        print(f"{step}-b{n:<4d} {json.dumps(config):100s} {row.get('ms', row.get('status'))}", flush=True)
    ok = [r for r in rows if "ms" in r and "status" not in r]
    best = min(ok, key=lambda r: r["ms"]) if ok else None
    first = rows[0] if "ms" in rows[0] else None
    out = {
        "step": step,
        "batch": n,
        "floor_us": floor_us(step, n, gbs),
        "library_us": 1e3 * library_ms(step, ins),
        "first_candidate_us": 1e3 * first["ms"] if first else None,
        "best_candidate_us": 1e3 * min((r["ms"] for r in ok if r["candidate"]), default=float("nan")),
        "best_us": 1e3 * best["ms"] if best else None,
        "best_config": best["config"] if best else None,
        "configs": rows,
    }
    print({k: v for k, v in out.items() if k != "configs"}, flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", default="1,32,128")
    ap.add_argument("--steps", default=",".join(STEPS))
    ap.add_argument("--out", type=Path, default=Path("/tmp"))
    args = ap.parse_args()
    from bench.gpu_timing import copy_bandwidth_gbs, environment, result_path

    device = torch.device("cuda")
    gbs = copy_bandwidth_gbs()
    results = [probe(step, int(n), device, gbs) for step in args.steps.split(",") for n in args.batches.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    path = result_path(args.out, "edge-steps")
    path.write_text(json.dumps({"environment": environment(), "copy_gbs": gbs, "results": results}, indent=1) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
