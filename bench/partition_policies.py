"""Partition policies side by side on one GPU: ``auto`` (priced, measured cover)
against ``cudnn-only``, ``triton-only`` and ``greedy`` (every cuDNN pattern
outlined, the rest fused), with PyTorch eager + CUDA graph as the baseline.

For ResNet-50 fp16 (batch 1 and 32) and the GPT-2 block fp16: each output is
checked against eager before timing; every variant is timed as one CUDA-graph
replay (median, bench/gpu_timing); compile time (cold: the measurement cache is
emptied first, then warm: compiled again) and the partitioner's own totals
(what it predicted for the chosen cover, measured pieces summed) are recorded,
with the explain table of each ``auto`` compile.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dnnc
from bench.gpu_timing import environment, fp16_inputs, in_cuda_graph, median_ms, write_results
from dnnc import knobs
from dnnc.models import gpt2_block, resnet50
from dnnc.numerics import relative_error
from dnnc.partition.explain import explain_lines

POLICIES = ("auto", "cudnn-only", "triton-only", "greedy")
WORKLOADS = {
    "resnet50-b1": lambda: resnet50(batch=1),
    "resnet50-b32": lambda: resnet50(batch=32),
    "gpt2-block": lambda: gpt2_block(),
}


def run_workload(name: str, out_dir: Path | None) -> dict[str, Any]:
    model, inputs = WORKLOADS[name]()
    model = model.eval().cuda().half()
    xs = fp16_inputs(inputs)
    rows: dict[str, Any] = {"workload": name, "variants": {}}
    with torch.no_grad():
        reference = model(*xs).float()
        replay, _ = in_cuda_graph(lambda: model(*xs))
        rows["variants"]["eager + cuda graph"] = {"median_ms": median_ms(replay)}
        print(f"  {name:14s} eager + cuda graph      {rows['variants']['eager + cuda graph']['median_ms']:.4f} ms", flush=True)
        for policy in POLICIES:
            entry: dict[str, Any] = {}
            with knobs.override(partition=policy, measure=True):
                started = time.perf_counter()
                compiled = dnnc.compile(model, xs, device="cuda")
                entry["compile_s"] = time.perf_counter() - started
                if policy == "auto":
                    started = time.perf_counter()
                    compiled = dnnc.compile(model, xs, device="cuda")
                    entry["warm_compile_s"] = time.perf_counter() - started
            out = compiled(*xs)
            entry["rel_error_vs_eager"] = relative_error(out.float(), reference)
            if entry["rel_error_vs_eager"] > 2e-2:
                entry["status"] = "wrong result"
            else:
                replay, _ = in_cuda_graph(lambda c=compiled: c(*xs))
                entry.update(status="ok", median_ms=median_ms(replay))
            entry["stages"] = {s.name: round(s.seconds, 3) for s in compiled.report.stages}
            entry["backends"] = compiled.summary()  # type: ignore[union-attr]
            record = compiled.program.metadata.get("decisions")
            if record:
                entry["predicted_ms"] = record["totals"]["chosen_ms"]
                entry["predicted_policy_ms"] = {
                    p: record["totals"][f"{p.replace('-', '_')}_ms"] for p in ("cudnn-only", "triton-only")
                }
                entry["estimate_error"] = record["estimate_error"]
                entry["groups"] = [(g["backend"], g["kind"]) for g in record["groups"]]
                if "programs" in record:
                    entry["programs"] = record["programs"]
                if out_dir is not None:  # one file for every table (the device returns few files)
                    with (out_dir / "partition-explain.txt").open("a") as f:
                        f.write(f"== {name} {policy}\n" + "\n".join(explain_lines(record)) + "\n\n")
            rows["variants"][f"dnnc {policy}"] = entry
            shown = f"{entry['median_ms']:.4f} ms" if "median_ms" in entry else entry["status"]
            pred = f" predicted {entry['predicted_ms']:.4f}" if "predicted_ms" in entry else ""
            print(f"  {name:14s} dnnc {policy:12s}  {shown}{pred}  compile {entry['compile_s']:.1f} s", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default=None)
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--keep-cache", action="store_true", help="Do not start from an empty measurement cache.")
    args = parser.parse_args()
    out_dir = Path(args.out) if args.out else None
    if out_dir:
        out_dir.mkdir(parents=True, exist_ok=True)
    cache = None if args.keep_cache else tempfile.mkdtemp(prefix="dnnc-cache-")
    results = []
    with knobs.override(**({"cache_dir": Path(cache)} if cache else {})):
        for name in args.workloads.split(","):
            results.append(run_workload(name, out_dir))
            # after every workload, so a run cut short keeps what it measured
            paths = write_results("partition-policies", {"environment": environment(), "results": results}, args.out)
    if cache:
        shutil.rmtree(cache, ignore_errors=True)
    print("wrote", ", ".join(str(p) for p in paths))


if __name__ == "__main__":
    main()
