"""TMA product kernels in a built program on a Hopper GPU: a residual 1x1 convolution
between channels-last neighbours (as ResNet's sit between cuDNN convolutions) gets
descriptor tiles, computes what the reference computes across calls (CUDA-graph replays
of the same buffers on new inputs), and an artifact stores it and loads it back with its
descriptors, still matching."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from dnnc.ir.params import ParamStore
from dnnc.ir.program import Program
from dnnc.ir.text import parse_ir
from dnnc.passes.stages import TRITON_ALONE_STAGE
from dnnc.pipeline import run_passes
from tests.backends.triton.helpers import replayed_saved_and_loaded

pytestmark = pytest.mark.gpu

RESIDUAL = """func.func @forward(%x: tensor<8x64x14x14xf16>, %r: tensor<8x256x14x14xf16>) -> tensor<8x256x14x14xf16> {
  %w = tcp.param @w : tensor<256x64x1x1xf16>
  %b = tcp.param @b : tensor<1x256x1x1xf16>
  %c = tcp.conv2d %x, %w {dnnc.part = 0 : i64, stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<8x64x14x14xf16>, tensor<256x64x1x1xf16>) -> tensor<8x256x14x14xf16>
  %bb = tcp.broadcast %b {dnnc.part = 0 : i64} : tensor<1x256x1x1xf16> to tensor<8x256x14x14xf16>
  %a = tcp.add %c, %bb {dnnc.part = 0 : i64} : tensor<8x256x14x14xf16>
  %s = tcp.add %a, %r {dnnc.part = 0 : i64} : tensor<8x256x14x14xf16>
  %y = tcp.clamp %s {dnnc.part = 0 : i64, min = 0.0 : f64} : tensor<8x256x14x14xf16>
  func.return %y : tensor<8x256x14x14xf16>
}"""


def _program(rng: torch.Generator) -> Program:
    params = ParamStore()
    params.add("w", (torch.randn(256, 64, 1, 1, generator=rng) / 8).half())
    params.add("b", torch.randn(1, 256, 1, 1, generator=rng).half())
    program = Program(parse_ir(RESIDUAL, "residual"), params)
    run_passes(program, TRITON_ALONE_STAGE)  # channels-last edges, as between cuDNN convolutions
    return program


def test_a_residual_convolution_runs_tma_tiles_and_its_artifact_keeps_them(tmp_path: Path, rng: torch.Generator) -> None:
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("needs a GPU with TMA (sm_90 or later)")
    shapes = [(8, 14, 14, 64), (8, 14, 14, 256)]
    # the first config: TMA tiles on Hopper
    records = replayed_saved_and_loaded(_program(rng), shapes, "TMA", rng, tmp_path / "residual.dnnc")
    assert [r["config"].get("TMA") for r in records] == [1]
    assert sum("tensordesc" in t for t in records[0]["signature"].values()) == 4
