"""Artifact load and CUDA-graph replay, ResNet-50 fp16 at batch 1 on one GPU.

    python bench/artifact_load.py [--out DIR] [--batch 1]

Compiles ResNet-50 fp16 (tuning as ``dnnc compile`` does), saves ``resnet50.dnnc``,
then in a fresh process (so no in-memory kernel is reused; the on-disk kernel cache
is, as on any machine that has loaded the model before) measures ``dnnc.load``
wall time and the first call (warm-up runs and the CUDA graph capture included).
In this process it times the loaded module with and without CUDA-graph replay
(median ms, ``gpu_timing.median_ms``), checks both against eager first, and
writes bench/results/artifact-load-<date>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dnnc
from bench.gpu_timing import environment, median_ms, write_results
from dnnc import knobs
from dnnc.models import resnet50
from dnnc.numerics import relative_error

FRESH_PROCESS = """
import json, sys, time, warnings, torch
started = time.perf_counter()
import dnnc
imported = time.perf_counter()
with warnings.catch_warnings(record=True) as said:
    warnings.simplefilter("always")
    m = dnnc.load(sys.argv[1])
loaded = time.perf_counter()
rebuilt = [k.rebuilt for k in m.kernels().values() if hasattr(k, "rebuilt")]
x = torch.randn(*m.input_specs[0].shape, device="cuda").half()
torch.cuda.synchronize()
t0 = time.perf_counter()
m(x)
torch.cuda.synchronize()
first = time.perf_counter()
print(json.dumps({"import_s": imported - started, "load_s": loaded - imported, "first_call_s": first - t0,
                  "memory_peak_bytes": m.memory_peak_bytes, "fallbacks": m.summary()["fallbacks"],
                  "cudnn_graphs": len(rebuilt), "cudnn_rebuilt_from_record": sum(rebuilt),
                  "cudnn_deserialized": sum(bool(getattr(k, "deserialized", False)) for k in m.kernels().values()),
                  "load_warnings": [str(w.message) for w in said]}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default=None)
    parser.add_argument("--batch", type=int, default=1)
    args = parser.parse_args()
    model, (x,) = resnet50(batch=args.batch)
    model = model.eval().to("cuda", torch.float16)
    xh = x.to("cuda", torch.float16)
    started = time.perf_counter()
    compiled = dnnc.compile(model, (xh,), device="cuda")
    compile_s = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as tmp:
        path = compiled.save(Path(tmp) / "resnet50.dnnc")
        size = path.stat().st_size
        repo = str(Path(__file__).resolve().parents[1])
        done = subprocess.run(
            [sys.executable, "-c", FRESH_PROCESS, str(path)],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH")) if p)},
        )
        if done.returncode != 0:
            raise SystemExit(f"loading in a fresh process failed:\n{done.stderr}")
        fresh = json.loads(done.stdout.strip().splitlines()[-1])
        graphed, plain = dnnc.load(path, cuda_graph=True), dnnc.load(path, cuda_graph=False)
    with torch.no_grad():
        eager = model(xh).float()
    errors = {name: relative_error(m(xh).float().cpu(), eager.cpu()) for name, m in (("graph", graphed), ("no_graph", plain))}
    print(f"relative error vs eager fp16: {errors}", flush=True)
    timings = {"graph_ms": median_ms(lambda: graphed(xh)), "no_graph_ms": median_ms(lambda: plain(xh))}
    payload = {
        "environment": environment(),
        "workload": f"resnet50 fp16 batch {args.batch}",
        "partition": knobs.get().partition,
        "compile_s": compile_s,
        "artifact_bytes": size,
        "fresh_process": fresh,
        "relative_error_vs_eager": errors,
        **timings,
        "graph_speedup": timings["no_graph_ms"] / timings["graph_ms"],
    }
    print(json.dumps(payload, indent=2))
    for p in write_results("artifact-load", payload, args.out):
        print(f"wrote {p}")


if __name__ == "__main__":
    main()
