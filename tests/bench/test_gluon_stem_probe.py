"""``bench/gluon_stem_probe.py``: the arithmetic its kernels rely on, on the CPU (Gluon has
no interpreter; the probe checks each kernel's result against float32 on the GPU before it
times it), and the kernels built for sm_90 where this Triton builds them (3.6). The 7x7/2
stem on 2x2 cells is sixteen tap products, tap ``(ty, tx)`` reading cell ``(y + ty, x +
tx)`` for output ``(y, x)``, which is what each tile's copies hold."""

from __future__ import annotations

import pytest

from tests.bench.sm90_build import compiled_json

torch = pytest.importorskip("torch")
pytest.importorskip("triton.experimental.gluon.language.nvidia.hopper")

from bench.gluon_stem_probe import CELLS, COUT, OUT_SIDE, cells_of, weights_of  # noqa: E402


@pytest.mark.parametrize("seed", [0, 1])
def test_the_sixteen_cell_taps_are_the_stem(seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    image = torch.randn(2, 3, 224, 224, generator=gen, dtype=torch.float64)
    weight = torch.randn(COUT, 3, 7, 7, generator=gen, dtype=torch.float64)
    want = torch.nn.functional.conv2d(image, weight, stride=2, padding=3).permute(0, 2, 3, 1)

    cells = cells_of(image)
    assert cells.shape == (2, CELLS, CELLS, 16)
    taps = weights_of(weight).view(4, 4, COUT, 16)
    got = torch.zeros(2, OUT_SIDE, OUT_SIDE, COUT, dtype=torch.float64)
    for ty in range(4):
        for tx in range(4):
            window = cells[:, ty : ty + OUT_SIDE, tx : tx + OUT_SIDE, :]
            got += window @ taps[ty, tx].T
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-10)


def test_the_padding_weighs_nothing() -> None:
    weight = torch.ones(COUT, 3, 7, 7, dtype=torch.float64)
    taps = weights_of(weight).view(4, 4, COUT, 2, 2, 4)  # ty, tx, out, dy, dx, channel
    assert taps[..., 3].abs().sum() == 0  # the image's fourth channel
    assert taps[3, :, :, 1].abs().sum() == 0 and taps[:, 3, :, :, 1].abs().sum() == 0  # kernel row / column 7
    assert taps.sum() == COUT * 3 * 49


def _builds_reinterpreted_views() -> bool:
    from triton.experimental.gluon import language as gl

    return hasattr(gl.shared_memory_descriptor, "_reinterpret")


BUILD = "import json; from bench.gluon_stem_probe import compile_only; print(json.dumps(compile_only()))"


@pytest.mark.skipif(not _builds_reinterpreted_views(), reason="Triton 3.9 refuses a reinterpret past its view")
def test_the_kernels_build_for_sm90_with_wgmma() -> None:
    built = compiled_json(BUILD, timeout=900)
    assert {name.split("_")[0] for name in built} == {"cells", "image"}
    for name, kernel in built.items():
        assert kernel["built"], f"{name}: {kernel.get('error')}"
        assert kernel["wgmma"] == 16 and not kernel["registers_spilled"], name
        assert kernel["shared"] <= 227 * 1024, name
    assert all(k["setmaxnreg"] for name, k in built.items() if name.startswith("image"))
