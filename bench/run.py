"""dnnc against its peers, in one run on one GPU.

    python bench/run.py [--workloads resnet50-b32,gpt2-block]
                        [--variants eager,graph,compile,compile-max,dnnc,jax,jax-dnnc]
                        [--policies auto,cudnn-only,triton-only] [--out DIR] [--no-update]

For every workload (``bench/suite/workloads.py``): the float32 reference, then
PyTorch eager, eager in one CUDA graph, torch.compile (``mode="reduce-overhead"``:
Inductor and CUDA graphs, freezing), dnnc under each partition policy, JAX/XLA (the
same network in ``jax.lax``, in its own process) and that JAX network compiled by dnnc
from its StableHLO (``jax-dnnc``). ``compile-max``, only when named, adds torch.compile
``mode="max-autotune"`` (its own process; a peer where it compiles within five
minutes). Every variant's output is checked against the reference before it
is timed; a variant that fails or is wrong is reported as such. Per variant:
median ms, images or tokens per second, compile time, peak GPU memory and the
share of the physical floor (FLOPs at the fp16 matmul rate and fewest bytes at
the copy bandwidth, both measured in this run). Writes
``bench/results/suite-<date>.json`` (and to ``--out``), the tables into
BENCHMARKS.md between the suite's markers, and ``suite-<date>.png``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.gpu_timing import copy_bandwidth_gbs, environment, matmul_tflops, write_results  # noqa: E402
from bench.suite import progress, report  # noqa: E402
from bench.suite.floors import workload_floor  # noqa: E402
from bench.suite.max_autotune import max_autotune_row  # noqa: E402
from bench.suite.torch_variants import (  # noqa: E402
    DNNC_POLICIES,
    TORCH_VARIANTS,
    dnnc_variants,
    reference_output,
    torch_variants,
)
from bench.suite.workloads import WORKLOADS, Workload, select  # noqa: E402

VARIANTS = ("eager", "graph", "compile", "compile-max", "dnnc", "jax", "jax-dnnc")
DEFAULT_VARIANTS = tuple(v for v in VARIANTS if v != "compile-max")
"""``compile-max`` (torch.compile max-autotune, up to ``COMPILE_LIMIT_S`` a workload) runs
only when named: over the whole suite its compiles alone can take hours."""
TORCH_NAMES = dict(zip(("eager", "graph", "compile"), TORCH_VARIANTS, strict=True))


def jax_variants(
    workload: Workload, model: torch.nn.Module, inputs: tuple[torch.Tensor, ...], reference: torch.Tensor, flags: list[str]
) -> list[dict]:
    """Runs ``bench.suite.jax_worker`` in a fresh process on the same weights and inputs:
    JAX/XLA (``--xla``) and/or the same JAX function through dnnc (``--dnnc``)."""
    names = {"--xla": "JAX/XLA", "--dnnc": "dnnc from JAX"}
    with tempfile.TemporaryDirectory(prefix="dnnc-jax-") as tmp:
        weights, result = Path(tmp) / "weights.npz", Path(tmp) / "result.json"
        arrays = {k: v.detach().float().cpu().numpy() for k, v in model.state_dict().items()}
        arrays |= {f"__input_{i}": x.cpu().numpy() for i, x in enumerate(inputs)}
        np.savez(weights, __model__=np.array(workload.model), __reference__=reference.cpu().numpy(), **arrays)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
        try:
            subprocess.run(
                [sys.executable, "-m", "bench.suite.jax_worker", str(weights), str(result), *flags],
                cwd=ROOT,
                env=env,
                timeout=900,
                check=False,
            )
            return json.loads(result.read_text())
        except (OSError, ValueError, subprocess.TimeoutExpired) as e:
            return [{"variant": names[f], "status": f"failed: {type(e).__name__}: {e}"} for f in flags]


def run_workload(workload: Workload, variants: set[str], policies: tuple[str, ...], ceilings: dict[str, float]) -> dict:
    print(f"{workload.name}:", flush=True)
    model, inputs = workload.build()
    floor = workload_floor(model, inputs)
    reference = reference_output(model, inputs)
    rows: list[dict[str, Any]] = []
    if variants & set(TORCH_NAMES):
        rows += torch_variants(model, inputs, reference, {TORCH_NAMES[v] for v in variants & set(TORCH_NAMES)})
    if "compile-max" in variants:
        rows.append(max_autotune_row(workload.name))
        progress(rows[-1])
    if "dnnc" in variants:
        rows += dnnc_variants(model, inputs, reference, policies)
    flags = [f for v, f in (("jax", "--xla"), ("jax-dnnc", "--dnnc")) if v in variants]
    if flags and not workload.zoo:  # the JAX peers exist for the repository's own networks
        torch.cuda.empty_cache()  # leave the GPU's memory to XLA
        for row in jax_variants(workload, model, inputs, reference, flags):
            rows.append(row)
            progress(row)
    floor_ms = floor.ms(ceilings["matmul_tflops"], ceilings["copy_gbs"])
    items = workload.items(inputs)
    for r in rows:
        if r.get("status") == "ok":
            r["items_per_s"] = items / (r["median_ms"] / 1e3)
            r["of_floor"] = floor_ms / r["median_ms"]
    return {
        "workload": workload.name,
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "ceilings": ceilings,
        "unit": workload.unit,
        "items": items,
        "floor": {"flops": floor.flops, "bytes": floor.bytes, "ms": floor_ms},
        "variants": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", default="", help="comma-separated (default: all)")
    parser.add_argument("--variants", default=",".join(DEFAULT_VARIANTS), help=f"comma-separated among {', '.join(VARIANTS)}")
    parser.add_argument("--policies", default=",".join(DNNC_POLICIES), help="dnnc partition policies to run")
    parser.add_argument("--out", default=None, help="also write the JSON, tables and chart here")
    parser.add_argument("--no-update", action="store_true", help="do not rewrite BENCHMARKS.md")
    parser.add_argument(
        "--merge",
        default=None,
        help="an earlier suite JSON from the same machine and versions: its workloads not run now are kept",
    )
    args = parser.parse_args()
    variants = {v.strip() for v in args.variants.split(",") if v.strip()}
    if variants - set(VARIANTS):
        raise SystemExit(f"unknown variant {sorted(variants - set(VARIANTS))[0]!r}; known: {', '.join(VARIANTS)}")
    workloads = select(args.workloads)
    if not torch.cuda.is_available():
        raise SystemExit("bench/run.py times variants on an NVIDIA GPU and none is visible here")
    ceilings = {"copy_gbs": copy_bandwidth_gbs(), "matmul_tflops": matmul_tflops()}
    print(f"ceilings: copy {ceilings['copy_gbs']:.0f} GB/s, fp16 matmul {ceilings['matmul_tflops']:.0f} TFLOP/s", flush=True)
    payload: dict[str, Any] = {"environment": environment(), "ceilings": ceilings, "results": []}
    previous = json.loads(Path(args.merge).read_text()) if args.merge else None
    if previous is not None:
        try:  # refuse before spending time on the GPU
            report.merge_runs(previous, payload, list(WORKLOADS))
        except report.MergeError as e:
            raise SystemExit(f"{args.merge}: {e}") from None
    for workload in workloads:
        payload["results"].append(run_workload(workload, variants, tuple(args.policies.split(",")), ceilings))
        jax_rows = [v for r in payload["results"] for v in r["variants"] if v.get("jax")]
        payload["jax"] = jax_rows[0]["jax"] if jax_rows else None
        merged = report.merge_runs(previous, payload, list(WORKLOADS)) if previous else payload
        paths = write_results("suite", merged, args.out)  # after every workload: a cut-short run keeps its results
    payload = merged
    text = report.tables(payload)
    print(text)
    stamp = dt.date.today().isoformat()
    for directory in [ROOT / "bench" / "results", *([Path(args.out)] if args.out else [])]:
        report.chart(payload, directory / f"suite-{stamp}.png")
        (directory / f"suite-{stamp}.md").write_text(text)
    if not args.no_update:
        report.update_benchmarks(ROOT / "BENCHMARKS.md", text)
    print("wrote", ", ".join(str(p) for p in paths))


if __name__ == "__main__":
    main()
