"""The zoo on the GPU: every model in float16, exported from CUDA tensors, compiled
with the default settings; nothing may run as a stopgap torch op and no backend may
fall back, and the result is held to what PyTorch eager in float16 achieves against
float64 (at most twice eager's error, or the float16 tolerance if that is larger)."""

from __future__ import annotations

import copy

import pytest
import torch

import dnnc
from dnnc.numerics import GPU_TOLERANCE, relative_error
from tests.zoo.cases import ZooCase, params

pytestmark = pytest.mark.gpu


def _half(inputs: tuple[torch.Tensor, ...], device: str) -> tuple[torch.Tensor, ...]:
    return tuple((x.half() if x.is_floating_point() else x).to(device) for x in inputs)


def _truth(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """The fp16 model's weights in float64 on the CPU: what fp16 results are measured against."""
    wide = copy.deepcopy(model).to("cpu", torch.float64)
    with torch.no_grad():
        return wide(*[x.cpu().double() if x.is_floating_point() else x.cpu() for x in inputs])


@pytest.mark.parametrize("case", params("gpu"))
def test_zoo_model_fp16_on_gpu(case: ZooCase) -> None:
    model, inputs = case.build(case.gpu)
    model = model.to("cuda", torch.float16).eval()
    on_gpu = _half(inputs, "cuda")
    with torch.no_grad():
        eager = model(*on_gpu).float().cpu()
    expected = _truth(model, on_gpu)
    compiled = dnnc.compile(model, on_gpu, device="cuda")
    got = compiled(*on_gpu).float().cpu()
    summary = compiled._executor.summary()  # type: ignore[union-attr]
    assert not summary["torch_ops"], f"{case.name}: ops left to the torch stopgap: {summary['torch_ops']}"
    assert not summary["fallbacks"], f"{case.name}: fallbacks: {summary['fallbacks']}"
    err, eager_err = relative_error(got, expected), relative_error(eager, expected)
    bound = max(2 * eager_err, GPU_TOLERANCE[torch.float16])
    assert err <= bound, f"{case.name}: relative error {err:.2e} vs float64; eager fp16 has {eager_err:.2e} (bound {bound:.2e})"


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
    summary = compiled._executor.summary()  # type: ignore[union-attr]
    assert not summary["torch_ops"] and not summary["fallbacks"], summary
    assert relative_error(got, expected) <= GPU_TOLERANCE[torch.float32]
