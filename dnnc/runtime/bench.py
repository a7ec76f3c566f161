"""Latency, throughput and peak memory of a compiled (or loaded) module, for
``dnnc bench``. On the GPU: CUDA events around each call (inputs already on the
device), peak from torch's allocator. On the CPU reference backend: wall clock
and the process's peak resident memory (what the OS reports; it includes Python
and torch themselves)."""

from __future__ import annotations

import resource
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from dnnc.inputs import random_tensor
from dnnc.runtime.signature import TensorSpec


@dataclass
class BenchResult:
    backend: str
    median_ms: float
    items_per_s: float
    batch: int
    peak_bytes: int
    peak_kind: str
    """What ``peak_bytes`` measures."""
    iterations: int
    times_ms: list[float] = field(default_factory=list)
    """Every timed call, in order."""

    def percentile_ms(self, q: float) -> float:
        """The ``q``-th percentile (0-100) of the calls, interpolated between the two
        nearest (the median is the 50th)."""
        return percentile(self.times_ms, q)

    def as_json(self) -> dict[str, Any]:
        """What ``dnnc bench --json`` prints."""
        return {
            "backend": self.backend,
            "iterations": self.iterations,
            "batch": self.batch,
            "ms": {
                "p50": self.percentile_ms(50),
                "p90": self.percentile_ms(90),
                "p99": self.percentile_ms(99),
                "mean": statistics.fmean(self.times_ms),
                "min": min(self.times_ms),
                "max": max(self.times_ms),
            },
            "items_per_s": self.items_per_s,
            "peak_bytes": self.peak_bytes,
            "peak_kind": self.peak_kind,
        }


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile of ``values`` by linear interpolation between closest ranks."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def random_inputs(specs: Sequence[TensorSpec], device: str, seed: int = 0) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [random_tensor(s.shape, s.dtype, g).to(device) for s in specs]


def batch_of(specs: Sequence[TensorSpec]) -> int:
    """The leading dimension of the first input with one (1 for scalars)."""
    return next((s.shape[0] for s in specs if s.shape), 1)


def sizes_to_time(module: Any, wanted: dict[str, list[int]]) -> list[tuple[str, list[TensorSpec] | None]]:
    """The inputs ``dnnc bench --batch/--seq`` times: per combination of the sizes
    asked for, its label and input specs (the largest bucket's, resized); one run of
    the module's own signature when none are asked for."""
    import itertools

    from dnnc.buckets import shape_at
    from dnnc.errors import DnncError

    asked = {n: s for n, s in wanted.items() if s}
    if not asked:
        return [("", None)]
    plan = getattr(module, "plan", None)
    if plan is None:
        raise DnncError(f"--{next(iter(asked))}: the artifact was compiled for one shape; compile with --dynamic to time others")
    for name in asked:
        if name not in plan.names:
            raise DnncError(f"--{name}: the artifact's dynamic dimensions are {', '.join(plan.names)}")
    largest = dict(zip(plan.names, plan.buckets()[0]))
    runs = []
    for combo in itertools.product(*(asked.get(n, [largest[n]]) for n in plan.names)):
        sizes = dict(zip(plan.names, combo))
        specs = [TensorSpec(shape_at(s.shape, a, sizes), s.dtype) for s, a in zip(module.input_specs, plan.input_axes)]
        plan.measure([torch.empty(s.shape, dtype=s.dtype, device="meta") for s in specs])  # in range
        runs.append((plan.label(combo), specs))
    return runs


def bench(module: Any, iterations: int = 20, warmup: int = 3, specs: Sequence[TensorSpec] | None = None) -> BenchResult:
    """``module``: a ``CompiledModule`` (or ``BucketedModule``); inputs are fresh random
    tensors of its signature, or of ``specs``."""
    if iterations < 1:
        raise ValueError(f"iterations must be at least 1, got {iterations}")
    specs = list(module.input_specs) if specs is None else list(specs)
    inputs = random_inputs(specs, module.device)
    batch = batch_of(specs)
    on_gpu = module.device == "cuda"
    if on_gpu:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    for _ in range(warmup):
        module(*inputs)
    times = [_gpu_ms(module, inputs) if on_gpu else _cpu_ms(module, inputs) for _ in range(iterations)]
    median = statistics.median(times)
    if on_gpu:
        peak, kind, backend = torch.cuda.max_memory_allocated(), "GPU memory allocated by torch (peak)", "GPU"
    else:
        peak, kind, backend = _peak_rss(), "process peak resident memory", "CPU reference"
    return BenchResult(backend, median, batch / (median / 1e3), batch, peak, kind, iterations, times)


def _gpu_ms(module: Any, inputs: list[torch.Tensor]) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    module(*inputs)
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def _cpu_ms(module: Any, inputs: list[torch.Tensor]) -> float:
    started = time.perf_counter()
    module(*inputs)
    return (time.perf_counter() - started) * 1e3


def _peak_rss() -> int:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024  # bytes on macOS, KiB on Linux
