"""``bench/gluon_conv3x3_probe.py``: the arithmetic its kernel relies on, on the CPU (Gluon
has no interpreter; the probe checks each kernel's result against float32 on the GPU
before it times it), and every config built for sm_90 by Triton's compiler. A stride-1
3x3 convolution is nine products of the input shifted by a tap, read as zeros past the
image (what a TMA box at those coordinates holds), by the OHWI weight's 64-channel
column blocks."""

from __future__ import annotations

import pytest

from tests.bench.sm90_build import compiled_json

torch = pytest.importorskip("torch")
pytest.importorskip("triton.experimental.gluon.language.nvidia.hopper")

from bench.gluon_conv3x3_probe import BK, CONFIGS, SHAPES, tile_count  # noqa: E402


def _box(x: torch.Tensor, n: int, y: int, x0: int, c0: int, bh: int, bw: int) -> torch.Tensor:
    """The [bh, bw, BK] box of NHWC ``x`` at (n, y, x0, c0), zeros where it lies past the tensor."""
    _, h, w, _ = x.shape
    box = torch.zeros(bh, bw, BK, dtype=x.dtype)
    for i in range(bh):
        for j in range(bw):
            if 0 <= y + i < h and 0 <= x0 + j < w:
                box[i, j] = x[n, y + i, x0 + j, c0 : c0 + BK]
    return box


@pytest.mark.parametrize("bh, bw", [(4, 8), (3, 16)])
def test_the_tap_boxes_by_the_weight_blocks_are_the_convolution(bh: int, bw: int) -> None:
    gen = torch.Generator().manual_seed(0)
    n, side, c, o = 2, 7, 128, 24
    x = torch.randn(n, side, side, c, generator=gen, dtype=torch.float64)
    weight = torch.randn(o, c, 3, 3, generator=gen, dtype=torch.float64)
    want = torch.nn.functional.conv2d(x.permute(0, 3, 1, 2), weight, padding=1).permute(0, 2, 3, 1)
    w_matrix = weight.permute(0, 2, 3, 1).reshape(o, 9 * c)
    got = torch.zeros(n, -(-side // bh) * bh, -(-side // bw) * bw, o, dtype=torch.float64)
    for img in range(n):
        for y0 in range(0, side, bh):
            for x0 in range(0, side, bw):
                acc = torch.zeros(bh * bw, o, dtype=torch.float64)
                for k in range(9 * c // BK):
                    tap, c0 = divmod(k, c // BK)
                    box = _box(x, img, y0 + tap // 3 - 1, x0 + tap % 3 - 1, c0 * BK, bh, bw)
                    acc += box.reshape(bh * bw, BK) @ w_matrix[:, tap * c + c0 * BK : tap * c + (c0 + 1) * BK].T
                got[img, y0 : y0 + bh, x0 : x0 + bw] = acc.reshape(bh, bw, o)
    torch.testing.assert_close(got[:, :side, :side], want, rtol=1e-10, atol=1e-10)


def test_tiles_cover_every_output() -> None:
    assert tile_count(32, 56, 64, (8, 16, 64, 4)) == 32 * 7 * 4
    assert tile_count(32, 14, 256, (8, 16, 128, 4)) == 32 * 2 * 1 * 2
    for shape, configs in CONFIGS.items():
        _, c, _ = SHAPES[shape]
        assert c % BK == 0
        for bh, bw, _, _ in configs:
            assert (bh * bw) % 64 == 0, (shape, bh, bw)  # wgmma's M a warpgroup


BUILD = "import json; from bench.gluon_conv3x3_probe import compile_only; print(json.dumps(compile_only()))"


def test_the_kernels_build_for_sm90_with_wgmma_and_4d_boxes() -> None:
    built = compiled_json(BUILD, timeout=900)
    assert len(built) == sum(len(c) for c in CONFIGS.values())
    for name, kernel in built.items():
        assert kernel["built"], f"{name}: {kernel.get('error')}"
        assert kernel["wgmma"] and "4d" in kernel["tma"] and kernel["setmaxnreg"], name
        assert not kernel["registers_spilled"] and kernel["shared"] <= 227 * 1024, name
