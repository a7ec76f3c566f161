"""``bench/stem_tma_probe.py``'s TMA-fed stem against float64 on fresh random inputs
(Triton's interpreter where there is no GPU): ResNet's 7x7/2 and a 3x3/2 stem, output
maps smaller than a tile (columns and rows zero-filled on the way in, clipped on the way
out), one tile a program and persistent programs walking several tiles; and both kernels
built for sm_90 with TMA loads and wgmma products. A box one output row tall goes to wgmma
from shared memory as TMA left it; a taller one (8 x 16 pixels) is reshaped on its way,
which Triton does through registers (``ldmatrix``, A from registers)."""

from __future__ import annotations

import pytest

from bench.stem_tma_probe import probe
from tests.bench.sm90_build import built_for_sm90


@pytest.mark.parametrize("name", ["tiny", "tiny-3x3"])
def test_every_config_matches_the_reference(name: str) -> None:
    configs = [(1, 128, 4, 3, 0, 5), (8, 16, 4, 3, 0, 5), (2, 64, 4, 4, 2, 5), (1, 64, 4, 3, 2, 4)]  # persistent: 8 programs
    row = probe(name, device="cpu", configs=configs)
    assert len(row["tma"]) == len(configs)
    for tag, entry in row["tma"].items():
        assert entry["rel_error"] <= 1e-5, (tag, entry)


@pytest.mark.parametrize(
    ("kernel", "bh", "bw", "view"),
    [
        ("stem_tiles", 1, 128, 0),
        ("stem_tiles", 8, 16, 0),
        ("stem_persistent", 1, 128, 0),
        ("stem_persistent", 2, 64, 0),
        ("stem_tiles", 1, 128, 2),
    ],
)
def test_the_kernel_rows_go_to_wgmma_from_tma_for_sm90(kernel: str, bh: int, bw: int, view: int) -> None:
    """``view``: the rank-4 view's stride (one-row tiles), 0 for the rank-5 view."""
    values = {
        "ad": f"tensordesc<fp16[1, 1, {bw}, 32]>" if view else f"tensordesc<fp16[1, {bh}, 1, {bw}, 32]>",
        "wd": "tensordesc<fp16[64, 32]>",
        "b_ptr": "*fp16",
        "yd": f"tensordesc<fp16[1, {bh}, {bw}, 64]>",
        "N": "i32",
        "OH": "i32",
        "OW": "i32",
        **dict(R=7, KS=32, CO=64, BH=bh, BW=bw, PROGRAMS=264, ROWS_VIEW=view),
    }
    if kernel == "stem_tiles":
        del values["N"], values["PROGRAMS"]
    built = built_for_sm90("bench.stem_tma_probe", kernel, values, warps=4, stages=3)
    assert built["wgmma"] and built["tma"]
    assert (built["shared_loads"] == 0) == (bh == 1)
