"""The fill kernels' PTX assembles for Hopper (with the ptxas Triton ships, where it is
installed): the text is checked on every machine, not only where a GPU loads it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from dnnc import graph_memsets


def _ptxas() -> Path | None:
    try:
        import triton
    except ImportError:
        return None
    path = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"
    return path if path.is_file() else None


def test_the_fill_kernels_assemble_for_hopper(tmp_path: Path) -> None:
    ptxas = _ptxas()
    if ptxas is None:
        pytest.skip("no ptxas (Triton's NVIDIA backend) on this machine")
    source = tmp_path / "fill.ptx"
    source.write_text(graph_memsets.FILL_PTX)
    done = subprocess.run([ptxas, "-arch=sm_90", str(source), "-o", str(tmp_path / "fill.cubin")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for kind in ("u8", "u16", "u32"):
        assert f".entry dnnc_fill_{kind}(" in graph_memsets.FILL_PTX


def test_memsets_too_large_or_of_no_width_stay() -> None:
    class Memset:
        dst, pitch, value, height = 0x1000, 0, 0, 1

        def __init__(self, size: int, width: int) -> None:
            self.elementSize, self.width = size, width

    assert graph_memsets._kernel_params(0, Memset(4, 0)) is None
    assert graph_memsets._kernel_params(0, Memset(4, graph_memsets.MAX_FILL_BYTES // 4 + 1)) is None
    assert graph_memsets._kernel_params(0, Memset(8, 16)) is None
