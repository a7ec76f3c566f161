"""Programmatic Dependent Launch on a GPU (Hopper and later): models whose Triton kernels
follow one another and follow cuDNN convolutions and matrix products, compiled with the
default (a Triton kernel after another, or of one wave after a cuDNN matrix product,
launched with PDL, waiting at its first line) compute what float64 computes across
CUDA-graph replays on new inputs, as closely as without PDL; a residual read two kernels
later than it was written is where a missing wait would show.
An artifact saved with PDL loads under ``DNNC_PDL=0`` with its kernels launched plainly."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

import dnnc
from dnnc import knobs
from dnnc.backends.triton.configs import AFTER_LIBRARY, AFTER_TRITON, LAUNCH_EARLY_ATTR, ONE_WAVE_FOLLOWER_PROGRAMS
from dnnc.models import FACTORIES
from dnnc.numerics import relative_error
from tests.runtime.test_gpu_models import assert_as_close_as_eager

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _hopper() -> None:
    if torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("Programmatic Dependent Launch needs sm_90 or later")


def _triton_configs(compiled) -> list[dict[str, int]]:
    return [k.config for k in compiled.kernels().values() if getattr(k, "backend", None) == "triton"]


def _launched_with_pdl(compiled) -> list[tuple[str | None, bool, int]]:
    """(its ``launch_order`` mark, launched with PDL, programs) of each Triton step, in
    launch order."""
    steps = [s for s in compiled._executor.steps if s.backend == "triton"]
    marks = [s.op.attributes.get(LAUNCH_EARLY_ATTR) for s in steps]
    return [
        (None if m is None else m.data, s.kernel.config.get("PDL") == 1, math.prod(s.kernel.grid))
        for m, s in zip(marks, steps, strict=True)
    ]


def _as_marked(mark: str | None, pdl: bool, programs: int) -> bool:
    if mark == AFTER_LIBRARY:
        return pdl == (programs <= ONE_WAVE_FOLLOWER_PROGRAMS)
    return pdl == (mark == AFTER_TRITON)


@pytest.mark.parametrize(
    ("name", "size", "chained"),
    [("bert_layer", {"batch": 2}, True), ("conv_block", {"batch": 2}, False), ("mobilenet_v2", {}, True)],
)
def test_models_launched_with_pdl_compute_what_they_compute_without(
    name: str, size: dict, chained: bool, rng: torch.Generator
) -> None:
    """``chained``: some Triton kernel of the model follows another Triton kernel (none
    does in the conv block, whose program on an H200 launched none with PDL)."""
    model, inputs = FACTORIES[name](**size)
    model = model.eval().half()
    cast = [x.half() if x.is_floating_point() else x for x in inputs]
    on_gpu = [x.cuda() for x in cast]
    compiled = {}
    for pdl in (True, False):
        with knobs.override(pdl=pdl):
            compiled[pdl] = dnnc.compile(model.cuda(), on_gpu, device="cuda")
    launched = _launched_with_pdl(compiled[True])
    assert any(pdl for _, pdl, _ in launched) is chained, "a Triton kernel after another is launched with PDL by default"
    assert all(_as_marked(*step) for step in launched), launched
    assert not any("PDL" in c for c in _triton_configs(compiled[False]))
    for _ in range(3):  # replays of the captured program on new inputs
        fresh = [torch.randn(x.shape, generator=rng).half() if x.is_floating_point() else x for x in cast]
        gpu = [x.cuda() for x in fresh]
        with torch.no_grad():
            eager = model.cuda()(*gpu).cpu()
            expected = model.to("cpu", torch.float64)(*[x.double() if x.is_floating_point() else x for x in fresh])
            model.to("cuda", torch.float16)
        with_pdl, without = compiled[True](*gpu).cpu(), compiled[False](*gpu).cpu()
        assert_as_close_as_eager(with_pdl, eager, expected, torch.float16)
        assert relative_error(with_pdl, expected) <= 2 * max(relative_error(without, expected), 1e-3)


def test_an_artifact_with_pdl_loads_without_it_where_the_setting_is_off(tmp_path: Path) -> None:
    model, inputs = FACTORIES["bert_layer"](batch=2)
    model = model.eval().half().cuda()
    on_gpu = [x.half().cuda() if x.is_floating_point() else x.cuda() for x in inputs]
    compiled = dnnc.compile(model, on_gpu, device="cuda")
    want = compiled(*on_gpu).cpu()
    path = compiled.save(tmp_path / "bert.dnnc")
    with knobs.override(pdl=False):
        loaded = dnnc.load(path)
        got = loaded(*on_gpu).cpu()
    assert not any("PDL" in c for c in _triton_configs(loaded))
    assert relative_error(got, want) < 1e-2
    again = dnnc.load(path)
    assert _launched_with_pdl(again) == _launched_with_pdl(compiled), "loaded as recorded where PDL runs"
    assert torch.equal(again(*on_gpu).cpu(), want)
