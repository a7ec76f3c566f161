"""How long a whole compile takes, cold and warm, and where the cold one spends it.

    python bench/compile_time.py --timm mobilenetv2_100,ghostnet_100 [--size 64 --batch 2]
    python bench/compile_time.py --workloads resnet50-b32 --dtype float16 --out DIR

Each model compiles twice with the default settings: *cold*, in this process with an
empty cache directory (every cuDNN plan tuned, every Triton kernel compiled, every
partition candidate timed), then *warm*, in a fresh process reading that cache (what a
user's second run pays). The cold compile is profiled: its stages (``CompileReport``)
and the functions of dnnc, Triton and cuDNN's frontend that took the most time, with
their call counts (how many kernels were compiled, plans built, candidates timed).
Writes one JSON per run under ``--out`` (default ``bench/results/``).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import datetime as dt
import json
import os
import platform
import pstats
import subprocess
import sys
import tempfile
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dnnc
from dnnc import knobs

RESULTS = Path(__file__).with_name("results")
PROFILED = ("dnnc", "triton", "cudnn")
"""Packages whose functions the profile keeps (the rest is torch, Python and xDSL)."""
TOP = 40


def build(spec: str, batch: int, size: int, dtype: torch.dtype, device: str) -> tuple[torch.nn.Module, tuple[Any, ...]]:
    """``timm:NAME`` (random weights, ``batch`` images of ``size``) or a bench workload name."""
    if spec.startswith("timm:"):
        from dnnc.models.zoo import timm_model

        model, inputs = timm_model(spec.removeprefix("timm:"), batch=batch, size=size)
    else:
        from bench.suite.workloads import WORKLOADS

        model, inputs = WORKLOADS[spec].build()
    model = model.to(device, dtype).eval()
    return model, tuple((x.to(dtype) if x.is_floating_point() else x).to(device) for x in inputs)


def compile_once(spec: str, args: argparse.Namespace) -> tuple[float, dnnc.CompiledModule]:
    model, inputs = build(spec, args.batch, args.size, getattr(torch, args.dtype), args.device)
    started = time.perf_counter()
    compiled = dnnc.compile(model, inputs, device=args.device)
    with torch.no_grad():
        compiled(*inputs)  # a CUDA graph is captured on the first call: part of what the user waits for
    if args.device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - started, compiled


def top_functions(profile: cProfile.Profile) -> list[dict[str, Any]]:
    stats = pstats.Stats(profile)
    rows = []
    for (file, line, name), (_, calls, _, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        package = Path(file).parts
        if not any(p in PROFILED for p in package):
            continue
        where = "/".join(package[package.index(next(p for p in package if p in PROFILED)) :])
        rows.append({"function": f"{where}:{line}:{name}", "calls": calls, "cumulative_s": round(cumulative, 3)})
    rows.sort(key=lambda r: -r["cumulative_s"])
    return rows[:TOP]


def cold(spec: str, args: argparse.Namespace) -> dict[str, Any]:
    profile = cProfile.Profile()
    profile.enable()
    seconds, compiled = compile_once(spec, args)
    profile.disable()
    summary = compiled.summary()
    return {
        "cold_s": round(seconds, 2),
        "stages": [{"name": s.name, "seconds": round(s.seconds, 3), "ops": s.ops} for s in compiled.report.stages],
        "steps": summary["steps"],
        "torch_ops": summary["torch_ops"],
        "fallbacks": len(summary["fallbacks"]),
        "profile": top_functions(profile),
    }


def warm(spec: str, args: argparse.Namespace, cache: Path) -> float:
    """The compile time in a new process that finds the cold compile's cache."""
    command = [sys.executable, __file__, "--warm-only", spec, *_shared(args)]
    env = {**os.environ, "DNNC_CACHE_DIR": str(cache)}
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def _shared(args: argparse.Namespace) -> list[str]:
    return ["--batch", str(args.batch), "--size", str(args.size), "--dtype", args.dtype, "--device", args.device]


def _versions() -> dict[str, str]:
    found = {"python": platform.python_version(), "torch": torch.__version__}
    for name in ("triton", "nvidia-cudnn-frontend", "timm", "transformers"):
        with contextlib.suppress(PackageNotFoundError):
            found[name] = version(name)
    if torch.backends.cudnn.is_available():
        found["cudnn"] = str(torch.backends.cudnn.version())
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timm", default="", help="timm model names, comma-separated")
    parser.add_argument("--workloads", default="", help="bench workload names, comma-separated")
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--dtype", default="float16", choices=["float16", "bfloat16", "float32"])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--warm-only", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.warm_only:
        print(compile_once(args.warm_only, args)[0])
        return
    specs = [f"timm:{n}" for n in args.timm.split(",") if n] + [w for w in args.workloads.split(",") if w]
    if not specs:
        parser.error("name models with --timm or --workloads")
    from bench.suite.workloads import WORKLOADS

    unknown = [w for w in specs if not w.startswith("timm:") and w not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workloads {', '.join(unknown)}; known: {', '.join(WORKLOADS)}")
    device = torch.cuda.get_device_name() if args.device == "cuda" else f"CPU ({platform.processor() or platform.machine()})"
    results = []
    for spec in specs:
        with tempfile.TemporaryDirectory(prefix="dnnc-cold-") as cache:
            with knobs.override(cache_dir=Path(cache)):
                row = {"model": spec, **cold(spec, args)}
            row["warm_s"] = round(warm(spec, args, Path(cache)), 2)
        results.append(row)
        print(f"{spec:32s} cold {row['cold_s']:8.2f} s   warm {row['warm_s']:7.2f} s   steps {row['steps']}", flush=True)
        for stage in row["stages"]:
            print(f"    {stage['name']:40s} {stage['seconds']:8.2f} s")
        for fn in row["profile"][:12]:
            print(f"    {fn['cumulative_s']:8.2f} s {fn['calls']:6d}x {fn['function']}")
    today = dt.date.today().isoformat()
    record = {
        "date": today,
        "device": device,
        "versions": _versions(),
        "compile_workers": knobs.get().compile_workers,
        "settings": {"batch": args.batch, "size": args.size, "dtype": args.dtype, "device": args.device},
        "results": results,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"compile-time-{today}-{args.device}.json"
    path.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
