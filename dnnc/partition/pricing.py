"""Give every candidate a cost: the roofline estimate, a lowering check, and on a
GPU a measured time; what is not measured is estimated and corrected by how far
off the estimate was for the measured candidates of the same backend and kind.

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


def price(candidates: Sequence[Candidate], params: Any, peaks: GpuPeaks, measure: bool) -> tuple[list[Candidate], PricingReport]:
    """The candidates that survive (cuDNN ones that lower, measured ones that ran),
    each with ``estimated_ms``, ``measured_ms`` where timed, and ``cost_ms``."""
    started = time.perf_counter()
    report = PricingReport()
    device = torch.device("cuda") if measure else None
    seen: dict[tuple[str, str, str], float | str | None] = {}
    kept = []
    for c in candidates:
        c.estimated_ms = estimate_ms(work_of(c.ops), c.backend, c.kind, peaks)
        if c.fixed or c.backend in ("view", "torch") or (c.backend == "triton" and not (measure and c.fusion)):
            kept.append(c)
            continue
        key = (c.backend, c.kind, identity_text(extract(c.ops, params)))
        if key not in seen:
            report.unique += 1
            seen[key] = _lower_and_time(c, params, device, report)
        outcome = seen[key]
        if isinstance(outcome, str):
            report.dropped.append(f"{c.label} ({outcome})")
            continue
        c.measured_ms = outcome
        kept.append(c)
    report.calibration = calibrate(kept)
    for c in kept:
        own = c.measured_ms if c.measured_ms is not None else c.estimated_ms * _factor(report.calibration, c)
        c.layout_ms = layout_conversion_ms(c.ops, c.backend, peaks)
        c.cost_ms = own + c.layout_ms
    report.seconds = time.perf_counter() - started
    return kept, report


def _lower_and_time(c: Candidate, params: Any, device: torch.device | None, report: PricingReport) -> float | str | None:
    """Measured ms, None (not measured), or why the candidate cannot run."""
    try:
        program = lower_alone(c, params)
    except DnncError as e:
        return str(e)
    report.lowered += 1
    if device is None:
        return None
    try:
        ms = time_alone(c, program, device)
    except Exception as e:  # a candidate that breaks while timing is not a choice
        log.info("partition: timing %s failed: %s: %s", c.label, type(e).__name__, e)
        return f"{type(e).__name__} while timing"
    if ms is None:
        return "its backend fell back when built alone"
    report.measured += 1
    return ms


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
