"""The GPU executor hands ``triton`` groups to the Triton backend: checked on the
CPU through Triton's interpreter (on a GPU the same dispatch runs compiled
kernels; the GPU tests cover that)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from dnnc.backends.reference import ReferenceExecutor
from dnnc.pipeline import lower_for_gpu, to_canonical_tcp
from dnnc.runtime.gpu_executor import GpuExecutor
from tests.numerics import assert_matches


@pytest.mark.skipif(torch.cuda.is_available(), reason="interpreter run; on a GPU the GPU tests cover this")
def test_executor_runs_triton_groups(rng: torch.Generator) -> None:
    model = nn.Sequential(nn.LayerNorm(24), nn.GELU(), nn.Softmax(-1)).eval()
    x = torch.randn(3, 5, 24, generator=rng)
    program = to_canonical_tcp(model, (x,))
    expected = ReferenceExecutor(program).run([x])
    lower_for_gpu(program, backends=["triton"])
    executor = GpuExecutor(program, "cpu")
    (got,) = executor.run([x])
    summary = executor.summary()
    assert summary["steps"].get("triton", 0) >= 1 and not summary["torch_ops"] and not summary["fallbacks"], summary
    assert_matches(got, expected[0], torch.float32)


@pytest.mark.skipif(torch.cuda.is_available(), reason="interpreter run; on a GPU the GPU tests cover this")
def test_a_compile_time_executor_compiles_all_triton_groups_ahead_in_one_batch(
    rng: torch.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One batch for the whole program, so the compile workers take every group's
    configs side by side instead of one group's at a time; an artifact's load and an
    executor whose caller compiled ahead do not ask."""
    from dnnc.backends.triton import launch
    from dnnc.backends.triton.marking import is_triton_group

    batches: list[list[object]] = []
    monkeypatch.setattr(launch, "precompile_groups", lambda groups, device: batches.append(list(groups)) or 0)
    model = nn.Sequential(nn.Linear(24, 24), nn.LayerNorm(24), nn.GELU(), nn.Linear(24, 8), nn.Softmax(-1)).eval()
    program = to_canonical_tcp(model, (torch.randn(3, 24, generator=rng),))
    lower_for_gpu(program, backends=["triton"])
    groups = [op for op in program.entry.body.block.ops if is_triton_group(op)]
    assert len(groups) >= 2
    GpuExecutor(program, "cpu")
    assert batches == [groups]
    GpuExecutor(program, "cpu", precompile=False)
    assert len(batches) == 1
