"""Where a compiled program's call spends its host time, piece by piece.

    python bench/call_overhead.py [--workloads conv-block-b1] [--calls 2000] [--out DIR]

A small program's call is bound by the host, not the GPU: on an H200 the conv block at
batch 1 took 0.035 ms per ordinary call against 0.010 ms bound and replayed
(``CompiledModule.bind``) and 0.012 ms for eager in one CUDA graph. This compiles each
workload with dnnc's defaults, checks its output, then times on the host (``perf_counter``,
microseconds per call) the whole call and each thing a call does: the input check, the
graph lookup, ``inference_mode``, the graph's launch, the output copies, the output
structure. Pieces that enqueue GPU work are timed over fewer calls than the launch
queue holds, so the host's time is what is measured, not the GPU's. A profile of the
whole calls lists the functions with the most own time. Writes
``call-overhead-<date>-<gpu>.json``.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import io
import pstats
import sys
import time
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.gpu_timing import environment, fp16_inputs, in_cuda_graph, median_ms, write_record
from bench.suite.workloads import WORKLOADS

RESULTS = Path(__file__).with_name("results")
QUEUED = 200
"""Calls timed without waiting for the GPU: fewer than its launch queue holds."""


def host_us(fn: Callable[[], Any], calls: int, rounds: int = 5) -> float:
    """Median over ``rounds`` rounds of the host's microseconds per call of ``fn``, the GPU
    drained before each round and not waited for inside it."""
    times = []
    for _ in range(rounds):
        torch.cuda.synchronize()
        started = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - started) / calls * 1e6)
    torch.cuda.synchronize()
    return sorted(times)[rounds // 2]


TIMED_ROUNDS = {"calls": 10, "rounds": 25}
"""The rounds ``median_ms`` times: 10 calls right after the GPU was waited for, 25 times.
The host's time per call in them, set beside ``host_us`` over 200 queued calls, says
whether a call is slower on the host just after a wait."""


def gpu_timeline(fn: Callable[[], Any], calls: int = 10) -> dict[str, Any]:
    """``calls`` calls right after a wait, under ``torch.profiler``: when each graph launch
    left the host and when the GPU ran each kernel (microseconds from the first launch),
    the GPU's busy time and its idle gaps. Says whether a call's time on the GPU is its
    kernels, the host's launches, or the wait between them."""
    from torch.profiler import ProfilerActivity, profile

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    events = prof.events()
    launches = sorted(e.time_range.start for e in events if e.name == "cudaGraphLaunch")
    kernels = sorted((e.time_range.start, e.time_range.end) for e in events if e.device_type.name == "CUDA")
    if not launches or not kernels:
        return {"launches": len(launches), "kernels": len(kernels)}
    t0 = launches[0]
    busy = sum(end - start for start, end in kernels)
    gaps = [b[0] - a[1] for a, b in pairwise(kernels)]
    return {
        "launch_us": [round(t - t0, 1) for t in launches],
        "kernel_start_us": [round(k[0] - t0, 1) for k in kernels],
        "gpu_span_us": round(kernels[-1][1] - kernels[0][0], 1),
        "gpu_busy_us": round(busy, 1),
        "largest_gaps_us": sorted((round(g, 1) for g in gaps), reverse=True)[:12],
        "kernels_per_call": len(kernels) / calls,
    }


def breakdown(name: str, calls: int) -> dict[str, Any]:
    import dnnc
    from dnnc.runtime.signature import check_inputs, placement

    model, inputs = WORKLOADS[name].build()
    half = model.cuda().half().eval()
    xs = fp16_inputs(inputs)
    compiled = dnnc.compile(half, xs, device="cuda")
    with torch.inference_mode():
        expected = half(*xs)
    got = compiled(*xs)
    error = ((got.float() - expected.float()).norm() / expected.float().norm()).item()
    if not error < 1e-2:
        raise SystemExit(f"{name}: dnnc's output is off by {error:.2e} (relative); nothing timed")
    compiled(*xs)  # the second call with the same tensors captures on their memory
    runner = compiled._runner
    direct = next(reversed(runner._direct.values())) if getattr(runner, "_direct", None) else None
    binding = compiled.bind(*[x.clone() for x in xs])
    with torch.inference_mode():
        eager_replay, _ = in_cuda_graph(lambda: half(*xs))

    def capturing() -> None:
        torch.cuda.is_current_stream_capturing()

    def inference() -> None:
        with torch.inference_mode():
            pass

    pieces: dict[str, Callable[[], Any]] = {
        "whole call": lambda: compiled(*xs),
        "check_inputs": lambda: check_inputs(compiled.input_specs, xs, compiled.device),
        "placement key": lambda: placement(xs),
        "is_current_stream_capturing": capturing,
        "inference_mode enter and exit": inference,
        "bound replay": binding.replay,
        "eager in one CUDA graph": eager_replay,
    }
    if direct is not None:
        graph = (direct.handing or [direct.shared])[0]
        pieces["graph replay"] = graph.replay
        if graph.handed is not None:
            handed = graph.handed
            pieces["outputs handed out"] = lambda: handed.free() and handed.give()
        else:
            pieces["output clones"] = lambda: [t.clone() for t in graph.outputs]
        placeholders = [None] * len(compiled._executor._returned)  # holds no buffer of a graph
        pieces["output structure"] = lambda: compiled._structured(placeholders)
    row: dict[str, Any] = {"workload": name, "relative_error": error, "inputs": len(xs)}
    row["host_us"] = {k: round(host_us(fn, QUEUED if k in _ENQUEUE else calls), 2) for k, fn in pieces.items()}
    timed = {"whole call": lambda: compiled(*xs), "bound replay": binding.replay, "eager in one CUDA graph": eager_replay}
    row["per_call_ms"] = {k: median_ms(fn) for k, fn in timed.items()}
    row["per_call_ms_100_back_to_back"] = {k: median_ms(fn, inner=100) for k, fn in timed.items()}
    row["host_us_in_timed_rounds"] = {k: round(host_us(fn, **TIMED_ROUNDS), 2) for k, fn in timed.items()}
    row["gpu_timeline"] = {k: gpu_timeline(fn) for k, fn in timed.items()}
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(calls):
        compiled(*xs)
    profile.disable()
    torch.cuda.synchronize()
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(15)
    row["profile"] = text.getvalue().splitlines()
    return row


_ENQUEUE = {"whole call", "bound replay", "eager in one CUDA graph", "graph replay", "output clones"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", default="conv-block-b1", help="comma-separated bench workloads")
    parser.add_argument("--calls", type=int, default=2000, help="calls per round for the pieces that launch nothing")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bench/call_overhead.py times calls on an NVIDIA GPU and none is visible here")
    names = [w for w in args.workloads.split(",") if w]
    unknown = [w for w in names if w not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workloads {', '.join(unknown)}; known: {', '.join(WORKLOADS)}")
    record = {"date": dt.date.today().isoformat(), "environment": environment(), "results": []}
    for name in names:
        row = breakdown(name, args.calls)
        record["results"].append(row)
        print(f"{name}: per call {row['per_call_ms']}")
        print(f"    100 back to back: {row['per_call_ms_100_back_to_back']}")
        print(f"    host us in the timed rounds: {row['host_us_in_timed_rounds']}")
        for way, timeline in row["gpu_timeline"].items():
            print(f"    timeline, {way}: {timeline}")
        for piece, us in row["host_us"].items():
            print(f"    {piece:32s} {us:8.2f} us")
        print("\n".join(row["profile"][:40]))
    write_record(args.out, "call-overhead", record)


if __name__ == "__main__":
    main()
