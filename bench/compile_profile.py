"""Where a cold compile spends its time, and what each step costs inside the program.

For one workload and partition policy: compiles once on an empty cache with the
expensive calls timed (Triton compiles and autotuning, cuDNN plan builds, the
partitioner's lowering and timing of candidates; ``--cprofile`` for a full profile,
several times slower), then
times every step of the built program in place (``dnnc.runtime.profile``) next to
what the partitioner measured or estimated for the chosen groups, so a group that
is faster alone than in its program shows up. ``--peer-kernels`` also lists the GPU
kernels of torch.compile's program (``mode="reduce-overhead"``, as the suite runs it)
by time per call, from ``torch.profiler``, so the two programs can be set side by side;
``--own-kernels`` lists dnnc's the same way (its call as a user makes it: the CUDA-graph
replay). Each cuDNN step also names its plan and the time that plan was tuned at.
``--keep-auto`` builds ``auto``'s cover even where the whole-program contest would keep
a single-backend program, to see where its steps lose against their prices.
``--memory`` records the allocator's history over the cold compile and the first call
and lists what was live at its peak by the dnnc line that allocated it
(``bench/memory_peak.py``), beside what the program holds (``summary()["memory"]``).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import functools
import importlib
import io
import json
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dnnc
from bench.gpu_timing import environment, fp16_inputs
from bench.memory_peak import at_peak, recorded
from bench.suite.workloads import WORKLOADS
from dnnc import knobs
from dnnc.backends.interface import GROUP_KIND_ATTR, group_attr
from dnnc.ir.analysis import inner_op_names
from dnnc.ir.types import describe
from dnnc.runtime.profile import random_inputs, step_buffers, step_times_ms

TIMED = {
    "triton.compile": ("triton", "compile"),
    "triton autotune+compile (compile_group)": ("dnnc.backends.triton.launch", "compile_group"),
    "cudnn build_kernel": ("dnnc.backends.cudnn.runtime", "build_kernel"),
    "partition pricing measure": ("dnnc.partition.pricing", "measure"),
    "partition time_alone": ("dnnc.partition.pricing", "time_alone"),
    "gpu executor build": ("dnnc.runtime.gpu_executor.GpuExecutor", "__init__"),
    "triton parallel precompile": ("dnnc.backends.triton.compiler", "precompile"),
    "partition measure rounds": ("dnnc.partition.partitioner", "measure_what_matters"),
    "partition whole programs": ("dnnc.partition.contest", "build_and_time"),
}


class CallTimers:
    """Wall time and call count of the functions in ``TIMED`` while active."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._undo: list[tuple[Any, str, Any]] = []

    def __enter__(self) -> CallTimers:
        for label, (where, attr) in TIMED.items():
            owner = _resolve(where)
            original = getattr(owner, attr)
            self._undo.append((owner, attr, original))
            setattr(owner, attr, self._wrap(label, original))
        return self

    def __exit__(self, *exc: object) -> None:
        for owner, attr, original in reversed(self._undo):
            setattr(owner, attr, original)

    def _wrap(self, label: str, fn: Any) -> Any:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[label] = self.seconds.get(label, 0.0) + time.perf_counter() - started
                self.calls[label] = self.calls.get(label, 0) + 1

        return timed

    def table(self) -> dict[str, dict[str, float]]:
        return {k: {"s": round(v, 2), "calls": self.calls[k]} for k, v in self.seconds.items()}


def _resolve(dotted: str) -> Any:
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(dotted)


def profile(
    workload: str,
    policy: str,
    out_dir: Path,
    top: int,
    full: bool,
    own_kernels: bool = False,
    memory: bool = False,
    keep_auto: bool = False,
) -> dict[str, Any]:
    model, inputs = WORKLOADS[workload].build()
    model = model.eval().cuda().half()
    xs = fp16_inputs(inputs)
    cache = tempfile.mkdtemp(prefix="dnnc-cache-")
    snapshot: dict[str, Any] = {}
    covers: list[dict[str, Any]] = []
    try:
        with knobs.override(partition=policy, cache_dir=Path(cache)), contenders_seen(covers), auto_cover_kept(keep_auto):
            profiler = cProfile.Profile() if full else None
            started = time.perf_counter()
            with CallTimers() as timers, recorded(snapshot) if memory else contextlib.nullcontext():
                if profiler:
                    profiler.enable()
                compiled = dnnc.compile(model, xs, device="cuda")
                if profiler:
                    profiler.disable()
                if memory:
                    compiled(*xs)  # the first call: the CUDA-graph capture
                    torch.cuda.synchronize()
            cold = time.perf_counter() - started
            started = time.perf_counter()
            dnnc.compile(model, xs, device="cuda")
            warm = time.perf_counter() - started
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if profiler:
        text = io.StringIO()
        for order in ("cumulative", "tottime"):
            pstats.Stats(profiler, stream=text).sort_stats(order).print_stats(top)
        with (out_dir / "compile-profile.txt").open("a") as f:
            f.write(f"== {workload} {policy}: cold {cold:.1f} s, warm {warm:.1f} s\n{text.getvalue()}\n")
    executor = compiled._executor  # type: ignore[union-attr]
    times = step_times_ms(executor, random_inputs(executor))
    replayed = _replayed_ms(executor)
    steps = [
        {
            "backend": s.backend,
            "kind": group_attr(s.op, GROUP_KIND_ATTR) or s.op.name,
            "ops": inner_op_names(s.op),
            "result": describe(s.op.results[0].type) if s.op.results else "",
            "ms": ms,
            "replayed_ms": replayed.get(i),
            **_plan(s.kernel),
        }
        for i, (s, ms) in enumerate(zip(executor.steps, times))
    ]
    record = compiled.program.metadata.get("decisions") or {}
    groups = [
        {k: g.get(k) for k in ("backend", "kind", "estimated_ms", "measured_ms", "cost_ms")} for g in record.get("groups", [])
    ]
    stages = {s.name: round(s.seconds, 3) for s in compiled.report.stages}
    print(f"{workload} {policy}: cold {cold:.1f} s warm {warm:.1f} s; steps in place {sum(times):.4f} ms", flush=True)
    print(json.dumps(timers.table()), flush=True)
    for step in sorted(steps, key=lambda st: -st["ms"])[:top]:
        ops = ",".join(step["ops"])[:60]
        plan = f"  plan {step['plan']} (tuned {step['plan_ms']})" if step.get("plan") else ""
        again = f"{step['replayed_ms']:8.4f}" if step.get("replayed_ms") is not None else "       -"
        print(
            f"    {step['ms']:8.4f} ms {again} ms  {step['backend']:8s} {step['kind']:24s} {step['result']:24s} {ops}{plan}",
            flush=True,
        )
    own = kernels_per_call(f"{workload} dnnc {policy}", lambda: compiled(*xs), top) if own_kernels else None
    held = compiled.summary().get("memory")
    at_peak_of_compile = None
    if memory:
        at_peak_of_compile = {"resident_mb": snapshot["resident_mb"], **at_peak(snapshot, torch.cuda.current_device(), top)}
        print(f"memory: held {held}; at the compile's peak {json.dumps(at_peak_of_compile)}", flush=True)
    return {
        "memory_held": held,
        "memory_at_compile_peak": at_peak_of_compile,
        "own_kernels": own,
        "calls": timers.table(),
        "workload": workload,
        "policy": policy,
        "cold_s": cold,
        "warm_s": warm,
        "stages": stages,
        "steps_in_place": steps,
        "steps_total_ms": sum(times),
        "groups": groups,
        "predicted_ms": (record.get("totals") or {}).get("chosen_ms"),
        "contest": record.get("programs"),
        "auto_covers": covers,
    }


@contextlib.contextmanager
def auto_cover_kept(keep: bool) -> Any:
    """With ``keep``: the whole-program contest sees ``auto``'s cover alone, so the program
    built and profiled is that cover even where a single-backend program would beat it:
    its steps in place set beside what each group was timed at alone."""
    if not keep:
        yield
        return
    from dnnc.partition import partitioner

    original = partitioner.contest

    def auto_only(program: Any, contenders: Any) -> Any:
        return original(program, {k: v for k, v in contenders.items() if k == "auto"})

    partitioner.contest = auto_only  # type: ignore[assignment]
    try:
        yield
    finally:
        partitioner.contest = original  # type: ignore[assignment]


@contextlib.contextmanager
def contenders_seen(covers: list[dict[str, Any]]) -> Any:
    """Records ``auto``'s cover as it enters each whole-program contest (its groups,
    what each was measured or estimated at), whether or not it wins: two compiles of
    one workload whose contests disagree can then be told apart by cover or by build."""
    from dnnc.partition.partitioner import Partition

    original = Partition.whole_program_check

    def seen(self: Any, whole: Any, priced: Any, decision: Any, prefixes: Any) -> Any:
        covers.append(
            {
                "predicted_ms": decision.record["totals"]["chosen_ms"],
                "groups": [
                    {k: g.get(k) for k in ("backend", "kind", "nodes", "estimated_ms", "measured_ms", "layout_ms", "cost_ms")}
                    for g in decision.record["groups"]
                ],
                "configs": {str(i): c for i, c in enumerate(decision.configs.values())},
            }
        )
        return original(self, whole, priced, decision, prefixes)

    Partition.whole_program_check = seen  # type: ignore[method-assign]
    try:
        yield
    finally:
        Partition.whole_program_check = original  # type: ignore[method-assign]


def _replayed_ms(executor: Any) -> dict[int, float]:
    """Each kernel step alone, replayed in a CUDA graph on the buffers it sees in the
    program: set beside its time in place, it tells a kernel slow on its program's
    buffers from one slowed by its neighbours or by the host."""
    from dnnc.timing import device_time_ms

    out = {}
    for i, (step, ins, outs) in enumerate(step_buffers(executor, random_inputs(executor))):
        if step.kernel is not None:
            out[i] = device_time_ms(lambda step=step, ins=ins, outs=outs: step.kernel.launch(ins, outs))
    return out


def _plan(kernel: Any) -> dict[str, Any]:
    """A cuDNN step's plan: its name and the ms it was tuned at (alone)."""
    plan = getattr(kernel, "plan", None)
    if plan is None or not hasattr(plan, "engine"):
        return {}
    return {"plan": plan.name or f"engine {plan.engine}", "plan_ms": plan.ms}


def peer_kernels(workload: str, top: int) -> dict[str, Any]:
    """torch.compile's GPU kernels for the workload, per call, longest first."""
    from bench.suite.torch_variants import _compiled

    model, inputs = WORKLOADS[workload].build()
    net = model.eval().cuda().half()
    return {
        "workload": workload,
        **kernels_per_call(f"{workload} torch.compile", _compiled(net, fp16_inputs(inputs), "reduce-overhead"), top),
    }


def kernels_per_call(label: str, run: Any, top: int, calls: int = 20) -> dict[str, Any]:
    """The GPU kernels ``run`` launches (CUDA-graph nodes included), per call, longest first."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    for _ in range(5):
        run()
    torch.cuda.synchronize()
    with torch_profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            run()
        torch.cuda.synchronize()
    kernels = [
        {"name": e.key[:160], "ms": e.device_time_total / 1000 / calls, "launches": e.count / calls}
        for e in prof.key_averages()
        if e.device_time_total > 0
    ]
    kernels.sort(key=lambda k: -k["ms"])
    total = sum(k["ms"] for k in kernels)
    print(f"{label}: kernels {total:.4f} ms a call", flush=True)
    for k in kernels[:top]:
        print(f"    {k['ms']:8.4f} ms  x{k['launches']:<5g} {k['name'][:110]}", flush=True)
    gaps = timeline(prof, calls)
    if gaps:
        print(f"{label}: GPU busy {gaps['busy_ms']:.4f} ms a call, idle between its kernels {gaps['idle_ms']:.4f}", flush=True)
    return {"label": label, "kernels_ms": total, "kernels": kernels, "timeline": gaps}


CALL_GAP_US = 30.0
"""An idle stretch of the GPU at least this long lies between two calls (the host's part
of a call), not between two kernels of one call's replay."""


def timeline(prof: Any, calls: int) -> dict[str, Any] | None:
    """Where a call's GPU time goes besides its kernels, from the profiler's device events:
    the time some kernel runs (overlapping kernels, PDL's, counted once), the idle stretches
    between kernels of one call (shorter than ``CALL_GAP_US``) and the longest of them with
    the kernels on either side. A call that takes longer than its kernels' sum either
    idles between them (launch latency, a dependency's tail) or runs them slower than the
    profiler's own spaced replays (clocks)."""
    from torch.autograd import DeviceType

    spans = sorted(
        (e.time_range.start, e.time_range.end, e.name)
        for e in prof.events()
        if e.device_type == DeviceType.CUDA and e.time_range.end > e.time_range.start
    )
    if not spans:
        return None
    busy = 0.0
    idle: list[tuple[float, str, str]] = []
    start, end, name = spans[0]
    for s, e, n in spans[1:]:
        if s > end:
            busy += end - start
            if s - end < CALL_GAP_US:
                idle.append((s - end, name, n))
            start = s
        if e >= end:  # the kernel that ends last so far
            end, name = e, n
    busy += end - start
    idle.sort(reverse=True)
    return {
        "busy_ms": busy / calls / 1e3,
        "idle_ms": sum(g for g, _, _ in idle) / calls / 1e3,
        "idle_stretches": len(idle) / calls,
        "longest": [{"us": round(g, 2), "after": a[:80], "before": b[:80]} for g, a, b in idle[:12]],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    parser.add_argument("--workloads", default="resnet50-b1", help="comma-separated bench workloads (bench/suite/workloads.py)")
    parser.add_argument("--policies", default="auto")
    parser.add_argument("--top", type=int, default=45)
    parser.add_argument("--cprofile", action="store_true", help="Also profile every call (several times slower).")
    parser.add_argument("--peer-kernels", action="store_true", help="Also list torch.compile's kernels per call.")
    parser.add_argument("--own-kernels", action="store_true", help="Also list dnnc's kernels per call.")
    parser.add_argument(
        "--memory",
        action="store_true",
        help="Record the allocator's history: what was live at the compile's peak, and where from.",
    )
    parser.add_argument(
        "--keep-auto", action="store_true", help="Build auto's cover even where a single-backend program beats it."
    )
    args = parser.parse_args()
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    results = [
        profile(w, p, out_dir, args.top, args.cprofile, args.own_kernels, args.memory, args.keep_auto)
        for w in args.workloads.split(",")
        for p in args.policies.split(",")
    ]
    peers = [peer_kernels(w, args.top) for w in args.workloads.split(",")] if args.peer_kernels else []
    record = {"environment": environment(), "results": results, "peer_kernels": peers}
    (out_dir / "compile-profile.json").write_text(json.dumps(record, indent=1))
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
