"""The inputs a compiled program accepts, and the check every call goes through
before any work is launched."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from dnnc.errors import InputError


@dataclass(frozen=True)
class TensorSpec:
    shape: tuple[int, ...]
    dtype: torch.dtype

    def describe(self) -> str:
        return f"{list(self.shape)} {str(self.dtype).removeprefix('torch.')}"


def check_inputs(specs: Sequence[TensorSpec], args: Sequence[object], device: torch.device | str | None = None) -> None:
    """Raise an InputError naming the first argument that does not fit."""
    if len(args) != len(specs):
        raise InputError(f"expected {len(specs)} input(s) ({', '.join(s.describe() for s in specs)}), got {len(args)}")
    for i, (spec, arg) in enumerate(zip(specs, args)):
        if not isinstance(arg, torch.Tensor):
            raise InputError(f"input {i}: expected a tensor of {spec.describe()}, got {type(arg).__name__}")
        if tuple(arg.shape) != spec.shape:
            raise InputError(
                f"input {i}: expected shape {list(spec.shape)}, got {list(arg.shape)} (compiled for {spec.describe()})"
            )
        if arg.dtype != spec.dtype:
            raise InputError(f"input {i}: expected dtype {spec.dtype}, got {arg.dtype} (compiled for {spec.describe()})")
        if device is not None and arg.device.type != torch.device(device).type:
            raise InputError(f"input {i}: expected a tensor on {torch.device(device).type}, got one on {arg.device}")
