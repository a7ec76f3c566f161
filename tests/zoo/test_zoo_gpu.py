"""The zoo on the GPU: every model at its real depth and width held to
``check_on_gpu``, and models exported from CPU tensors run on the GPU."""

from __future__ import annotations

import pytest
import torch

import dnnc
from dnnc.numerics import GPU_TOLERANCE, relative_error
from tests.zoo.cases import ZooCase, params
from tests.zoo.gpu_check import check_on_gpu

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("case", params("gpu"))
def test_zoo_model_fp16_on_gpu(case: ZooCase) -> None:
    model, inputs = case.build(case.gpu)
    check_on_gpu(case.name, model, inputs)


@pytest.mark.parametrize("case", [c for c in params("gpu") if c.id in ("vit_small_patch16_224", "llama")])
def test_zoo_model_exported_on_cpu_runs_on_gpu(case: ZooCase) -> None:
    """A model exported from CPU tensors (export picks other ATen ops than on CUDA)
    compiles for the GPU, in float32."""
    model, inputs = case.build(case.cpu)
    exported = torch.export.export(model, inputs)
    compiled = dnnc.compile(exported, inputs, device="cuda")
    got = compiled(*[x.cuda() for x in inputs]).cpu()
    with torch.no_grad():
        expected = model(*inputs)
    summary = compiled.summary()  # type: ignore[union-attr]
    assert not summary["torch_ops"] and not summary["fallbacks"], summary
    assert relative_error(got, expected) <= GPU_TOLERANCE[torch.float32]
