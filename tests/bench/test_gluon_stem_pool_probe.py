"""``bench/gluon_stem_pool_probe.py``: its pooling scheme (strips of 16 stem columns, bands
of 8 rows walked down with the last row carried, maxes over views one pixel and one row
apart) is the 3x3/2 max pool, step for step on the CPU (Gluon has no interpreter; the probe
checks the kernel against float32 on the GPU before it times it), and the kernel builds for
sm_90 where this Triton builds it (3.6)."""

from __future__ import annotations

import pytest

from tests.bench.sm90_build import compiled_json

torch = pytest.importorskip("torch")
pytest.importorskip("triton.experimental.gluon.language.nvidia.hopper")

from bench.gluon_stem_pool_probe import pooled_by_bands  # noqa: E402


def test_the_bands_and_the_carried_row_pool_as_max_pool2d() -> None:
    gen = torch.Generator().manual_seed(0)
    stem = torch.randn(2, 4, 112, 112, generator=gen).relu()
    want = torch.nn.functional.max_pool2d(stem, 3, 2, 1).permute(0, 2, 3, 1)
    torch.testing.assert_close(pooled_by_bands(stem), want, rtol=0, atol=0)


def _builds_reinterpreted_views() -> bool:
    from triton.experimental.gluon import language as gl

    return hasattr(gl.shared_memory_descriptor, "_reinterpret")


BUILD = "import json; from bench.gluon_stem_pool_probe import compile_only; print(json.dumps(compile_only()))"


@pytest.mark.skipif(not _builds_reinterpreted_views(), reason="Triton 3.9 refuses a reinterpret past its view")
def test_the_kernel_builds_for_sm90_two_programs_an_sm() -> None:
    kernel = compiled_json(BUILD, timeout=900)["stem_pool"]
    assert kernel["built"], kernel.get("error")
    assert kernel["wgmma"] == 16 and kernel["setmaxnreg"] and not kernel["registers_spilled"]
    assert kernel["shared"] <= 227 * 1024 // 2 - 1024
