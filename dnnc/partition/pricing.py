"""Give every candidate a cost: the roofline estimate and a lowering check for all,
and on a GPU a measured time for the ones that matter; what is not measured is
estimated and corrected by how far off the estimate was for the measured
candidates of the same backend and kind.

Timing every candidate would take minutes (each is compiled first), so the
partitioner measures in rounds: the groups of the currently cheapest covers
(auto, cudnn-only, triton-only) are timed, costs are re-calibrated, and the
covers are solved again until they use no unmeasured group. Candidates are timed
with cuDNN's heuristic plan and Triton's first config unless
``knobs.measure_autotune``: tuning every candidate took most of a cold compile
(ResNet-50 on an H100: 116 cuDNN tunings and 164 Triton autotunes, 107 of 128 s),
and the whole programs ``auto`` compares at the end (``contest``) are built tuned,
so a cover chosen on untuned times still has to win as it will run.
Identical groups (the repeated blocks of a ResNet) are lowered and timed once.
"""

from __future__ import annotations

import contextvars
import logging
import queue
import statistics
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import torch

from dnnc import knobs, progress
from dnnc.errors import DnncError
from dnnc.ir.analysis import is_pixelwise_conv
from dnnc.ir.work import work_of
from dnnc.partition import memo
from dnnc.partition.backends import BACKENDS
from dnnc.partition.candidates import Candidate, Role
from dnnc.partition.cost import estimate_ms, layout_conversion_ms
from dnnc.partition.measure import NotBuilt, cached_ms, known_refusal, known_to_lower, remember_lowers, time_alone
from dnnc.roofline import GpuPeaks

log = logging.getLogger("dnnc.partition")


@dataclass
class PricingReport:
    measured: int = 0
    lowered: int = 0
    unique: int = 0
    dropped: list[str] = field(default_factory=list)
    seconds: float = 0.0
    calibration: dict[str, float] = field(default_factory=dict)


def price(candidates: Sequence[Candidate], params: Any, peaks: GpuPeaks) -> tuple[list[Candidate], PricingReport]:
    """Estimate every candidate and lower each distinct library one (cuDNN's) alone; the ones
    that do not lower, or that the library said before it has no kernel for on this GPU
    (``measure.known_refusal``), are dropped. Costs are the estimates until ``measure``."""
    started = time.perf_counter()
    report = PricingReport()
    lowered: dict[tuple[str, str, str], str | None] = {}
    kept = []
    for c in candidates:
        c.estimated_ms = estimate_ms(work_of(c.ops), c.backend, c.kind, peaks)
        c.layout_ms = layout_conversion_ms(c.ops, c.backend in BACKENDS and BACKENDS[c.backend].channels_last_convs, peaks)
        if c.role is Role.LIBRARY:  # a library may have no engine for the group
            key = identity(c, params)
            if key not in lowered:
                report.unique += 1
                lowered[key] = _lowering_problem(c, params, report)
            if lowered[key] is not None:
                report.dropped.append(f"{c.label} ({lowered[key]})")
                continue
        kept.append(c)
    recost(kept, report)
    report.seconds = time.perf_counter() - started
    return kept, report


Times = dict[tuple[str, str, str], float | str]
"""Measured ms, or why a group cannot run, per distinct group: one compile's memo (the
on-disk caches keep times and libraries' refusals across compiles; other failures are
retried next compile)."""


def measure(
    chosen: Sequence[Candidate], candidates: Sequence[Candidate], params: Any, report: PricingReport, times: Times
) -> list[Candidate]:
    """Time the not yet measured candidates among ``chosen`` on the GPU (identical
    groups once, through ``times``), then re-cost everything by the new calibration.
    Returns the candidates that remain usable (one that fails to build or run is dropped).
    The round's kernels are compiled side by side in the backends' workers, a batch at a
    time while the batch before is timed (``compiled_in_batches``)."""
    started = time.perf_counter()
    device = torch.device("cuda")
    settings = knobs.get()
    with knobs.override(autotune=settings.autotune and settings.measure_autotune):
        pending: dict[tuple[str, str, str], Candidate] = {}
        for c in chosen:
            if c.measured_ms is None and not c.fixed and c.spec is None and c.backend in BACKENDS:
                pending.setdefault(identity(c, params), c)
        lowered = {}
        progress.add(to_time=sum(1 for key in pending if key not in times))
        for key, c in pending.items():
            if key in times:
                continue
            hit = cached_ms(c, key[2])
            if hit is not None:  # measured by an earlier compile: not lowered again
                times[key] = hit
                report.measured += 1
                progress.add(timed=1)
                continue
            try:
                with progress.span("measure: lower groups alone"):
                    lowered[key] = memo.current().lowered(c, params)
            except DnncError as e:
                times[key] = str(e)
                progress.add(timed=1)
        for key, program in compiled_in_batches(lowered, device):
            with progress.span("measure: build and time groups"):
                times[key] = _time(pending[key], program, device, report)
            progress.add(timed=1)
    failed: set[int] = set()
    for c in {id(c): c for c in chosen}.values():  # a group in several policies' covers is reported once
        outcome = times.get(identity(c, params)) if c.measured_ms is None else None
        if isinstance(outcome, str):
            report.dropped.append(f"{c.label} ({outcome})")
            failed.add(id(c))
        elif outcome is not None:
            c.measured_ms = outcome
    kept = [c for c in candidates if id(c) not in failed]
    recost(kept, report)
    report.seconds += time.perf_counter() - started
    return kept


BATCH = 32
"""Programs whose kernels are compiled in one go while the ones before are timed: twice
the workers a GPU machine usually has (16), so their compiles of uneven length keep
them busy, and few enough that timing starts early."""

K = TypeVar("K")


def compiled_in_batches(programs: Mapping[K, Any], device: torch.device) -> Iterator[tuple[K, Any]]:
    """The programs in order, batch by batch (``BATCH``), each batch's kernels compiled
    side by side in the backends' workers (``_precompile``) in a thread of its own while
    the caller builds and times the batch before: the workers compile while this process
    times, where a round that compiled everything first left them idle while it timed
    (about as long: a UNet's rounds compiled for 5 s and timed for 6 s on an H200)."""
    items = list(programs.items())
    batches = [items[i : i + BATCH] for i in range(0, len(items), BATCH)]
    ready: queue.Queue[list[tuple[K, Any]]] = queue.Queue()

    def compile_ahead() -> None:
        for batch in batches:
            try:
                with progress.span("measure: compile kernels ahead"):
                    _precompile([program for _, program in batch], device)
            except Exception as e:  # a batch not compiled ahead is compiled as it is built
                log.info("partition: compiling a batch of candidates ahead failed: %s: %s", type(e).__name__, e)
            ready.put(batch)

    if len(batches) > 1:
        context = contextvars.copy_context()  # the compile's memo, as the caller sees it
        threading.Thread(target=context.run, args=(compile_ahead,), daemon=True, name="dnnc-compile-ahead").start()
    else:
        compile_ahead()
    for _ in batches:
        yield from ready.get()


def _precompile(programs: Iterable[Any], device: torch.device) -> None:
    """Every kernel of ``programs``, compiled side by side where its backend can."""
    from dnnc.runtime.kernel_backends import precompile

    precompile([op for program in programs for op in program.entry.body.block.ops], device)


def identity(c: Candidate, params: Any) -> tuple[str, str, str]:
    """Backend, kind and name-free text: equal for the repeated blocks of a model
    (computed once per group and compile, ``memo``)."""
    return memo.current().identity(c, params)


def _lowering_problem(c: Candidate, params: Any, report: PricingReport) -> str | None:
    text = identity(c, params)[2]
    refused = known_refusal(c, text)
    if refused is not None:
        return refused
    if not known_to_lower(c, text):
        try:
            memo.current().lowered(c, params)
        except DnncError as e:
            return str(e)
        remember_lowers(c, text)
    report.lowered += 1
    return None


def _time(c: Candidate, program: Any, device: torch.device, report: PricingReport) -> float | str:
    try:
        assert c.identity is not None, "identity() names every candidate of a round"
        ms = time_alone(c, program, device, c.identity[2])
    except NotBuilt as e:
        return str(e)
    except Exception as e:  # a candidate that breaks while timing is not a choice
        log.info("partition: timing %s failed: %s: %s", c.label, type(e).__name__, e)
        return f"{type(e).__name__} while timing"
    report.measured += 1
    return ms


def recost(candidates: Sequence[Candidate], report: PricingReport) -> None:
    report.calibration = calibrate(candidates)
    for c in candidates:
        own = c.measured_ms if c.measured_ms is not None else c.estimated_ms * _factor(report.calibration, c)
        c.cost_ms = own + c.layout_ms


def calibration_key(c: Candidate) -> str:
    """Backend and kind, 1x1 convolutions apart from spatial ones: a GEMM over pixels
    and an implicit GEMM with a window run at other fractions of their estimates
    (ResNet-50 at batch 128 on an H200: Triton's 3x3 and 7x7 convolutions at 1.9x
    theirs priced a stage-4 1x1 one with its residual at 0.109 ms, so it was never timed;
    with TMA tiles it runs in 0.037)."""
    kind = c.kind.split("_")[0]
    if kind.startswith("conv") and any(is_pixelwise_conv(op) for op in c.ops):
        kind += ":1x1"
    return f"{c.backend}:{kind}"


def calibrate(candidates: Sequence[Candidate]) -> dict[str, float]:
    """Median measured/estimated ratio per backend and kind (and per backend)."""
    ratios: dict[str, list[float]] = {}
    for c in candidates:
        if c.measured_ms is not None and c.estimated_ms > 0:
            r = c.measured_ms / c.estimated_ms
            ratios.setdefault(calibration_key(c), []).append(r)
            ratios.setdefault(c.backend, []).append(r)
    return {k: statistics.median(v) for k, v in ratios.items()}


def _factor(calibration: dict[str, float], c: Candidate) -> float:
    """The measured/estimated ratio of the candidate's own backend and kind. A kind not
    measured yet takes its backend's ratio only where that is below 1: a ratio learned
    on pools and reductions says nothing of how a product runs, and pricing a kind above
    its estimate before any of it ran kept it out of every cover, so it was never timed
    (Triton's 1x1 convolutions of ResNet-50 at batch 128: estimated 0.18 ms, priced 0.42
    by the pools' ratio, against cuDNN's 0.25; they run in 0.14)."""
    own = calibration.get(calibration_key(c))
    if own:
        return own
    return min(1.0, calibration.get(c.backend) or 1.0)


def should_measure() -> bool:
    return knobs.get().measure and torch.cuda.is_available()
