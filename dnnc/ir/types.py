"""Element types and tensor types shared by every dialect, and their torch twins.

dnnc's tensors are ranked with static shapes. The element types are the ones
inference graphs need: f32, f16, bf16 for data, i64/i32 for indices, i1 for masks.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

import torch
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    IntegerType,
    TensorType,
    bf16,
    f16,
    f32,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, SSAValue

ElementType = Float32Type | Float16Type | BFloat16Type | IntegerType

_TORCH_TO_ELEMENT: dict[torch.dtype, Attribute] = {
    torch.float32: f32,
    torch.float16: f16,
    torch.bfloat16: bf16,
    torch.int64: i64,
    torch.int32: i32,
    torch.bool: i1,
}
_ELEMENT_TO_TORCH = {v: k for k, v in _TORCH_TO_ELEMENT.items()}
_NAMES = {f32: "f32", f16: "f16", bf16: "bf16", i64: "i64", i32: "i32", i1: "i1"}
_BY_NAME = {v: k for k, v in _NAMES.items()}

FLOAT_TYPES = (f32, f16, bf16)
INDEX_TYPES = (i64, i32)
SUPPORTED_ELEMENT_TYPES = tuple(_NAMES)


class UnsupportedDtypeError(TypeError):
    """A tensor has an element type dnnc does not handle."""


def element_type(dtype: torch.dtype) -> Attribute:
    try:
        return _TORCH_TO_ELEMENT[dtype]
    except KeyError:
        supported = ", ".join(str(d).removeprefix("torch.") for d in _TORCH_TO_ELEMENT)
        raise UnsupportedDtypeError(f"dtype {dtype} is not supported (supported: {supported})") from None


def torch_dtype(element: Attribute) -> torch.dtype:
    try:
        return _ELEMENT_TO_TORCH[element]
    except KeyError:
        raise UnsupportedDtypeError(f"element type {element} has no torch equivalent in dnnc") from None


def element_name(element: Attribute) -> str:
    """The short name used in input specs and messages: f32, f16, bf16, i64, i32, i1."""
    return _NAMES.get(element, str(element))


def element_from_name(name: str) -> Attribute:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise UnsupportedDtypeError(f"unknown element type {name!r} (expected one of {', '.join(_BY_NAME)})") from None


def is_float(element: Attribute) -> bool:
    return element in FLOAT_TYPES


def is_integer(element: Attribute) -> bool:
    return element in INDEX_TYPES


def tensor_type(shape: Sequence[int], element: Attribute | torch.dtype) -> TensorType:
    if isinstance(element, torch.dtype):
        element = element_type(element)
    return TensorType(element, [int(d) for d in shape])


def as_tensor_type(value: SSAValue | Attribute) -> TensorType:
    t = value.type if isinstance(value, SSAValue) else value
    if not isinstance(t, TensorType):
        raise TypeError(f"expected a tensor type, got {t}")
    return t


def shape_of(value: SSAValue | Attribute) -> tuple[int, ...]:
    return tuple(as_tensor_type(value).get_shape())


def element_of(value: SSAValue | Attribute) -> Attribute:
    return as_tensor_type(value).element_type


def numel(value: SSAValue | Attribute | Sequence[int]) -> int:
    shape = value if isinstance(value, (tuple, list)) else shape_of(value)
    return prod(shape)


def describe(t: Attribute) -> str:
    """`1x3x224x224xf32` style text for messages and input specs."""
    tt = as_tensor_type(t)
    return "x".join([*(str(d) for d in tt.get_shape()), element_name(tt.element_type)])
