"""Reductions over a sorted set of axes, optionally keeping them as size 1."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, TensorType, i1
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import Pure

from dnnc.ir.attrs import ints, scalar
from dnnc.ir.tcp.base import TcpOp, check_axes, check_elements, fail
from dnnc.ir.tcp.elementwise import NUMERIC
from dnnc.ir.types import FLOAT_TYPES


class ReduceOp(TcpOp):
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = NUMERIC
    input = operand_def(TensorType)
    axes = prop_def(DenseArrayBase)
    keepdim = prop_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType]:
        (x,) = operand_types
        check_elements(cls.name, x, cls.ELEMENTS)
        shape = x.get_shape()
        axes = ints(props["axes"])
        if not axes:
            raise fail(cls.name, "needs at least one axis")
        check_axes(cls.name, axes, len(shape))
        keep = bool(scalar(props["keepdim"]))
        out = [1 if i in axes else n for i, n in enumerate(shape)] if keep else [n for i, n in enumerate(shape) if i not in axes]
        return [TensorType(x.element_type, out)]


@irdl_op_definition
class ReduceSumOp(ReduceOp):
    """Sum over ``axes`` (accumulated in at least float32 for floats)."""

    name = "tcp.reduce_sum"


@irdl_op_definition
class ReduceMaxOp(ReduceOp):
    """Maximum over ``axes``; on i1 it is "any"."""

    name = "tcp.reduce_max"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = (*NUMERIC, i1)


@irdl_op_definition
class ReduceMeanOp(ReduceOp):
    """Arithmetic mean over ``axes`` (float types)."""

    name = "tcp.reduce_mean"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = FLOAT_TYPES


REDUCTION_OPS = (ReduceSumOp, ReduceMaxOp, ReduceMeanOp)
