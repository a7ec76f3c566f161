"""What a zoo or family model must show on the GPU: in float16 (bfloat16 where its code
keeps float16 from exporting), exported from CUDA tensors and compiled with the
default settings, nothing runs as a stopgap torch op,
no backend falls back, and the result is held to what PyTorch achieves against
float64: at most twice the error of eager in that dtype, or of the network with its
BatchNorms folded into the convolutions' weights in that dtype if that is larger, or
the dtype's tolerance if that is larger still.

Folding a BatchNorm into the convolution before it (as inference compilers do,
torch.compile's freezing included) rounds the scaled weights to the model's dtype once more.
In a deep network that rounding alone can reach the float16 tolerance and beyond
(timm ``seresnext26d_32x4d``: 1.95e-3 in float64, ``inception_v3`` 1.39e-2,
``mobilenetv2_100`` 1.56e-2), so it is measured, for every BatchNorm whose input is
a convolution (timm's BatchNormAct2d included), and counted like eager's error."""

from __future__ import annotations

import copy

import torch

import dnnc
from dnnc.numerics import GPU_TOLERANCE, relative_error


def _cast(inputs: tuple[torch.Tensor, ...], dtype: torch.dtype, device: str) -> tuple[torch.Tensor, ...]:
    return tuple((x.to(dtype) if x.is_floating_point() else x).to(device) for x in inputs)


def _truth(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """The model's weights in float64 on the CPU: what its results are measured against."""
    wide = copy.deepcopy(model).to("cpu", torch.float64)
    with torch.no_grad():
        return wide(*[x.cpu().double() if x.is_floating_point() else x.cpu() for x in inputs])


class _LeafNorms(torch.fx.Tracer):
    """Traces BatchNorm modules (timm's BatchNormAct2d included) as calls, so each
    one's input can be seen to be a convolution."""

    def is_leaf_module(self, m: torch.nn.Module, qualname: str) -> bool:
        return isinstance(m, torch.nn.modules.batchnorm._BatchNorm) or super().is_leaf_module(m, qualname)


def _conv_norm_pairs(model: torch.nn.Module) -> list[tuple[torch.nn.Conv2d, torch.nn.modules.batchnorm._BatchNorm]]:
    """Each BatchNorm whose only input is a Conv2d that feeds nothing else: what an
    inference compiler folds. Empty where torch.fx cannot trace the model (Hugging Face
    control flow)."""
    try:
        graph = _LeafNorms().trace(model)
    except Exception:
        return []
    modules = dict(model.named_modules())
    pairs = []
    for node in graph.nodes:
        norm = modules.get(node.target) if node.op == "call_module" else None
        if not isinstance(norm, torch.nn.modules.batchnorm._BatchNorm) or not node.args:
            continue
        source = node.args[0]
        conv = modules.get(source.target) if isinstance(source, torch.fx.Node) and source.op == "call_module" else None
        if isinstance(conv, torch.nn.Conv2d) and len(source.users) == 1:
            pairs.append((conv, norm))
    return pairs


def _folding_error(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...], truth: torch.Tensor, dtype: torch.dtype) -> float:
    """The error of the model with each BatchNorm folded into the Conv2d before it (in
    float32, the folded weights rounded to ``dtype``, the BatchNorm left as an identity
    so an activation it carries stays), run in float64: what folding costs before any
    kernel rounds. 0 where nothing folds."""
    folded = copy.deepcopy(model).to("cpu", torch.float32)
    pairs = _conv_norm_pairs(folded)
    if not pairs:
        return 0.0
    with torch.no_grad():
        for conv, norm in pairs:
            scale = norm.weight / torch.sqrt(norm.running_var + norm.eps)
            bias = conv.bias if conv.bias is not None else torch.zeros_like(norm.running_mean)
            conv.weight.copy_(conv.weight * scale.reshape(-1, 1, 1, 1))
            conv.bias = torch.nn.Parameter((bias - norm.running_mean) * scale + norm.bias)
            norm.weight.fill_(1.0)
            norm.bias.zero_()
            norm.running_mean.zero_()
            norm.running_var.fill_(1.0)
            norm.eps = 1e-30  # positive, as batch_norm requires; 1 + 1e-30 is 1 in float64
        folded = folded.to(dtype).double()
        out = folded(*[x.cpu().double() if x.is_floating_point() else x.cpu() for x in inputs])
    return relative_error(out, truth)


def check_on_gpu(name: str, model: torch.nn.Module, inputs: tuple[torch.Tensor, ...], dtype: torch.dtype = torch.float16) -> None:
    model = model.to("cuda", dtype).eval()
    on_gpu = _cast(inputs, dtype, "cuda")
    with torch.no_grad():
        eager = model(*on_gpu).float().cpu()
    expected = _truth(model, on_gpu)
    compiled = dnnc.compile(model, on_gpu, device="cuda")
    got = compiled(*on_gpu).float().cpu()
    summary = compiled.summary()  # type: ignore[union-attr]
    assert not summary["torch_ops"], f"{name}: ops left to the torch stopgap: {summary['torch_ops']}"
    assert not summary["fallbacks"], f"{name}: fallbacks: {summary['fallbacks']}"
    err, eager_err = relative_error(got, expected), relative_error(eager, expected)
    folding_err = _folding_error(model, on_gpu, expected, dtype)
    bound = max(2 * eager_err, 2 * folding_err, GPU_TOLERANCE[dtype])
    assert err <= bound, (
        f"{name}: relative error {err:.2e} vs float64; eager {dtype} has {eager_err:.2e}, "
        f"BatchNorm folded into {dtype} weights {folding_err:.2e} (bound {bound:.2e}); {_wrong_steps(compiled, on_gpu)}"
    )


def _wrong_steps(compiled: dnnc.CompiledModule, inputs: tuple[torch.Tensor, ...]) -> str:
    """The steps that compute something other than their ops on their own operands
    (``CompiledModule.check_steps``), for the message of a failed check."""
    wrong = [c.describe() for c in compiled.check_steps(*inputs) if not c.ok]
    return "steps judged alone: " + ("; ".join(wrong[:3]) if wrong else "every step within its tolerance")
