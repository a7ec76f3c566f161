"""A split-K product in a built program on a GPU: ResNet-50's stage-4 3x3 convolution at
batch 1 (8 output tiles, K = 4608) with its bias and ReLU, on a channels-last input and
its weight stored OHWI, runs its first config, the most-split one, computes what the
reference computes across CUDA-graph replays on new inputs (each launch leaves its
scratch as it found it), and an artifact stores the config and the OHWI weight and loads
them back, still matching."""

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

STAGE_4 = """func.func @forward(%x: tensor<1x512x7x7xf16>) -> tensor<1x512x7x7xf16> {
  %w = tcp.param @w : tensor<512x512x3x3xf16>
  %b = tcp.param @b : tensor<1x512x1x1xf16>
  %c = tcp.conv2d %x, %w {dnnc.part = 0 : i64, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x512x7x7xf16>, tensor<512x512x3x3xf16>) -> tensor<1x512x7x7xf16>
  %bb = tcp.broadcast %b {dnnc.part = 0 : i64} : tensor<1x512x1x1xf16> to tensor<1x512x7x7xf16>
  %a = tcp.add %c, %bb {dnnc.part = 0 : i64} : tensor<1x512x7x7xf16>
  %r = tcp.clamp %a {dnnc.part = 0 : i64, min = 0.0 : f64} : tensor<1x512x7x7xf16>
  func.return %r : tensor<1x512x7x7xf16>
}"""
"""As the partitioner extracts it: ``TRITON_ALONE_STAGE`` gives it channels-last edges, as
between cuDNN convolutions, and the weight is stored OHWI (``triton-conv-weights``) for
the kernel."""


def _program(rng: torch.Generator) -> Program:
    params = ParamStore()
    params.add("w", (torch.randn(512, 512, 3, 3, generator=rng) / 48).half())
    params.add("b", torch.randn(1, 512, 1, 1, generator=rng).half())
    program = Program(parse_ir(STAGE_4, "stage_4"), params)
    run_passes(program, TRITON_ALONE_STAGE)
    return program


def _split_kernels(module) -> list:
    return [s.kernel for s in module._executor.steps if getattr(s.kernel, "scratch", ())]


def test_a_batch_one_convolution_runs_split_and_its_artifact_keeps_the_split(tmp_path: Path, rng: torch.Generator) -> None:
    from dnnc.runtime.gpu_executor import GpuExecutor

    program = _program(rng)
    reference = ReferenceExecutor(program)
    with knobs.override(autotune=False):  # the first config: the most-split one
        compiled = CompiledModule(program, CompileReport(), "cuda", executor=GpuExecutor(program, "cuda"))
    kernels = _split_kernels(compiled)
    assert len(kernels) == 1 and kernels[0].config.get("SPLIT_K") == 8
    assert any(name.endswith(".ohwi") for name in program.params)
    shape = tuple(program.input_types[0].get_shape())
    for _ in range(3):  # the captured program replayed on new inputs
        inputs = [torch.randn(shape, generator=rng).half()]
        want = reference.run(inputs)[0]
        got = compiled(*[x.cuda() for x in inputs]).cpu()
        assert_matches(got, want, torch.float16)
        assert not kernels[0].scratch[1].any()
    path = compiled.save(tmp_path / "stage_4.dnnc")
    records = json.loads(zipfile.ZipFile(path).read(f"kernels/{compiled.target}/triton.json"))
    assert [r["config"].get("SPLIT_K") for r in records] == [8]
    loaded = dnnc.load(path)
    assert _split_kernels(loaded)
    assert torch.equal(loaded(*[x.cuda() for x in inputs]).cpu(), got), "the same kernel adds the same partials in the same order"
