"""The cuDNN backend against PyTorch on one GPU, in one run: the documents' block
(conv 3x3 64->64 + bias + relu on 56x56, fp16, batch 1 and 32) and ResNet-50 fp16
at batch 1, 32 and 128.

    python bench/cudnn_block_resnet.py [--out DIR] [--workloads block,resnet50] [--batches 1,32,128]

Variants: PyTorch eager, eager captured in one CUDA graph, dnnc (its executor
called from Python), dnnc captured in one CUDA graph. Each output is checked
against float32 eager before it is timed. Writes bench/results/cudnn-<date>.json.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dnnc
from bench.gpu_timing import copy_bandwidth_gbs, environment, in_cuda_graph, matmul_tflops, median_ms, write_results
from dnnc.models import resnet50
from dnnc.numerics import GPU_TOLERANCE, relative_error


class Block(nn.Module):
    """The documents' block: conv 3x3 64->64, bias, relu. ``channels_last``: the
    tensors it takes and returns are NHWC (as in the documents' measurement), so a
    compiler that keeps NHWC needs no layout change at the boundary."""

    def __init__(self, channels_last: bool = False) -> None:
        super().__init__()
        self.conv = nn.Conv2d(64, 64, 3, padding=1)
        self.channels_last = channels_last

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.channels_last:
            return torch.relu(self.conv(x.permute(0, 3, 1, 2))).permute(0, 2, 3, 1)
        return torch.relu(self.conv(x))


def block(batch: int, channels_last: bool = False) -> tuple[nn.Module, torch.Tensor, dict[str, float]]:
    torch.manual_seed(0)
    x = torch.randn(batch, 56, 56, 64) if channels_last else torch.randn(batch, 64, 56, 56)
    flops = 2 * batch * 64 * 64 * 9 * 56 * 56
    min_bytes = 2 * (2 * batch * 64 * 56 * 56 + 64 * 64 * 9)
    return Block(channels_last).eval(), x, {"flops": flops, "min_bytes": min_bytes}


def block_nhwc(batch: int) -> tuple[nn.Module, torch.Tensor, dict[str, float]]:
    return block(batch, channels_last=True)


def resnet(batch: int) -> tuple[nn.Module, torch.Tensor, dict[str, float]]:
    model, (x,) = resnet50(batch=batch)
    flops = 2 * 4.09e9 * batch  # multiply-adds of ResNet-50 at 224x224, counted as 2 FLOPs
    min_bytes = 2 * (25.6e6 + batch * (3 * 224 * 224 + 1000))  # fp16 weights + input + logits
    return model, x, {"flops": flops, "min_bytes": min_bytes}


def run_workload(name: str, model: nn.Module, x: torch.Tensor, work: dict[str, float], peaks: dict[str, float]) -> dict[str, Any]:
    dtype = torch.float16
    with torch.no_grad():
        reference = model.float().cuda()(x.cuda())
    model = model.cuda().to(dtype)
    xh = x.cuda().to(dtype)
    floor_ms = max(work["flops"] / (peaks["matmul_tflops"] * 1e9), work["min_bytes"] / (peaks["copy_gbs"] * 1e6))
    rows: dict[str, Any] = {"workload": name, "floor_ms": floor_ms, **work, "variants": {}}

    def record(variant: str, fn: Any, out: Any, compile_s: float | None = None) -> None:
        torch.cuda.synchronize()
        err = relative_error(out.float(), reference)
        entry: dict[str, Any] = {"rel_error": err, "compile_s": compile_s}
        if not err <= GPU_TOLERANCE[dtype] * 5:  # NaN included
            entry["status"] = f"wrong result (relative error {err:.2e})"
        else:
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            ms = median_ms(fn)
            entry.update(
                status="ok",
                median_ms=ms,
                per_second=x.shape[0] / ms * 1e3,
                peak_mem_mb=(torch.cuda.max_memory_allocated() - base) / 2**20,
                fraction_of_floor=floor_ms / ms,
            )
        rows["variants"][variant] = entry
        shown = f"{entry['median_ms']:.4f} ms" if "median_ms" in entry else entry["status"]
        print(f"  {name:16s} {variant:22s} {shown}  err {err:.1e}", flush=True)

    with torch.no_grad():
        record("eager", lambda: model(xh), model(xh))
        if x.dim() == 4 and not getattr(model, "channels_last", False):
            cl_model = model.to(memory_format=torch.channels_last)
            xcl = xh.to(memory_format=torch.channels_last)
            record("eager channels_last", lambda: cl_model(xcl), cl_model(xcl))
            replay, out = in_cuda_graph(lambda: cl_model(xcl))
            replay()
            record("eager channels_last + cuda graph", replay, out)
            model = model.to(memory_format=torch.contiguous_format)
        replay, out = in_cuda_graph(lambda: model(xh))
        replay()
        record("eager + cuda graph", replay, out)
        started = time.perf_counter()
        compiled = dnnc.compile(model, [xh], device="cuda")
        compile_s = time.perf_counter() - started
        record("dnnc", lambda: compiled(xh), compiled(xh), compile_s)
        replay, out = in_cuda_graph(lambda: compiled(xh))
        replay()
        record("dnnc + cuda graph", replay, out, compile_s)
    rows["dnnc_backends"] = compiled.summary()  # type: ignore[union-attr]
    rows["dnnc_compile_stages"] = [s.__dict__ for s in compiled.report.stages]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default=None)
    parser.add_argument("--workloads", default="block,resnet50")
    parser.add_argument("--batches", default="1,32,128", help="ResNet-50 batch sizes")
    args = parser.parse_args()
    peaks = {"copy_gbs": copy_bandwidth_gbs(), "matmul_tflops": matmul_tflops()}
    print(f"copy bandwidth {peaks['copy_gbs']:.0f} GB/s, fp16 matmul {peaks['matmul_tflops']:.0f} TFLOP/s", flush=True)
    results: list[dict[str, Any]] = []
    wanted = args.workloads.split(",")
    jobs = [(f"block b{b}", block, b) for b in (1, 32) if "block" in wanted]
    jobs += [(f"block-nhwc b{b}", block_nhwc, b) for b in (1, 32) if "block" in wanted]
    jobs += [(f"resnet50 b{b}", resnet, int(b)) for b in args.batches.split(",") if "resnet50" in wanted]
    env = environment()
    for name, factory, batch in jobs:
        results.append(run_workload(name, *factory(batch), peaks))
        paths = write_results(
            "cudnn", {"environment": env, "peaks": peaks, "results": results}, args.out
        )  # after each: partial runs count
    print("wrote", ", ".join(str(p) for p in paths))


if __name__ == "__main__":
    main()
