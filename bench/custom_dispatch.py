"""User kernels inside compiled programs: the custom-dispatch example timed on one GPU.

    python bench/custom_dispatch.py [--out DIR] [--sizes 4096,16777216]

For ``mixed_invocation`` (generated ``tanh(a)`` and ``b + 1``, the user kernel
``simple_mul_inplace``, generated ``* 2 + a``) and ``simple_mul`` alone, in
float32 at each size: PyTorch eager (the user kernel through its torch op),
eager in one CUDA graph, torch.compile (Inductor; the user kernel stays an opaque
op), and dnnc (CUDA-graph replay, and plain launches). Every output is checked
against the float32 eager result before timing (``gpu_timing.median_ms``).

The floor counts the bytes an implementation must move with the user kernel
opaque (its inputs materialized, its output read back): for ``mixed_invocation``
16n (a, b in) + 8n (tanh(a), b+1 out) for the first fusion, 8n + 4n for the
kernel, 8n + 4n for the last fusion: 48n bytes at the measured copy bandwidth.
Writes bench/results/custom-dispatch-<date>.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dnnc
from bench.gpu_timing import copy_bandwidth_gbs, environment, in_cuda_graph, median_ms, write_results
from dnnc.numerics import relative_error
from tests.kernels.kernels import load_example

BYTES_PER_ELEMENT = {"mixed_invocation": 48, "simple_mul_model": 12}
"""Fewest bytes moved per element with the user kernel opaque (module docstring)."""


def _time_workload(factory, n: int, copy_gbs: float) -> dict[str, object]:
    model, _ = factory(n=n, device="cuda")
    g = torch.Generator(device="cuda").manual_seed(0)
    a, b = (torch.randn(n, device="cuda", generator=g) for _ in range(2))
    with torch.no_grad():
        expected = model(a, b)
    rows: dict[str, dict[str, float | None]] = {}

    def record(name: str, fn, compile_s: float | None = None) -> None:
        error = relative_error(fn().float().cpu(), expected.float().cpu())
        if not error <= 1e-5:  # NaN included
            raise SystemExit(f"{factory.__name__} n={n} {name}: relative error {error:.2e} against eager")
        rows[name] = {"median_ms": median_ms(fn), "compile_s": compile_s, "relative_error": error}
        print(f"{factory.__name__:18s} n={n:>9d} {name:14s} {rows[name]['median_ms']:.4f} ms", flush=True)

    record("eager", lambda: model(a, b))
    replay, graph_out = in_cuda_graph(lambda: model(a, b))

    def graphed() -> torch.Tensor:
        replay()
        return graph_out

    record("eager+graph", graphed)
    started = time.perf_counter()
    compiled_torch = torch.compile(model)
    compiled_torch(a, b)
    record("torch.compile", lambda: compiled_torch(a, b), time.perf_counter() - started)
    for name, graph in (("dnnc", True), ("dnnc-no-graph", False)):
        started = time.perf_counter()
        compiled = dnnc.compile(model, (a, b), device="cuda", cuda_graph=graph)
        compile_s = time.perf_counter() - started
        record(name, lambda compiled=compiled: compiled(a, b), compile_s)
        rows[name]["user_kernels"] = compiled.summary()["user_kernels"]  # type: ignore[assignment]
    floor_ms = BYTES_PER_ELEMENT[factory.__name__] * n / copy_gbs / 1e6
    return {"workload": factory.__name__, "n": n, "floor_ms": floor_ms, "variants": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=None)
    parser.add_argument("--sizes", default="4096,16777216")
    args = parser.parse_args()
    example = load_example()
    copy_gbs = copy_bandwidth_gbs()
    results = [
        _time_workload(factory, int(n), copy_gbs)
        for factory in (example.mixed_invocation, example.simple_mul_model)
        for n in args.sizes.split(",")
    ]
    payload = {"environment": environment(), "copy_gbs": copy_gbs, "results": results}
    print(json.dumps(payload, indent=1))
    for p in write_results("custom-dispatch", payload, args.out):
        print(f"wrote {p}")


if __name__ == "__main__":
    main()
