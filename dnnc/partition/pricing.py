"""Give every candidate a cost: the roofline estimate and a lowering check for all,
and on a GPU a measured time for the ones that matter; what is not measured is
estimated and corrected by how far off the estimate was for the measured
candidates of the same backend and kind.

Timing every candidate would take minutes (each is compiled first), so the
partitioner measures in rounds: the groups of the currently cheapest covers
(auto, cudnn-only, triton-only) are timed, costs are re-calibrated, and the
covers are solved again until they use no unmeasured group. Candidates are timed
as they would run, tuned when ``knobs.autotune`` is on: an untuned cuDNN plan can
be far slower than the tuned one (ResNet-50 at batch 32 on an H100 went to Triton
convolutions that way and ran 11% slower than cudnn-only); the tuned plans are
cached, so the final build does not tune them again.
Identical groups (the repeated blocks of a ResNet) are lowered and timed once.
"""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from dnnc import knobs
from dnnc.errors import DnncError
from dnnc.partition.candidates import Candidate
from dnnc.partition.cost import GpuPeaks, estimate_ms, layout_conversion_ms, work_of
from dnnc.partition.extract import extract, identity_text
from dnnc.partition.measure import lower_alone, time_alone

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
    """Estimate every candidate and lower each distinct cuDNN one alone; the ones
    that do not lower are dropped. Costs are the estimates until ``measure``."""
    started = time.perf_counter()
    report = PricingReport()
    lowered: dict[tuple[str, str, str], str | None] = {}
    kept = []
    for c in candidates:
        c.estimated_ms = estimate_ms(work_of(c.ops), c.backend, c.kind, peaks)
        c.layout_ms = layout_conversion_ms(c.ops, c.backend, peaks)
        if c.backend == "cudnn" and not c.fixed:
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
on-disk cache keeps successes across compiles; failures are retried next compile)."""


def measure(
    chosen: Sequence[Candidate], candidates: Sequence[Candidate], params: Any, report: PricingReport, times: Times
) -> list[Candidate]:
    """Time the not yet measured candidates among ``chosen`` on the GPU (identical
    groups once, through ``times``), then re-cost everything by the new calibration.
    Returns the candidates that remain usable (one that fails to build or run is dropped)."""
    started = time.perf_counter()
    device = torch.device("cuda")
    failed: set[int] = set()
    # timed as they will run (tuned when knobs.autotune is on); the tuned plans are cached for the build
    for c in chosen:
        if c.measured_ms is not None or c.fixed or c.backend not in ("cudnn", "triton"):
            continue
        key = identity(c, params)
        if key not in times:
            times[key] = _time(c, params, device, report)
        outcome = times[key]
        if isinstance(outcome, str):
            report.dropped.append(f"{c.label} ({outcome})")
            failed.add(id(c))
        else:
            c.measured_ms = outcome
    kept = [c for c in candidates if id(c) not in failed]
    recost(kept, report)
    report.seconds += time.perf_counter() - started
    return kept


def identity(c: Candidate, params: Any) -> tuple[str, str, str]:
    """Backend, kind and name-free text: equal for the repeated blocks of a model
    (computed once per candidate)."""
    if c.identity is None:
        c.identity = (c.backend, c.kind, identity_text(extract(c.ops, params)))
    return c.identity


def _lowering_problem(c: Candidate, params: Any, report: PricingReport) -> str | None:
    try:
        lower_alone(c, params)
    except DnncError as e:
        return str(e)
    report.lowered += 1
    return None


def _time(c: Candidate, params: Any, device: torch.device, report: PricingReport) -> float | str:
    try:
        ms = time_alone(c, lower_alone(c, params), device)
    except Exception as e:  # a candidate that breaks while timing is not a choice
        log.info("partition: timing %s failed: %s: %s", c.label, type(e).__name__, e)
        return f"{type(e).__name__} while timing"
    if ms is None:
        return "its backend fell back when built alone"
    report.measured += 1
    return ms


def recost(candidates: Sequence[Candidate], report: PricingReport) -> None:
    report.calibration = calibrate(candidates)
    for c in candidates:
        own = c.measured_ms if c.measured_ms is not None else c.estimated_ms * _factor(report.calibration, c)
        c.cost_ms = own + c.layout_ms


def calibration_key(c: Candidate) -> str:
    return f"{c.backend}:{c.kind.split('_')[0]}"


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
    return calibration.get(calibration_key(c)) or calibration.get(c.backend) or 1.0


def should_measure() -> bool:
    return knobs.get().measure and torch.cuda.is_available()
