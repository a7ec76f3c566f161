"""The base every tcp op shares: result types come from operands and attributes.

Each op class implements ``infer(operand_types, props)`` once; that one function is
used both to build an op (``Op.make(...)`` computes the result types) and to
verify it (the declared result types must equal the inferred ones), so the two can
never disagree.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Mapping, Sequence
from typing import Self

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import IRDLOperation, ParsePropInAttrDict
from xdsl.utils.exceptions import VerifyException

from dnnc.ir.types import describe, element_name


class TcpOp(IRDLOperation, ABC):
    irdl_options = (ParsePropInAttrDict(),)

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType] | None:
        """Result types for these operand types and properties; None where the IR states them."""
        return None

    @classmethod
    def make(cls, operands: Sequence[SSAValue | Sequence[SSAValue]], props: Mapping[str, Attribute] | None = None) -> Self:
        props = dict(props or {})
        flat = [v for o in operands for v in (o if isinstance(o, (list, tuple)) else [o])]
        result_types = cls.infer([tensor(v.type, cls.name) for v in flat], props)
        assert result_types is not None, f"{cls.name} states its result type; construct it directly"
        return cls(operands=list(operands), properties=props, result_types=list(result_types))

    def verify_(self) -> None:
        flat = [tensor(o.type, self.name) for o in self.operands]
        expected = self.infer(flat, self.properties)
        if expected is None:
            return
        actual = [r.type for r in self.results]
        if list(expected) != actual:
            shown = ", ".join(describe(t) for t in actual)
            want = ", ".join(describe(t) for t in expected)
            raise VerifyException(f"{self.name}: result type {shown} does not match {want} implied by its operands")


def tensor(t: Attribute, op: str) -> TensorType:
    if not isinstance(t, TensorType):
        raise VerifyException(f"{op}: expected tensor operands, got {t}")
    return t


def fail(op: str, message: str) -> VerifyException:
    return VerifyException(f"{op}: {message}")


def check_elements(op: str, t: TensorType, allowed: Sequence[Attribute], what: str = "operand") -> None:
    if t.element_type not in allowed:
        names = ", ".join(element_name(a) for a in allowed)
        raise fail(op, f"{what} element type {element_name(t.element_type)} is not one of {names}")


def check_same(op: str, types: Sequence[TensorType]) -> None:
    if any(t != types[0] for t in types[1:]):
        raise fail(
            op, "operands must have one type (broadcast and cast explicitly), got " + ", ".join(describe(t) for t in types)
        )


def check_axis(op: str, axis: int, rank: int, what: str = "axis") -> None:
    if not 0 <= axis < rank:
        raise fail(op, f"{what} {axis} is out of range for rank {rank} (tcp axes are non-negative)")


def check_axes(op: str, axes: Sequence[int], rank: int) -> None:
    for a in axes:
        check_axis(op, a, rank)
    if list(axes) != sorted(set(axes)):
        raise fail(op, f"axes {list(axes)} must be sorted and unique")


def check_len(op: str, name: str, values: Sequence[int], n: int) -> None:
    if len(values) != n:
        raise fail(op, f"{name} needs {n} values, got {len(values)}")
