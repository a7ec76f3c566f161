"""The repository's models end to end on the GPU, under each backend policy:
cuDNN graphs plus Triton kernels (the default), Triton alone, cuDNN alone (the
rest as torch ops). Results against float64 CPU eager with the same rounded
weights. A whole network rounds at every layer, so its error is held to that of
PyTorch eager in the same dtype on the same GPU: at most twice eager's error, or
the per-op tolerance of ``dnnc.numerics.GPU_TOLERANCE`` when that is larger."""

from __future__ import annotations

import pytest
import torch

import dnnc
from dnnc import knobs
from dnnc.models import FACTORIES
from dnnc.numerics import GPU_TOLERANCE, relative_error

pytestmark = pytest.mark.gpu

SMALL = {
    "resnet50": {"batch": 2},
    "mobilenet_v2": {},
    "vit_block": {},
    "gpt2_block": {},
    "bert_layer": {"batch": 2},
    "conv_block": {"batch": 2},
}


def _run(name: str, backends: str, dtype: torch.dtype) -> tuple[dnnc.CompiledModule, torch.Tensor, torch.Tensor]:
    model, inputs = FACTORIES[name](**SMALL[name])
    model = model.eval().to(dtype)  # the weights as the compiled program holds them
    cast = [x.to(dtype) if x.is_floating_point() else x for x in inputs]
    on_gpu = [x.cuda() for x in cast]
    with torch.no_grad():
        eager = model.cuda()(*on_gpu).cpu()
        expected = model.to("cpu", torch.float64)(*[x.double() if x.is_floating_point() else x for x in cast])
    model = model.to("cuda", dtype)
    with knobs.override(gpu_backends=backends):
        compiled = dnnc.compile(model, on_gpu, device="cuda")
    out = compiled(*on_gpu)
    assert_as_close_as_eager(out, eager, expected, dtype)
    return compiled, out, expected


def assert_as_close_as_eager(out: torch.Tensor, eager: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype) -> None:
    err, eager_err = relative_error(out.cpu(), expected), relative_error(eager, expected)
    bound = max(2 * eager_err, GPU_TOLERANCE[dtype])
    assert err <= bound, f"relative error {err:.2e} vs float64; eager {dtype} has {eager_err:.2e} (bound {bound:.2e})"


@pytest.mark.parametrize("backends", ["cudnn,triton", "triton", "cudnn"])
@pytest.mark.parametrize("name", list(SMALL))
def test_model_fp16(name: str, backends: str) -> None:
    compiled, _, _ = _run(name, backends, torch.float16)
    summary = compiled.summary()  # type: ignore[union-attr]
    assert not summary["fallbacks"], summary
    if "triton" in backends:
        assert not summary["torch_ops"], f"ops left to the torch stopgap: {summary['torch_ops']}"
    if backends == "triton":
        assert "cudnn" not in summary["steps"]
    kernels = compiled.kernels()  # type: ignore[union-attr]
    assert len(kernels) == sum(n for b, n in summary["steps"].items() if b not in ("torch", "view"))
    memory = summary["memory"]
    assert memory["arena_bytes"] > 0 and memory["weights_bytes"] > 0, memory
    assert memory["workspace_bytes"] >= 0 and ("cudnn" in summary["steps"] or memory["workspace_bytes"] == 0), memory
    assert all(hasattr(k, "launch") and hasattr(k, "record") for k in kernels.values())


@pytest.mark.parametrize("name", ["resnet50", "gpt2_block"])
def test_model_fp32(name: str) -> None:
    _run(name, "cudnn,triton", torch.float32)
