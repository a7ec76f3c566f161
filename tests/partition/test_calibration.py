"""How an unmeasured candidate is priced from the ones measured (``pricing.recost``)."""

from __future__ import annotations

import pytest

from dnnc.partition.candidates import Candidate, Role
from dnnc.partition.pricing import PricingReport, recost


def _candidate(kind: str, index: int, estimated: float, measured: float | None = None) -> Candidate:
    c = Candidate("triton", kind, (), frozenset({index}), Role.GENERATOR, estimated_ms=estimated)
    c.measured_ms = measured
    return c


def test_a_kind_takes_its_own_ratio() -> None:
    pool = _candidate("pool", 0, 0.1, measured=0.2)
    conv = _candidate("conv2d", 1, 0.1, measured=0.15)
    other = _candidate("conv2d", 2, 0.2)
    recost([pool, conv, other], PricingReport())
    assert other.cost_ms == pytest.approx(0.2 * 1.5)


def test_a_kind_never_measured_is_not_priced_up_by_another_kinds_ratio() -> None:
    """Pools running at twice their estimate say nothing of a product: it is priced at its
    estimate, so a cover can take it and it gets timed."""
    pool = _candidate("pool", 0, 0.1, measured=0.2)
    conv = _candidate("conv2d", 1, 0.18)
    recost([pool, conv], PricingReport())
    assert conv.cost_ms == pytest.approx(0.18)


def test_a_kind_never_measured_takes_a_backend_ratio_below_one() -> None:
    pool = _candidate("pool", 0, 0.1, measured=0.05)
    conv = _candidate("conv2d", 1, 0.2)
    recost([pool, conv], PricingReport())
    assert conv.cost_ms == pytest.approx(0.2 * 0.5)
