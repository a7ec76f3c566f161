"""A strided stem convolution on few channels, as it is and rewritten space-to-depth:
what the rewrite would save before a pass does it.

A convolution of stride ``s`` on ``C`` channels equals a stride-1 convolution on the
input cut into ``s x s`` cells (``C*s*s`` channels, a window of ``ceil(k/s)`` cells; the
weight zero-padded to a multiple of ``s`` and cut the same way). ResNet-50's 7x7 stride-2
stem on 3 (padded 4) channels runs on cuDNN's first-layer kernel (an mma.sync kernel,
0.21 ms at batch 128 on an H200, 3.5x its bytes); on 16 channels and a 4x4 window it is an
ordinary implicit GEMM of K=256. Each shape is compiled by dnnc (defaults) in both forms,
its output checked against float32 first, and timed; torch's cuDNN convolution alone
(channels-last, ``cudnn.benchmark``) in both forms beside it.

    python bench/stem_probe.py [--shapes resnet-b32,...] [--out DIR]   # GPU: DIR/stem-probe.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.gpu_timing import environment, in_cuda_graph, median_ms

SHAPES = {
    "resnet-b1": (1, 3, 224, 64, 7, 2, 3),
    "resnet-b32": (32, 3, 224, 64, 7, 2, 3),
    "resnet-b128": (128, 3, 224, 64, 7, 2, 3),
    "efficientnet-b32": (32, 3, 224, 32, 3, 2, 1),
    "mobilenetv3-b32": (32, 3, 224, 16, 3, 2, 1),
    "convnext-b32": (32, 3, 224, 96, 4, 4, 0),
}
"""(batch, in channels, size, out channels, window, stride, padding)."""


def cells_weight(w: torch.Tensor, s: int) -> torch.Tensor:
    """``(O, C, k, k)`` -> ``(O, C*s*s, ceil(k/s), ceil(k/s))``, channels ordered (c, row phase, column phase)."""
    o, c, k, _ = w.shape
    kk = math.ceil(k / s)
    w = F.pad(w, (0, kk * s - k, 0, kk * s - k))
    return w.reshape(o, c, kk, s, kk, s).permute(0, 1, 3, 5, 2, 4).reshape(o, c * s * s, kk, kk)


def cells_input(x: torch.Tensor, k: int, s: int, p: int) -> torch.Tensor:
    """``(N, C, H, W)`` padded and cut into ``s x s`` cells: ``(N, C*s*s, H', W')``."""
    n, c, h, w = x.shape
    out = (h + 2 * p - k) // s + 1
    extent = s * (out + math.ceil(k / s) - 1)
    x = F.pad(x, (p, extent - w - p, p, extent - h - p))
    e = extent // s
    return x.reshape(n, c, e, s, e, s).permute(0, 1, 3, 5, 2, 4).reshape(n, c * s * s, e, e)


class Stem(torch.nn.Module):
    def __init__(self, c: int, o: int, k: int, s: int, p: int) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(c, o, k, s, p)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x))


class CellStem(torch.nn.Module):
    """``Stem`` written space-to-depth, the same weights."""

    def __init__(self, stem: Stem) -> None:
        super().__init__()
        conv = stem.conv
        self.k, self.s, self.p = conv.kernel_size[0], conv.stride[0], conv.padding[0]
        self.weight = torch.nn.Parameter(cells_weight(conv.weight.detach(), self.s))
        self.bias = torch.nn.Parameter(conv.bias.detach().clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(F.conv2d(cells_input(x, self.k, self.s, self.p), self.weight, self.bias))


def _rel(got: torch.Tensor, want: torch.Tensor) -> float:
    return float((got.float().cpu() - want).abs().max() / want.abs().max().clamp_min(1e-6))


def _torch_conv_ms(x: torch.Tensor, w: torch.Tensor, s: int, p: int) -> float:
    """cuDNN's convolution alone, channels-last, channels padded to 4 or a multiple of 8."""
    c = x.shape[1]
    pad = (4 if c <= 4 else c + -c % 8) - c
    x = F.pad(x, (0, 0, 0, 0, 0, pad)).contiguous(memory_format=torch.channels_last)
    w = F.pad(w, (0, 0, 0, 0, 0, pad)).contiguous(memory_format=torch.channels_last)
    run, _ = in_cuda_graph(lambda: F.conv2d(x, w, None, s, p))
    return median_ms(run)


def probe(name: str) -> dict:
    import dnnc

    n, c, size, o, k, s, p = SHAPES[name]
    torch.manual_seed(0)
    stem = Stem(c, o, k, s, p).eval()
    cells = CellStem(stem).eval()
    x = torch.randn(n, c, size, size)
    with torch.no_grad():
        want = stem(x)
        assert _rel(cells(x), want) < 1e-4, "space-to-depth form disagrees in float32"
    row: dict = {"shape": name, "batch": n, "window": k, "stride": s, "channels": c, "out_channels": o}
    xg = x.cuda().half()
    for label, model in (("as_is", stem), ("cells", cells)):
        started = time.perf_counter()
        compiled = dnnc.compile(model, (x,), dtype="f16")
        compile_s = time.perf_counter() - started
        got = compiled(xg)
        error = _rel(got, want)
        summary = compiled.summary()
        row[label] = {
            "compile_s": compile_s,
            "rel_error": error,
            "median_ms": median_ms(lambda c=compiled: c(xg)) if error < 2e-2 else None,
            "steps": summary["steps"],
            "kernels": [k.record() for k in compiled.kernels().values()],
        }
    torch.backends.cudnn.benchmark = True
    w = stem.conv.weight.detach().cuda().half()
    row["torch_conv_ms"] = {
        "as_is": _torch_conv_ms(xg, w, s, p),
        "cells": _torch_conv_ms(cells_input(xg, k, s, p), cells_weight(w, s), 1, 0),
    }
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--out", default="/tmp")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("stem_probe: no GPU; nothing measured")
        return 0
    rows = []
    for name in args.shapes.split(","):
        rows.append(probe(name))
        r = rows[-1]
        print(
            f"{name}: dnnc as is {r['as_is']['median_ms']} ms, cells {r['cells']['median_ms']} ms; "
            f"cuDNN conv as is {r['torch_conv_ms']['as_is']:.4f}, cells {r['torch_conv_ms']['cells']:.4f}",
            flush=True,
        )
    out = Path(args.out) / "stem-probe.json"
    out.write_text(json.dumps({"environment": environment(), "results": rows}, indent=1, default=str))
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
