"""What a zoo or family model must show on the GPU: in float16, exported from CUDA
tensors and compiled with the default settings, nothing runs as a stopgap torch op,
no backend falls back, and the result is held to what PyTorch achieves against
float64: at most twice the error of eager float16, or of the network with its
BatchNorms folded into the convolutions' float16 weights if that is larger, or the
float16 tolerance if that is larger still.

Folding a BatchNorm into the convolution before it (as inference compilers do,
torch.compile's freezing included) rounds the scaled weights to float16 once more.
In a deep network without residual rescaling that rounding alone can reach the
float16 tolerance (timm ``seresnext26d_32x4d``: 1.95e-3 in float64), so it is
measured, with PyTorch's own folding, and counted like eager's error."""

from __future__ import annotations

import copy

import torch

import dnnc
from dnnc.numerics import GPU_TOLERANCE, relative_error


def _half(inputs: tuple[torch.Tensor, ...], device: str) -> tuple[torch.Tensor, ...]:
    return tuple((x.half() if x.is_floating_point() else x).to(device) for x in inputs)


def _truth(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """The fp16 model's weights in float64 on the CPU: what fp16 results are measured against."""
    wide = copy.deepcopy(model).to("cpu", torch.float64)
    with torch.no_grad():
        return wide(*[x.cpu().double() if x.is_floating_point() else x.cpu() for x in inputs])


def _folding_error(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...], truth: torch.Tensor) -> float:
    """The error of the fp16 model with each Conv2d + BatchNorm2d pair folded (by
    ``torch.fx``, in float32) and the folded weights rounded to float16, run in
    float64: what folding costs before any kernel rounds. 0 where the model does not
    trace or has nothing to fold."""
    from torch.fx.experimental.optimization import fuse

    try:
        folded = fuse(copy.deepcopy(model).to("cpu", torch.float32)).half().double()
    except Exception:  # models torch.fx cannot trace (Hugging Face control flow) fold nothing here
        return 0.0
    with torch.no_grad():
        out = folded(*[x.cpu().double() if x.is_floating_point() else x.cpu() for x in inputs])
    return relative_error(out, truth)


def check_fp16_on_gpu(name: str, model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> None:
    model = model.to("cuda", torch.float16).eval()
    on_gpu = _half(inputs, "cuda")
    with torch.no_grad():
        eager = model(*on_gpu).float().cpu()
    expected = _truth(model, on_gpu)
    compiled = dnnc.compile(model, on_gpu, device="cuda")
    got = compiled(*on_gpu).float().cpu()
    summary = compiled.summary()  # type: ignore[union-attr]
    assert not summary["torch_ops"], f"{name}: ops left to the torch stopgap: {summary['torch_ops']}"
    assert not summary["fallbacks"], f"{name}: fallbacks: {summary['fallbacks']}"
    err, eager_err = relative_error(got, expected), relative_error(eager, expected)
    folding_err = _folding_error(model, on_gpu, expected)
    bound = max(2 * eager_err, 2 * folding_err, GPU_TOLERANCE[torch.float16])
    assert err <= bound, (
        f"{name}: relative error {err:.2e} vs float64; eager fp16 has {eager_err:.2e}, "
        f"BatchNorm folded into fp16 weights {folding_err:.2e} (bound {bound:.2e})"
    )
