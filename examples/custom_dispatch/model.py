"""dnnc's custom-dispatch example: two CUDA kernels (kernels.cu) declared once,
called from PyTorch models, compiled by dnnc next to the code it generates.

    dnnc compile examples/custom_dispatch/model.py:mixed_invocation -o build/mixed.dnnc
    dnnc run build/mixed.dnnc --import examples/custom_dispatch/model.py --input=1024xf32=random --input=1024xf32=random

``simple_mul`` computes ``lhs * rhs`` into a new tensor. ``simple_mul_inplace``
updates ``rhs`` in place (a ``readwrite`` binding): to PyTorch and in dnnc's IR
it returns the updated tensor. Both are built from source for sm_80 and sm_90
(cubins plus PTX); the reference functions define what they compute, run them on
the CPU, and run them on a GPU that no object fits.
"""

from __future__ import annotations

import torch

import dnnc
from dnnc import Binding, PushConstant


def simple_mul_reference(lhs: torch.Tensor, rhs: torch.Tensor) -> torch.Tensor:
    return lhs * rhs


def simple_mul_inplace_reference(lhs: torch.Tensor, rhs: torch.Tensor) -> torch.Tensor:
    return rhs * lhs


ARCHS = ("sm_80", "sm_90")

simple_mul = dnnc.CustomKernel(
    "simple_mul",
    source="kernels.cu",
    archs=ARCHS,
    bindings=[
        Binding("lhs", "f32", ["n"], "read"),
        Binding("rhs", "f32", ["n"], "read"),
        Binding("out", "f32", ["n"], "write"),
    ],
    push_constants=[PushConstant("dim", "i32", "n")],
    block=[64],
    grid=["ceildiv(n, 64)"],
    reference=simple_mul_reference,
)

simple_mul_inplace = dnnc.CustomKernel(
    "simple_mul_inplace",
    source="kernels.cu",
    archs=ARCHS,
    bindings=[Binding("lhs", "f32", ["n"], "read"), Binding("rhs", "f32", ["n"], "readwrite")],
    push_constants=[PushConstant("dim", "i32", "n")],
    block=[64],
    grid=["ceildiv(n, 64)"],
    reference=simple_mul_inplace_reference,
)


class SimpleMul(torch.nn.Module):
    """The user kernel alone: ``lhs * rhs``."""

    def forward(self, lhs: torch.Tensor, rhs: torch.Tensor) -> torch.Tensor:
        return simple_mul(lhs, rhs)


class MixedInvocation(torch.nn.Module):
    """Generated code, then the in-place user kernel on its result, then generated
    code again: ``(tanh(a) * (b + 1)) * 2 + a``, the middle product by ``simple_mul_inplace``."""

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        scaled = simple_mul_inplace(torch.tanh(a), b + 1.0)
        return scaled * 2.0 + a


def _inputs(n: int, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(n, device=device), torch.randn(n, device=device)


def simple_mul_model(n: int = 1024, device: str = "cpu") -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    return SimpleMul(), _inputs(n, device)


def mixed_invocation(n: int = 1024, device: str = "cpu") -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    return MixedInvocation(), _inputs(n, device)


if __name__ == "__main__":
    where = "cuda" if torch.cuda.is_available() else "cpu"
    model, inputs = mixed_invocation(device=where)
    compiled = dnnc.compile(model, inputs)
    got, want = compiled(*inputs), model(*inputs)
    print(f"dnnc on {compiled.device}: max |error| against eager {float((got - want).abs().max()):.3g}")
    if compiled.device == "cuda":
        print("user kernels:", compiled._executor.summary()["user_kernels"])
