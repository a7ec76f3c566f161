"""Small constructors and readers for the attributes tcp ops carry."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    BoolAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    f64,
    i1,
    i64,
)
from xdsl.ir import Attribute


def i64_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def ints(attr: Attribute) -> tuple[int, ...]:
    assert isinstance(attr, DenseArrayBase)
    return tuple(int(v) for v in attr.get_values())


def int_attr(value: int) -> IntegerAttr:
    return IntegerAttr(int(value), i64)


def float_attr(value: float) -> FloatAttr:
    return FloatAttr(float(value), f64)


def bool_attr(value: bool) -> IntegerAttr:
    return IntegerAttr(int(bool(value)), i1)


def str_attr(value: str) -> StringAttr:
    return StringAttr(value)


def scalar(attr: Attribute) -> float | int | bool:
    """The Python value of an integer, float or bool attribute."""
    if isinstance(attr, FloatAttr):
        return float(attr.value.data)
    if isinstance(attr, IntegerAttr):
        if attr.type == i1:
            return bool(attr.value.data)
        return int(attr.value.data)
    raise TypeError(f"expected a scalar attribute, got {attr}")


__all__ = ["BoolAttr", "bool_attr", "float_attr", "i64_array", "int_attr", "ints", "scalar", "str_attr"]
