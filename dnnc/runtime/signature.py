"""The inputs a compiled program accepts, and the check every call goes through
before any work is launched."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from xdsl.dialects.builtin import TensorType

from dnnc.errors import InputError
from dnnc.ir.types import element_of, shape_of, torch_dtype


@dataclass(frozen=True)
class TensorSpec:
    shape: tuple[int, ...]
    dtype: torch.dtype

    def describe(self) -> str:
        return f"{list(self.shape)} {str(self.dtype).removeprefix('torch.')}"


def specs_of(types: Sequence[TensorType]) -> list[TensorSpec]:
    """The specs of a program's input or output types."""
    return [TensorSpec(shape_of(t), torch_dtype(element_of(t))) for t in types]


def as_tensors(args: Sequence[Any]) -> list[Any]:
    """Torch tensors as given; other arrays that speak DLPack (``__dlpack__``: NumPy,
    CuPy, JAX ...) as zero-copy torch views; anything else is left for ``check_inputs``."""
    converted = []
    for i, arg in enumerate(args):
        if not isinstance(arg, torch.Tensor) and hasattr(arg, "__dlpack__"):
            try:
                arg = torch.from_dlpack(arg)
            except Exception as e:  # each array library raises its own error types
                raise InputError(f"input {i}: {type(arg).__name__} could not be taken through DLPack: {e}") from None
        converted.append(arg)
    return converted


def placement(inputs: Sequence[torch.Tensor]) -> tuple:
    """What a kernel reading these very tensors depends on: each one's address, shape,
    strides, dtype and device (``get_device``: the GPU's index, -1 on the CPU). Two calls
    with the same placement pass the same tensors, or tensors living where they lived,
    so the second needs no ``check_inputs`` and reads what a graph captured on the first
    reads."""
    return tuple([(t.data_ptr(), t.shape, t.stride(), t.dtype, t.get_device()) for t in inputs])


def check_inputs(specs: Sequence[TensorSpec], args: Sequence[object], device: torch.device | str | None = None) -> None:
    """Raise an InputError naming the first argument that does not fit. Every call with
    inputs at a placement not checked last goes through this, so the common case (all
    fit) costs a few comparisons."""
    if len(args) != len(specs):
        raise InputError(f"expected {len(specs)} input(s) ({', '.join(s.describe() for s in specs)}), got {len(args)}")
    want = None if device is None else torch.device(device)
    for i, (spec, arg) in enumerate(zip(specs, args)):
        if not isinstance(arg, torch.Tensor):
            raise InputError(f"input {i}: expected a tensor of {spec.describe()}, got {type(arg).__name__}")
        if arg.shape != spec.shape:
            raise InputError(
                f"input {i}: expected shape {list(spec.shape)}, got {list(arg.shape)} (compiled for {spec.describe()})"
            )
        if arg.dtype != spec.dtype:
            raise InputError(f"input {i}: expected dtype {spec.dtype}, got {arg.dtype} (compiled for {spec.describe()})")
        if want is not None and arg.device != want and (want.index is not None or arg.device.type != want.type):
            raise InputError(f"input {i}: expected a tensor on {want}, got one on {arg.device}")
