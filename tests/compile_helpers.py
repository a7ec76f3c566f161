"""Compile a module or function through the real pipeline and run it on the
reference backend, the way every numerical test does."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

from dnnc.backends.reference import ReferenceExecutor
from dnnc.ir.program import Program
from dnnc.pipeline import to_canonical_tcp


class Fn(nn.Module):
    """Wraps a function so it can be exported like a model."""

    def __init__(self, fn: Callable[..., Any]):
        super().__init__()
        self.fn = fn

    def forward(self, *args: Any) -> Any:
        return self.fn(*args)


def as_module(f: nn.Module | Callable[..., Any]) -> nn.Module:
    return (f if isinstance(f, nn.Module) else Fn(f)).eval()


def compile_program(f: nn.Module | Callable[..., Any], inputs: Sequence[torch.Tensor]) -> Program:
    return to_canonical_tcp(as_module(f), tuple(inputs))


def run_reference(program: Program, inputs: Sequence[torch.Tensor], precision: str = "float32") -> list[torch.Tensor]:
    return ReferenceExecutor(program, precision).run(list(inputs))


def eager_exact(f: nn.Module | Callable[..., Any], inputs: Sequence[torch.Tensor]) -> Any:
    """The model in float64 on float64 copies of the inputs: the ground truth that
    low-precision results are compared against."""
    module = copy.deepcopy(as_module(f)).double()
    wide = [x.double() if x.is_floating_point() else x for x in inputs]
    with torch.no_grad():
        return module(*wide)


def eager(f: nn.Module | Callable[..., Any], inputs: Sequence[torch.Tensor]) -> Any:
    with torch.no_grad():
        return as_module(f)(*inputs)


def flat(out: Any) -> list[torch.Tensor]:
    return [out] if isinstance(out, torch.Tensor) else [t for t in out]
