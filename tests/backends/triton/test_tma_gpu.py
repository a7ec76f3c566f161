"""TMA product kernels in a built program on a Hopper GPU: a residual 1x1 convolution
between channels-last neighbours (as ResNet's sit between cuDNN convolutions) gets
descriptor tiles, computes what the reference computes across calls (CUDA-graph replays
of the same buffers on new inputs), and an artifact stores it and loads it back with its
descriptors, still matching."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
import torch

import dnnc
from dnnc import knobs
from dnnc.backends.reference.interpreter import ReferenceExecutor
from dnnc.compiled import CompiledModule
from dnnc.ir.params import ParamStore
from dnnc.ir.program import Program
from dnnc.ir.text import parse_ir
from dnnc.passes.stages import TRITON_ALONE_STAGE
from dnnc.pipeline import run_passes
from dnnc.report import CompileReport
from tests.numerics import assert_matches

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


def _tma_kernels(module) -> list:
    return [s.kernel for s in module._executor.steps if getattr(getattr(s.kernel, "source", None), "descriptors", ())]


def test_a_residual_convolution_runs_tma_tiles_and_its_artifact_keeps_them(tmp_path: Path, rng: torch.Generator) -> None:
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("needs a GPU with TMA (sm_90 or later)")
    from dnnc.runtime.gpu_executor import GpuExecutor

    program = _program(rng)
    reference = ReferenceExecutor(program)
    with knobs.override(autotune=False):  # the first config: TMA tiles on Hopper
        compiled = CompiledModule(program, CompileReport(), "cuda", executor=GpuExecutor(program, "cuda"))
    kernels = _tma_kernels(compiled)
    assert len(kernels) == 1 and kernels[0].config.get("TMA") == 1
    shapes = [(8, 14, 14, 64), (8, 14, 14, 256)]
    for _ in range(3):  # the captured program replayed on new inputs
        inputs = [torch.randn(s, generator=rng).half() for s in shapes]
        want = reference.run(inputs)[0]
        assert_matches(compiled(*[x.cuda() for x in inputs]).cpu(), want, torch.float16)
    path = compiled.save(tmp_path / "residual.dnnc")
    records = json.loads(zipfile.ZipFile(path).read(f"kernels/{compiled.target}/triton.json"))
    assert [r["config"].get("TMA") for r in records] == [1]
    assert sum("tensordesc" in t for t in records[0]["signature"].values()) == 4
    loaded = dnnc.load(path)
    assert _tma_kernels(loaded)
    assert_matches(loaded(*[x.cuda() for x in inputs]).cpu(), want, torch.float16)
