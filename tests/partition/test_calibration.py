"""How an unmeasured candidate is priced from the ones measured (``pricing.recost``)."""

from __future__ import annotations

import pytest

from dnnc.ir import tcp
from dnnc.ir.params import ParamStore
from dnnc.ir.program import Program
from dnnc.ir.text import parse_ir
from dnnc.partition.candidates import Candidate, Role
from dnnc.partition.pricing import PricingReport, calibration_key, recost


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


def test_pixelwise_convolutions_are_calibrated_apart_from_spatial_ones() -> None:
    """A 3x3 convolution at twice its estimate does not price a 1x1 one up: a GEMM over
    pixels runs at another fraction of its estimate than an implicit GEMM with a window."""
    program = Program(parse_ir(CONVS, "convs"), ParamStore())
    spatial_op, pixelwise_op = [op for op in program.entry.body.block.ops if isinstance(op, tcp.Conv2dOp)]
    spatial = Candidate("triton", "conv2d", (spatial_op,), frozenset({0}), Role.GENERATOR, estimated_ms=0.1)
    spatial.measured_ms = 0.2
    pixelwise = Candidate("triton", "conv2d", (pixelwise_op,), frozenset({1}), Role.GENERATOR, estimated_ms=0.1)
    assert (calibration_key(spatial), calibration_key(pixelwise)) == ("triton:conv2d", "triton:conv2d:1x1")
    recost([spatial, pixelwise], PricingReport())
    assert pixelwise.cost_ms == pytest.approx(0.1)


CONVS = """func.func @forward(%x: tensor<2x8x5x5xf16>, %w3: tensor<8x8x3x3xf16>, %w1: tensor<8x8x1x1xf16>) -> tensor<2x8x5x5xf16> {
  %a = tcp.conv2d %x, %w3 {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x8x5x5xf16>, tensor<8x8x3x3xf16>) -> tensor<2x8x5x5xf16>
  %b = tcp.conv2d %a, %w1 {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x8x5x5xf16>, tensor<8x8x1x1xf16>) -> tensor<2x8x5x5xf16>
  func.return %b : tensor<2x8x5x5xf16>
}"""
