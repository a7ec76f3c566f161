"""Products on tiny shapes: the squeeze-excite convolutions of efficientnet / mobilenetv3
(1x1 convolutions on 1x1 maps) and batch-1 classifier heads (GEMVs), fp16.

    python bench/small_products.py [--out DIR]

Each shape as a small module: PyTorch eager in one CUDA graph (cuDNN / cuBLAS, the
latency configuration), and dnnc compiled with cuDNN graphs plus Triton (the default)
and with Triton alone. Every output is checked against float32 eager first. A GEMV
reads its weight once: the floor is the weight's bytes at the copy bandwidth. Prints a
table and writes JSON to bench/results/small-products-<date>.json (and to --out).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.gpu_timing import copy_bandwidth_gbs, environment, in_cuda_graph, median_ms
from dnnc.numerics import relative_error

CHECK = 1e-2


class SqueezeExcite(nn.Module):
    """timm's SE block on a pooled map: reduce, SiLU, expand, sigmoid (the gate)."""

    def __init__(self, channels: int, reduced: int):
        super().__init__()
        self.reduce, self.expand = nn.Conv2d(channels, reduced, 1), nn.Conv2d(reduced, channels, 1)

    def forward(self, pooled: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.expand(nn.functional.silu(self.reduce(pooled))))


SHAPES: list[tuple[str, Callable[[], nn.Module], tuple[int, ...], int]] = [
    # name, module, input shape, weight elements
    ("se 96->4->96 b1", lambda: SqueezeExcite(96, 4), (1, 96, 1, 1), 2 * 96 * 4),
    ("se 1152->48->1152 b1", lambda: SqueezeExcite(1152, 48), (1, 1152, 1, 1), 2 * 1152 * 48),
    ("se 1152->48->1152 b32", lambda: SqueezeExcite(1152, 48), (32, 1152, 1, 1), 2 * 1152 * 48),
    ("head 1280->1000 b1", lambda: nn.Linear(1280, 1000), (1, 1280), 1280 * 1000),
    ("lm 768->50257 b1", lambda: nn.Linear(768, 50257, bias=False), (1, 768), 768 * 50257),
]


def _time(run: Callable[[], Any], reference: torch.Tensor) -> dict[str, Any]:
    out = run()
    torch.cuda.synchronize()
    err = relative_error(out.float(), reference)
    if not err <= CHECK:
        return {"status": "wrong result", "rel_error": err}
    return {"status": "ok", "rel_error": err, "median_ms": median_ms(run)}


def measure(name: str, make: Callable[[], nn.Module], shape: tuple[int, ...], weights: int, gbs: float) -> dict[str, Any]:
    import dnnc
    from dnnc import knobs

    torch.manual_seed(0)
    model = make().eval().cuda()
    x32 = torch.randn(shape, device="cuda")
    with torch.no_grad():
        reference = model(x32).float()
    half, x = model.half(), x32.half()
    rows: dict[str, Any] = {}
    with torch.no_grad():
        replay, out = in_cuda_graph(lambda: half(x))
    rows["eager + CUDA graph"] = _time(lambda: (replay(), out)[1], reference)
    for label, backends in (("dnnc (cuDNN + Triton)", "cudnn,triton"), ("dnnc Triton", "triton")):
        with knobs.override(gpu_backends=backends):
            compiled = dnnc.compile(half, (x,), device="cuda")
        rows[label] = {**_time(lambda c=compiled: c(x), reference), "steps": compiled.summary()["steps"]}  # type: ignore[union-attr]
    floor_ms = weights * 2 / (gbs * 1e6)
    return {"shape": name, "floor_ms": floor_ms, "variants": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bench/small_products.py times kernels on an NVIDIA GPU and none is visible here")
    gbs = copy_bandwidth_gbs()
    results = [measure(*s, gbs) for s in SHAPES]
    names = list(results[0]["variants"])
    print("| shape | weight floor ms | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    for r in results:
        cells = [f"{v['median_ms']:.4f}" if v.get("status") == "ok" else v.get("status", "?") for v in r["variants"].values()]
        print(f"| {r['shape']} | {r['floor_ms']:.4f} | " + " | ".join(cells) + " |")
    payload = {"environment": environment(), "copy_gbs": gbs, "results": results}
    stamp = dt.date.today().isoformat()
    for directory in [Path(__file__).resolve().parent / "results", *([Path(args.out)] if args.out else [])]:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / f"small-products-{stamp}.json").write_text(json.dumps(payload, indent=1))


if __name__ == "__main__":
    main()
