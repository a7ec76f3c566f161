"""A library's definite refusal of a candidate group (cuDNN with no engine for a
depthwise convolution's graph) is learned once, by the GPU build that times
the candidate, and a later compile drops the group while pricing, before it is built
again; none of it is said as a warning. On the CPU: the GPU build is stood in for by
an executor that refuses every cuDNN group holding a grouped convolution, the way
cuDNN does on a GPU, and times the rest by their estimates."""

from __future__ import annotations

import logging
from typing import Any, ClassVar

import pytest
import torch
from torch import nn

from dnnc import knobs
from dnnc.ir import tcp
from dnnc.ir.attrs import scalar
from dnnc.partition import measure, partitioner, pricing
from dnnc.partition.candidates import Candidate
from dnnc.pipeline import to_canonical_tcp
from dnnc.runtime.gpu_executor import Fallback

NO_ENGINE = "cudnnGraphNotSupportedError: No valid engine configs for ConvFwd"


class DepthwiseBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.expand = nn.Conv2d(8, 16, 1)
        self.depthwise = nn.Conv2d(16, 16, 3, padding=1, groups=16, bias=False)
        self.project = nn.Conv2d(16, 8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.project(self.depthwise(torch.relu(self.expand(x)))) + x


class RefusingExecutor:
    """What ``GpuExecutor`` finds for a group cuDNN has no engine for."""

    built: ClassVar[list[str]] = []

    def __init__(self, program: Any, device: Any, precompile: bool = True, give_back: bool = True) -> None:
        RefusingExecutor.built.append(str(program.module))
        self.fallbacks = [Fallback("conv", "cudnn", NO_ENGINE, runs_as="triton", settled=True)]


def _grouped(c: Candidate) -> bool:
    return any(isinstance(op, tcp.Conv2dOp) and scalar(op.groups) > 1 for op in c.ops)


@pytest.fixture
def gpu_stood_in(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    real_time_alone = measure.time_alone

    def time_alone(c: Candidate, program: Any, device: Any, text: str) -> float:
        if c.backend == "cudnn" and _grouped(c):
            return real_time_alone(c, program, device, text)
        return c.estimated_ms

    RefusingExecutor.built = []
    monkeypatch.setattr("dnnc.runtime.gpu_executor.GpuExecutor", RefusingExecutor)
    monkeypatch.setattr(measure, "_here", lambda: {"dnnc": "test", "gpu": "a GPU", "cc": "9.0"})
    monkeypatch.setattr(partitioner, "should_measure", lambda: True)
    monkeypatch.setattr(pricing, "time_alone", time_alone)
    monkeypatch.setattr(pricing, "_precompile", lambda programs, device: None)
    monkeypatch.setattr(pricing, "cached_ms", lambda c, text: None)
    monkeypatch.setattr(
        partitioner.Partition, "whole_program_check", lambda self, whole, priced, decision, prefixes: (decision, None)
    )
    with knobs.override(cache_dir=tmp_path):
        yield


def _decide() -> dict[str, Any]:
    model = DepthwiseBlock().eval()
    program = to_canonical_tcp(model, (torch.randn(1, 8, 16, 16),))
    outcome = partitioner.Partition(policy="auto", backends=("cudnn", "triton")).partition_block(
        program.entry.body.block, program.params, program
    )
    assert outcome is not None
    return outcome.record


def test_a_refusal_is_learned_once_and_priced_out_after(
    gpu_stood_in: None, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.INFO, logger="dnnc")
    first = _decide()
    refused_first = [d for d in first["totals"]["dropped"] if "no kernel for it here" in d]
    assert RefusingExecutor.built and refused_first, first["totals"]["dropped"]

    built = len(RefusingExecutor.built)
    second = _decide()
    assert len(RefusingExecutor.built) == built, "a refused group was built again"
    refused_second = [d for d in second["totals"]["dropped"] if NO_ENGINE in d]
    assert sorted(refused_second) == sorted(refused_first)
    assert [g["backend"] for g in second["groups"]] == [g["backend"] for g in first["groups"]]

    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_a_refusal_holds_only_for_the_gpu_and_versions_it_was_given_on(
    gpu_stood_in: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _decide()
    built = len(RefusingExecutor.built)
    monkeypatch.setattr(measure, "_here", lambda: {"dnnc": "test", "gpu": "another GPU", "cc": "10.0"})
    _decide()
    assert len(RefusingExecutor.built) > built  # asked again on the other GPU


def test_a_failure_that_is_not_the_library_s_answer_is_not_remembered(
    gpu_stood_in: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    class FailingExecutor(RefusingExecutor):
        def __init__(self, program: Any, device: Any, precompile: bool = True, give_back: bool = True) -> None:
            super().__init__(program, device, precompile)
            self.fallbacks = [Fallback("conv_bias_relu", "cudnn", "no execution plan of this graph built and ran")]

    monkeypatch.setattr("dnnc.runtime.gpu_executor.GpuExecutor", FailingExecutor)
    _decide()
    built = len(RefusingExecutor.built)
    assert built
    _decide()
    assert len(RefusingExecutor.built) == 2 * built  # tried again: a failure is not a fact
