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
