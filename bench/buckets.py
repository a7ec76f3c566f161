"""One model compiled for a range of sizes (``dnnc.compile(dynamic=...)``) against
the alternatives, per size: a dnnc compile for that one shape, torch.compile with
``dynamic=True`` and with ``mode="reduce-overhead"`` (a compile and CUDA graph per
shape), both in reduce-overhead mode. Sizes on a bucket and between buckets; every
output checked against float32 eager before it is timed. Also the compile time and
artifact size of the bucketed module against one single-shape compile.

    python bench/buckets.py --workload resnet50 [--sizes 1,8,12,48,64] [--out DIR]

Workloads: ``resnet50`` (batch 1..64), ``bert-batch`` (a BERT-base layer at seq 128,
batch 1..64), ``bert-seq`` (the layer with an attention mask at batch 8, seq 16..512).
Everything runs in float16.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch._dynamo
import torch._inductor.config as inductor

from bench.gpu_timing import environment, median_ms, result_path
from bench.suite import CHECK
from dnnc.numerics import relative_error

WORKLOADS: dict[str, dict[str, Any]] = {
    "resnet50": {"dim": "batch", "range": (1, 64), "sizes": [1, 8, 12, 48, 64]},
    "bert-batch": {"dim": "batch", "range": (1, 64), "sizes": [1, 8, 12, 48, 64]},
    "bert-seq": {"dim": "seq", "range": (16, 512), "sizes": [16, 128, 200, 384, 512]},
}


def build(workload: str) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    if workload == "resnet50":
        from dnnc.models.resnet import resnet50

        return resnet50(batch=2)
    from dnnc.models.bert import bert_layer

    if workload == "bert-batch":
        return bert_layer(batch=2, seq=128)
    return bert_layer(batch=8, seq=32, masked=True)


def inputs_at(example: tuple[torch.Tensor, ...], dim: str, size: int) -> tuple[torch.Tensor, ...]:
    """Fresh inputs at ``size``: random activations, an attention mask of ones."""
    from dnnc.buckets import AXES

    axis = AXES[dim]
    out = []
    for x in example:
        shape = list(x.shape)
        if len(shape) > axis:
            shape[axis] = size
        out.append(torch.ones(shape) if x.dim() == 2 else torch.randn(shape))
    return tuple(out)


def _timed(name: str, run: Callable[[], Any], reference: torch.Tensor) -> dict[str, Any]:
    out = run()
    out = out[0] if isinstance(out, (tuple, list)) else out
    error = relative_error(out.float(), reference)
    if not error <= CHECK:
        return {"variant": name, "status": "wrong result", "rel_error": error}
    return {"variant": name, "status": "ok", "rel_error": error, "median_ms": median_ms(run)}


def _every_size(
    bucketed: Any, model: torch.nn.Module, example: tuple[torch.Tensor, ...], dim: str, low: int, high: int
) -> dict[str, Any]:
    """Every size of the range through the bucketed module, each checked against float32
    eager on fresh inputs: the worst relative error and any size over ``CHECK``."""
    gpu32 = copy.deepcopy(model).cuda()
    worst, wrong = 0.0, []
    step = 1 if high - low <= 64 else 7  # a long sequence range: every 7th length
    for size in range(low, high + 1, step):
        xs = tuple(x.cuda() for x in inputs_at(example, dim, size))
        if len(xs) > 1:  # hide a few positions, so padding is tested beside a real mask
            xs[1][:, size - size // 4 :] = 0
        got = bucketed(*(x.half() for x in xs))
        error = relative_error(got.float(), gpu32(*xs).float())
        worst = max(worst, error)
        if not error <= CHECK:
            wrong.append(size)
    del gpu32
    torch.cuda.empty_cache()
    return {"checked": len(range(low, high + 1, step)), "step": step, "worst_rel_error": worst, "over_tolerance": wrong}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workload", choices=list(WORKLOADS), required=True)
    parser.add_argument("--sizes", default=None, help="sizes to time (default: the workload's)")
    parser.add_argument("--variants", default="bucketed,static,tc-dynamic,tc-static")
    parser.add_argument("--out", default=os.environ.get("OUT"))
    parser.add_argument("--name", default="")
    args = parser.parse_args()
    spec = WORKLOADS[args.workload]
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else spec["sizes"]
    variants = args.variants.split(",")
    dim, (low, high) = spec["dim"], spec["range"]

    import dnnc

    model, example = build(args.workload)
    model = model.eval()
    record: dict[str, Any] = {
        "environment": environment(),
        "workload": args.workload,
        "range": f"{dim}={low}..{high}",
        "rows": [],
    }
    fresh = {s: inputs_at(example, dim, s) for s in sizes}
    references = {}
    with torch.no_grad():
        gpu32 = copy.deepcopy(model).cuda()
        for s, xs in fresh.items():
            out = gpu32(*[x.cuda() for x in xs])
            references[s] = out.float()
        del gpu32
    half = copy.deepcopy(model).half()
    on_gpu = {s: tuple(x.cuda().half() for x in xs) for s, xs in fresh.items()}
    torch.cuda.empty_cache()

    def row(size: int, entry: dict[str, Any]) -> None:
        entry = {"size": size, **entry}
        record["rows"].append(entry)
        print(json.dumps(entry), flush=True)

    if "bucketed" in variants:
        started = time.perf_counter()
        bucketed = dnnc.compile(half, tuple(x.half() for x in example), device="cuda", dynamic={dim: (low, high)})
        record["bucketed_compile_s"] = time.perf_counter() - started
        record["buckets"] = bucketed.buckets
        record["bucketed_arena_bytes"] = bucketed.memory_peak_bytes
        with tempfile.TemporaryDirectory() as tmp:
            record["bucketed_artifact_bytes"] = bucketed.save(Path(tmp) / "b.dnnc").stat().st_size
            started = time.perf_counter()
            loaded = dnnc.load(Path(tmp) / "b.dnnc")
            record["bucketed_load_s"] = time.perf_counter() - started
            del loaded
        with torch.no_grad():
            record["every_size"] = _every_size(bucketed, model, example, dim, low, high)
            print(json.dumps({"every_size": record["every_size"]}), flush=True)
            for s in sizes:
                xs = on_gpu[s]
                entry = _timed("dnnc bucketed", lambda xs=xs: bucketed(*xs), references[s])
                entry["bucket"] = bucketed.plan.label(bucketed.plan.bucket_for((s,)))
                row(s, entry)
        sizes_of_buckets = {k[0] for k in bucketed.modules}
        del bucketed
        torch.cuda.empty_cache()
    else:
        sizes_of_buckets = set()

    if "static" in variants:
        for s in sizes:
            xs = on_gpu[s]
            started = time.perf_counter()
            static = dnnc.compile(half, tuple(x.cpu() for x in xs), device="cuda")
            compile_s = time.perf_counter() - started
            with torch.no_grad():
                entry = _timed("dnnc static", lambda xs=xs, m=static: m(*xs), references[s])
            entry["compile_s"] = compile_s
            entry["on_a_bucket"] = s in sizes_of_buckets
            with tempfile.TemporaryDirectory() as tmp:
                entry["artifact_bytes"] = static.save(Path(tmp) / "s.dnnc").stat().st_size
            entry["arena_bytes"] = static.memory_peak_bytes
            row(s, entry)
            del static
            torch.cuda.empty_cache()

    inductor.freezing = True
    torch._dynamo.config.cache_size_limit = 64
    net = copy.deepcopy(model).cuda().half().eval()
    if example[0].dim() == 4:
        net = net.to(memory_format=torch.channels_last)
        on_gpu = {s: tuple(x.contiguous(memory_format=torch.channels_last) for x in xs) for s, xs in on_gpu.items()}
    for variant, dynamic in (("tc-dynamic", True), ("tc-static", False)):
        if variant not in variants:
            continue
        torch._dynamo.reset()
        compiled = torch.compile(net, mode="reduce-overhead", dynamic=dynamic)
        with torch.no_grad():
            for s in sizes:
                xs = on_gpu[s]
                started = time.perf_counter()
                try:
                    compiled(*xs)
                    compiled(*xs)  # the CUDA graph is recorded on a later call
                    torch.cuda.synchronize()
                except Exception as e:
                    row(s, {"variant": f"torch.compile {variant}", "status": f"failed: {type(e).__name__}: {str(e)[:300]}"})
                    continue
                first_s = time.perf_counter() - started
                entry = _timed(
                    f"torch.compile reduce-overhead{' dynamic=True' if dynamic else ''}",
                    lambda xs=xs, c=compiled: c(*xs),
                    references[s],
                )
                entry["first_calls_s"] = first_s
                row(s, entry)
    path = result_path(Path(args.out or Path(__file__).with_name("results")), "buckets", args.name or args.workload)
    path.write_text(json.dumps(record, indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
