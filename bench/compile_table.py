"""Cold and warm compile time and run time per model, for dnnc's default (``auto``),
its old default (``greedy``) and torch.compile (``mode="reduce-overhead"``, freezing).

    python bench/compile_table.py [--workloads resnet50-b32,bert-s128-b8] [--variants auto,greedy,torch.compile]
                                  [--deadline-s 540] [--name part1] [--out DIR]
    python bench/compile_table.py --render bench/results/compile-table-*.json

A model's row takes its serving-size workload (``table_workloads``: batch 32 for images,
8 for text, the largest a workload of that model has below that). Each variant compiles
*cold* in a fresh process with empty caches (dnnc's cache directory; Inductor's, which
holds its Triton kernels; Triton's own), then *warm* in another fresh process on those
caches: what a user's first and second run of a script pay. Compile time runs from the
call to the first result (its CUDA graph captured). Every output is checked against the
float32 reference before it is timed (``bench.suite.torch_variants.measure``); the run
time is the cold compile's program (the warm one is the same program: its time is kept
as a check on noise). A cut-short run keeps what it measured: the JSON is rewritten
after every workload, and ``--deadline-s`` starts no workload once that much time has
gone (the device runs one command for at most 10 minutes). ``--render`` joins the JSON
files of several runs (one machine type) into the Markdown table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

STARTED = time.perf_counter()
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.fresh_process import last_json  # noqa: E402
from bench.suite.workloads import WORKLOADS, Workload  # noqa: E402

RESULTS = ROOT / "bench" / "results"
VARIANTS = ("auto", "greedy", "torch.compile")
SERVING_BATCH = {"images": 32, "tokens": 8, "clips": 8}
CHILD_TIMEOUT_S = 420


def table_workloads() -> list[Workload]:
    """One workload per model (suite and zoo, in the suite's order): the one of the largest
    batch not above the serving batch of its unit, the first of those on a tie."""
    chosen: dict[str, Workload] = {}
    for w in WORKLOADS.values():
        batch = int(w.args.get("batch", 1))
        if batch > SERVING_BATCH[w.unit]:
            continue
        held = chosen.get(w.model)
        if held is None or batch > int(held.args.get("batch", 1)):
            chosen[w.model] = w
    return list(chosen.values())


def cache_env(caches: Path, variant: str) -> dict[str, str]:
    """Each variant's own cache directories, so no variant's cold compile finds another's
    kernels: the CUDA driver's JIT cache among them (``CUDA_CACHE_PATH``), where cuDNN's
    runtime-compiled kernels are kept across processes (an H100's unet2d cold compile
    spent 13.0 s building cuDNN plans in its workers the first time on a machine and
    5.6 s the second, BENCHMARKS.md)."""
    tag = variant.replace(".", "-")
    return {
        "DNNC_CACHE_DIR": str(caches / f"dnnc-{tag}"),
        "TORCHINDUCTOR_CACHE_DIR": str(caches / f"inductor-{tag}"),
        "TRITON_CACHE_DIR": str(caches / f"triton-{tag}"),
        "CUDA_CACHE_PATH": str(caches / f"cuda-{tag}"),
    }


def measure_in_child(workload: str, variant: str) -> dict[str, Any]:
    """Runs in the child: build the workload, its float32 reference, then compile, check and time ``variant``."""
    import torch

    from bench.suite.torch_variants import dnnc_variants, reference_output, torch_variants

    model, inputs = WORKLOADS[workload].build()
    reference = reference_output(model, inputs)  # also starts CUDA, cuBLAS and cuDNN before any compile is timed
    if variant == "torch.compile":
        row = torch_variants(model, inputs, reference, {"torch.compile"})[0]
    else:
        row = dnnc_variants(model, inputs, reference, (variant,))[0]
    row["peak_mb"] = row.get("peak_mb") or torch.cuda.max_memory_allocated() / 2**20
    row["until_result_s"] = round(time.perf_counter() - STARTED, 2)  # against process_s: what the exit took
    return row


def run_child(workload: str, variant: str, env: dict[str, str]) -> dict[str, Any]:
    """``measure_in_child`` in a fresh process with ``env``; a crash or time-out is a failed row."""
    started = time.perf_counter()
    row = last_json([sys.executable, __file__, "--child", workload, "--variants", variant], env, CHILD_TIMEOUT_S)
    if row.get("status", "").startswith("failed"):
        return {"variant": variant, **row}
    row["process_s"] = round(time.perf_counter() - started, 2)
    return row


def measure_workload(workload: Workload, variants: list[str], warm_variants: list[str]) -> dict[str, Any]:
    print(f"{workload.name}:", flush=True)
    rows: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="dnnc-table-") as directory:
        for variant in variants:
            env = cache_env(Path(directory), variant)
            cold = run_child(workload.name, variant, env)
            warm = run_child(workload.name, variant, env) if cold.get("status") == "ok" and variant in warm_variants else None
            rows[variant] = {"cold": cold, "warm": warm}
            print(f"    {variant:14s} {_summary(cold, warm)}", flush=True)
    return {"workload": workload.name, "model": workload.model, "unit": workload.unit, "variants": rows}


def _summary(cold: dict[str, Any], warm: dict[str, Any] | None) -> str:
    if cold.get("status") != "ok":
        return str(cold.get("status"))
    text = f"cold {cold['compile_s']:6.1f} s   run {cold['median_ms']:.4f} ms"
    if warm is None or warm.get("status") != "ok":
        return f"{text}   warm {warm.get('status') if warm else 'not run'}"
    return f"{text}   warm {warm['compile_s']:5.2f} s (run {warm['median_ms']:.4f} ms)"


def environment_record() -> dict[str, Any]:
    """The GPU and versions (``bench.gpu_timing.environment``) and the model libraries'."""
    from importlib.metadata import PackageNotFoundError, version

    from bench.gpu_timing import environment

    env = environment()
    for name in ("timm", "transformers", "diffusers"):
        try:
            env[name] = version(name)
        except PackageNotFoundError:
            env[name] = None
    return env


def render(paths: list[Path]) -> str:
    """The Markdown table of one or more runs' JSON (later files win for a workload run twice)."""
    runs = [json.loads(p.read_text()) for p in paths]
    by_workload: dict[str, dict[str, Any]] = {}
    for run in runs:
        for result in run["results"]:
            by_workload[result["workload"]] = result
    order = [w.name for w in table_workloads()]
    results = sorted(by_workload.values(), key=lambda r: order.index(r["workload"]) if r["workload"] in order else len(order))
    variants = [v for v in VARIANTS if any(v in r["variants"] for r in results)]
    head = "| model (workload) | " + " | ".join(f"{_label(v)} cold s | warm s | run ms" for v in variants) + " |"
    if {"auto", "torch.compile"} <= set(variants):
        head += " auto / torch.compile |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in results:
        cells = []
        for v in variants:
            cells += _cells(r["variants"].get(v))
        if {"auto", "torch.compile"} <= set(variants):
            cells.append(_ratio(r["variants"].get("auto"), r["variants"].get("torch.compile")))
        lines.append(f"| {r['model']} ({r['workload']}) | " + " | ".join(cells) + " |")
    env = runs[-1]["environment"]
    where = f"{env.get('device')}, torch {env.get('torch')}, Triton {env.get('triton')}, cuDNN {env.get('cudnn_backend')}"
    table = f"{where}, {runs[-1]['date']}.\n\n" + "\n".join(lines) + "\n"
    contests = render_contests(results)
    return table + (f"\n{contests}" if contests else "")


CONTENDERS = ("auto", "cudnn-only", "triton-only")


def render_contests(results: list[dict[str, Any]]) -> str:
    """``auto``'s whole-program contest per model, from its cold compile: each policy's
    program as timed there (the one ``auto`` keeps is the fastest; "not timed": predicted
    over the contest's margin, or it did not build; "same": the same program as
    ``auto``'s; "no cover": the policy's backend cannot take every op). Empty when no
    compile held a contest (every group's choice came from tuning specs)."""
    lines = []
    for r in results:
        cold = ((r["variants"].get("auto") or {}).get("cold")) or {}
        contest = cold.get("contest")
        if not contest:
            continue
        cells = []
        for policy in CONTENDERS:
            ms = contest.get(policy, "absent")
            if policy != "auto" and ms is not None and ms == contest.get("auto"):
                cells.append("same")
            else:
                cells.append("not timed" if ms is None else "no cover" if ms == "absent" else f"{ms:.3f}")
        lines.append(f"| {r['model']} ({r['workload']}) | {contest['winner']} | " + " | ".join(cells) + " |")
    if not lines:
        return ""
    head = "| model (workload) | kept | " + " | ".join(f"{p} program ms" for p in CONTENDERS) + " |"
    return "\n".join([head, "|" + "---|" * (head.count("|") - 1), *lines]) + "\n"


def _label(variant: str) -> str:
    return {"auto": "dnnc auto", "greedy": "dnnc greedy"}.get(variant, variant)


def _cells(entry: dict[str, Any] | None) -> list[str]:
    if entry is None:
        return ["-", "-", "-"]
    cold, warm = entry["cold"], entry["warm"]
    if cold.get("status") != "ok":
        return [str(cold.get("status")).split(":")[0], "-", "-"]
    stopgap = "*" if cold.get("torch_ops") or cold.get("fallbacks") else ""
    warm_cell = (
        f"{warm['compile_s']:.2f}" if warm and warm.get("status") == "ok" else str((warm or {}).get("status", "-")).split(":")[0]
    )
    return [f"{cold['compile_s']:.1f}", warm_cell, f"{cold['median_ms']:.3f}{stopgap}"]


def _ratio(ours: dict[str, Any] | None, peer: dict[str, Any] | None) -> str:
    if not ours or not peer or ours["cold"].get("status") != "ok" or peer["cold"].get("status") != "ok":
        return "-"
    return f"{ours['cold']['median_ms'] / peer['cold']['median_ms']:.2f}x"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", default="", help="comma-separated (default: one per model, table_workloads)")
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated among {', '.join(VARIANTS)}")
    parser.add_argument("--warm-variants", default=None, help="the variants compiled warm too (default: all)")
    parser.add_argument("--deadline-s", type=float, default=None, help="start no workload once this much time has gone")
    parser.add_argument("--name", default="", help="added to the result file's name (several runs of one day)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--render", nargs="+", type=Path, default=None, help="print the table of these JSON files")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.render:
        print(render(args.render))
        return
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        parser.error(f"unknown variant {unknown[0]!r}; known: {', '.join(VARIANTS)}")
    if args.child:
        print(json.dumps(measure_in_child(args.child, variants[0])))
        return
    warm_variants = variants if args.warm_variants is None else [v.strip() for v in args.warm_variants.split(",") if v.strip()]
    names = [n.strip() for n in args.workloads.split(",") if n.strip()]
    missing = [n for n in names if n not in WORKLOADS]
    if missing:
        parser.error(f"unknown workload {missing[0]!r}; known: {', '.join(WORKLOADS)}")
    workloads = [WORKLOADS[n] for n in names] if names else table_workloads()
    import torch

    from bench.gpu_timing import result_path

    if not torch.cuda.is_available():
        raise SystemExit("bench/compile_table.py compiles for an NVIDIA GPU and none is visible here")
    started = time.perf_counter()
    today = dt.date.today().isoformat()
    record: dict[str, Any] = {"date": today, "environment": environment_record(), "results": [], "skipped": []}
    path = result_path(args.out, "compile-table", args.name)
    for workload in workloads:
        if args.deadline_s is not None and time.perf_counter() - started > args.deadline_s:
            record["skipped"].append(workload.name)
            continue
        record["results"].append(measure_workload(workload, variants, warm_variants))
        path.write_text(json.dumps(record, indent=2) + "\n")
    path.write_text(json.dumps(record, indent=2) + "\n")
    if record["skipped"]:
        print(f"not started (deadline): {', '.join(record['skipped'])}")
    print(render([path]))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
