"""What loading an artifact costs on a machine that has compiled nothing yet (a new
server replica): each load in a fresh process with empty dnnc and Triton caches,
the artifact's first call included, with the compiled Triton kernels the artifact
stores and, saved again from the same program, without them (each kernel compiled
from its source at load, as artifacts were loaded before they stored kernels).

    python bench/cold_load.py [--workloads resnet50-b32,bert-s128-b8] [--loads 3] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

LOAD = """
import sys, time, torch
started = time.perf_counter()
import dnnc
from dnnc import progress
with progress.watching(lambda p: None) as counts:
    module = dnnc.load(sys.argv[1])
    loaded = time.perf_counter() - started
    torch.manual_seed(0)
    inputs = [torch.randn(s.shape).to("cuda", s.dtype) if s.dtype.is_floating_point else torch.zeros(s.shape, dtype=s.dtype, device="cuda") for s in module.input_specs]
    module(*inputs)
    torch.cuda.synchronize()
spans = {k: [round(v.seconds, 3), v.calls] for k, v in counts.spans.items() if "compile" in k}
print("RESULT", {"load_s": loaded, "first_call_s": time.perf_counter() - started, "compiles": spans})
"""


def cold_load(path: Path) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as triton_cache:
        env = {**os.environ, "DNNC_CACHE_DIR": cache, "TRITON_CACHE_DIR": triton_cache}
        done = subprocess.run([sys.executable, "-c", LOAD, str(path)], env=env, capture_output=True, text=True, timeout=600)
    line = next((line for line in done.stdout.splitlines() if line.startswith("RESULT ")), None)
    if line is None:
        return {"error": (done.stderr or done.stdout)[-2000:]}
    import ast

    return ast.literal_eval(line.removeprefix("RESULT "))


def main() -> None:
    import dnnc
    from bench.gpu_timing import environment, write_record
    from bench.suite.workloads import WORKLOADS
    from dnnc.backends.triton import compiler

    parser = argparse.ArgumentParser()
    parser.add_argument("--workloads", default="resnet50-b32,bert-s128-b8")
    parser.add_argument("--loads", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or Path(__file__).with_name("results")))
    args = parser.parse_args()
    record: dict[str, Any] = {"environment": environment(), "workloads": {}}
    folder = Path(tempfile.mkdtemp(prefix="dnnc-cold-load-"))
    for name in args.workloads.split(","):
        model, inputs = WORKLOADS[name].build()
        model = model.eval().to("cuda", torch.float16)
        inputs = tuple(x.to("cuda", torch.float16) if x.dtype.is_floating_point else x.cuda() for x in inputs)
        compiled = dnnc.compile(model, inputs, device="cuda")
        stored = compiled.save(folder / f"{name}.dnnc")
        real = compiler.object_of
        compiler.object_of = lambda *a, **k: None  # the same program saved without its compiled kernels
        try:
            source_only = compiled.save(folder / f"{name}-source-only.dnnc")
        finally:
            compiler.object_of = real
        entry: dict[str, Any] = {"bytes": stored.stat().st_size, "bytes_source_only": source_only.stat().st_size}
        for label, path in (("stored kernels", stored), ("source only", source_only)):
            runs = [cold_load(path) for _ in range(args.loads)]
            good = [r for r in runs if "error" not in r]
            entry[label] = {
                "runs": runs,
                "load_s": statistics.median(r["load_s"] for r in good) if good else None,
                "first_call_s": statistics.median(r["first_call_s"] for r in good) if good else None,
            }
            print(name, label, json.dumps({k: v for k, v in entry[label].items() if k != "runs"}), flush=True)
        record["workloads"][name] = entry
    write_record(args.out, "cold-load", record)


if __name__ == "__main__":
    main()
