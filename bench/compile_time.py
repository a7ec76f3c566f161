"""How long a whole compile takes, cold and warm, and where the cold one spends it.

    python bench/compile_time.py --timm mobilenetv2_100,ghostnet_100 [--size 64 --batch 2]
    python bench/compile_time.py --workloads resnet50-b32 --dtype float16 --policies auto,greedy --out DIR

Each model compiles twice per partition policy (``--policies``, default: the default
policy alone): *cold*, in a fresh process with empty cache directories (dnnc's, Triton's
and the CUDA driver's JIT cache: every cuDNN plan tuned, every Triton kernel compiled,
every partition candidate timed), then *warm*, in a fresh process reading those caches
(what a user's second run pays). That comes twice:
*rewarm* with the compile cache off (the model exported and compiled again, every
measurement and kernel found in the caches), then *warm* with the defaults (the cold
compile stored the whole compile, so the compile cache finds it without exporting). The
warm compile saves an artifact, and ``--loads`` fresh processes (3) each load it and make
their first call; the median is kept (``load_s``: what a server pays at start;
``load_only_s``: ``dnnc.load`` alone). The cold compile reports its stages
(``CompileReport``); with ``--profile`` it and one more load are also profiled: the
functions of dnnc, Triton and cuDNN's frontend that took the most time, with their call
counts (how many kernels were compiled, plans built, candidates timed), and for the load
also every function by its own time (torch's and the CUDA driver's included).
Profiling is off by default because it slows the Python-heavy stages (export most) and
its attribution mixes threads (on Python 3.12 cProfile sees every thread, and the
compile's precompiles run in threads). Writes one JSON per run
under ``--out`` (default ``bench/results/``), rewritten after each model.
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
from bench.export_time import top_own
from bench.gpu_timing import result_path
from dnnc import knobs, progress

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


def compile_once(spec: str, args: argparse.Namespace) -> tuple[float, dnnc.CompiledModule, tuple[Any, ...]]:
    model, inputs = build(spec, args.batch, args.size, getattr(torch, args.dtype), args.device)
    started = time.perf_counter()
    compiled = dnnc.compile(model, inputs, device=args.device)
    with torch.no_grad():
        compiled(*inputs)  # a CUDA graph is captured on the first call: part of what the user waits for
    if args.device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - started, compiled, inputs


def run_ms(compiled: dnnc.CompiledModule, inputs: tuple[Any, ...], calls: int = 200) -> float | None:
    """Median GPU ms of one call of the compiled program (its CUDA graph replayed),
    from events around each of ``calls`` calls after a warm-up: how fast what the
    compile chose runs, so a change to compile time shows what it costs at run time."""
    if not torch.cuda.is_available():
        return None
    times = []
    with torch.no_grad():
        for _ in range(10):
            compiled(*inputs)
        for _ in range(calls):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            compiled(*inputs)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    return round(sorted(times)[len(times) // 2], 4)


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
    profile = cProfile.Profile() if args.profile else None
    if profile is not None:
        profile.enable()
    with progress.watching(lambda _: None) as watched:
        seconds, compiled, inputs = compile_once(spec, args)
    if profile is not None:
        profile.disable()
    summary = compiled.summary()
    decisions = compiled.program.metadata.get("decisions") or {}
    return {
        "cold_s": round(seconds, 2),
        "contest": decisions.get("programs"),
        "run_ms": run_ms(compiled, inputs) if args.device == "cuda" else None,
        "stages": [{"name": s.name, "seconds": round(s.seconds, 3), "ops": s.ops} for s in compiled.report.stages],
        "spans": {
            name: {"seconds": round(s.seconds, 3), "calls": s.calls, "items": s.items}
            for name, s in sorted(watched.spans.items(), key=lambda kv: -kv[1].seconds)
        },
        "steps": summary["steps"],
        "torch_ops": summary["torch_ops"],
        "fallbacks": len(summary["fallbacks"]),
        "profile": top_functions(profile) if profile is not None else [],
    }


def measured_alone(
    role: str, spec: str, args: argparse.Namespace, cache: Path, policy: str, compile_cache: bool = True, profiled: bool = True
) -> str:
    """What this script prints as its last line run as ``--ROLE-only SPEC`` in a fresh
    process that uses ``cache`` and compiles with ``policy`` (``--artifact``: the warm
    compile saves it there, the load reads it), with the compile cache on or off."""
    command = [sys.executable, __file__, f"--{role}-only", spec, "--artifact", str(cache / "warm.dnnc"), *_shared(args)]
    if args.profile and role in ("cold", "load") and profiled:
        command.append("--profile")
    env = {
        **os.environ,
        "DNNC_CACHE_DIR": str(cache),
        "CUDA_CACHE_PATH": str(cache / "cuda"),  # the driver's JIT cache too (compile_table.cache_env)
        "TRITON_CACHE_DIR": str(cache / "triton"),
        "DNNC_PARTITION": policy,
        "DNNC_COMPILE_CACHE": str(int(compile_cache)),
    }
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip().splitlines()[-1]


def load_once(spec: str, artifact: Path, args: argparse.Namespace) -> dict[str, Any]:
    """``dnnc.load`` and a first call (a CUDA graph captured), with ``--profile`` profiled."""
    _, inputs = build(spec, args.batch, args.size, getattr(torch, args.dtype), args.device)
    profile = cProfile.Profile() if args.profile else None
    started = time.perf_counter()
    if profile is not None:
        profile.enable()
    loaded = dnnc.load(artifact)
    loaded_s = time.perf_counter() - started
    with torch.no_grad():
        loaded(*inputs)
    if args.device == "cuda":
        torch.cuda.synchronize()
    if profile is not None:
        profile.disable()
    return {
        "load_s": time.perf_counter() - started,
        "load_only_s": round(loaded_s, 3),
        "load_stages": {s.name: round(s.seconds, 3) for s in loaded.report.stages},
        "profile": top_functions(profile) if profile is not None else [],
        "profile_own": top_own(profile) if profile is not None else [],
    }


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
    parser.add_argument("--policies", default=knobs.get().partition, help="partition policies, comma-separated")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--profile", action="store_true", help="profile the cold compile (slows it down)")
    parser.add_argument("--loads", type=int, default=3, help="fresh processes that load the artifact (the median is kept)")
    parser.add_argument("--name", default="", help="added to the result file's name (runs of one day apart)")
    parser.add_argument("--cold-only", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--warm-only", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--load-only", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--artifact", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cold_only:
        print(json.dumps(cold(args.cold_only, args)))
        return
    if args.warm_only:
        seconds, compiled, _ = compile_once(args.warm_only, args)
        compiled.save(args.artifact)
        print(seconds)
        return
    if args.load_only:
        print(json.dumps(load_once(args.load_only, args.artifact, args)))
        return
    specs = [f"timm:{n}" for n in args.timm.split(",") if n] + [w for w in args.workloads.split(",") if w]
    if not specs:
        parser.error("name models with --timm or --workloads")
    from bench.suite.workloads import WORKLOADS

    unknown = [w for w in specs if not w.startswith("timm:") and w not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workloads {', '.join(unknown)}; known: {', '.join(WORKLOADS)}")
    device = torch.cuda.get_device_name() if args.device == "cuda" else f"CPU ({platform.processor() or platform.machine()})"
    today = dt.date.today().isoformat()
    record = {
        "date": today,
        "device": device,
        "versions": _versions(),
        "compile_workers": knobs.get().compile_workers,
        "tune_floor_us": knobs.get().tune_floor_us,
        "settings": {
            "batch": args.batch,
            "size": args.size,
            "dtype": args.dtype,
            "device": args.device,
            "profiled": args.profile,
        },
        "results": [],
    }
    path = result_path(args.out, "compile-time", args.name, tag=None if args.device == "cuda" else "cpu")
    for spec in specs:
        for policy in args.policies.split(","):
            with tempfile.TemporaryDirectory(prefix="dnnc-cold-") as directory:
                cache = Path(directory)
                row = {"model": spec, "policy": policy, **json.loads(measured_alone("cold", spec, args, cache, policy))}
                # every measurement and kernel cached, the model compiled again (the cold compile stored the whole compile)
                row["rewarm_s"] = round(float(measured_alone("warm", spec, args, cache, policy, compile_cache=False)), 2)
                row["warm_s"] = round(float(measured_alone("warm", spec, args, cache, policy)), 2)
                loads = [json.loads(measured_alone("load", spec, args, cache, policy, profiled=False)) for _ in range(args.loads)]
                loads.sort(key=lambda m: m["load_only_s"])
                loaded = loads[len(loads) // 2]  # the median load, unprofiled
                row |= {
                    "load_s": round(loaded["load_s"], 2),
                    "load_only_s": loaded["load_only_s"],
                    "load_only_all_s": [m["load_only_s"] for m in loads],
                    "load_stages": loaded["load_stages"],
                }
                if args.profile:
                    profiled = json.loads(measured_alone("load", spec, args, cache, policy))
                    row |= {"load_profile": profiled["profile"], "load_profile_own": profiled["profile_own"]}
            record["results"].append(row)
            path.write_text(json.dumps(record, indent=2) + "\n")  # what a later model's failure or a time limit leaves
            print(
                f"{spec:32s} {policy:12s} cold {row['cold_s']:8.2f} s   rewarm {row['rewarm_s']:7.2f} s   warm {row['warm_s']:7.2f} s   "
                f"load {row['load_s']:6.2f} s   run {row['run_ms']} ms   steps {row['steps']}",
                flush=True,
            )
            for stage in row["stages"]:
                print(f"    {stage['name']:40s} {stage['seconds']:8.2f} s")
            for name, s in row["spans"].items():
                print(f"      {name:44s} {s['seconds']:8.2f} s {s['calls']:5d}x {s['items']:6d} items")
            for fn in row["profile"][:12]:
                print(f"    {fn['cumulative_s']:8.2f} s {fn['calls']:6d}x {fn['function']}")
            print(f"    dnnc.load {row['load_only_all_s']} s, stages {row['load_stages']}")
            if row.get("load_profile"):
                print("    the load profiled (dnnc.load, then the first call):")
            for fn in row.get("load_profile", [])[:15]:
                print(f"    {fn['cumulative_s']:8.2f} s {fn['calls']:6d}x {fn['function']}")
            for fn in row.get("load_profile_own", [])[:15]:
                print(f"    {fn['own_s']:8.2f} s own {fn['calls']:6d}x {fn['function']}")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
