"""Ops along one axis that are neither elementwise nor a plain reduction: running
sums (``tcp.cumsum``), positions of extremes (``tcp.argmax`` / ``tcp.argmin``) and
the k largest or smallest elements (``tcp.topk``, which also sorts).

NaN ranks above every number here, as in PyTorch: ``argmax`` and ``argmin`` both
give the first NaN, ``topk`` with ``largest`` takes NaNs first and without it last.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import IntegerAttr, TensorType, i64
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import Pure

from dnnc.ir.attrs import scalar
from dnnc.ir.tcp.base import TcpOp, check_axis, check_elements, fail
from dnnc.ir.tcp.elementwise import NUMERIC
from dnnc.ir.types import describe


@irdl_op_definition
class CumsumOp(TcpOp):
    """Inclusive running sum along ``axis``: ``result[.., i, ..] = sum(input[.., :i+1, ..])``,
    in the input's type (floats accumulate in at least float32)."""

    name = "tcp.cumsum"
    input = operand_def(TensorType)
    axis = prop_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType]:
        (x,) = operand_types
        check_elements(cls.name, x, NUMERIC)
        check_axis(cls.name, scalar(props["axis"]), len(x.get_shape()))
        return [x]


class _ArgExtremeOp(TcpOp):
    """The index (i64) of the first extreme element along ``axis``; the axis is dropped
    unless ``keepdim`` (then it has size 1)."""

    LARGEST: ClassVar[bool] = True
    input = operand_def(TensorType)
    axis = prop_def(IntegerAttr)
    keepdim = prop_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType]:
        (x,) = operand_types
        check_elements(cls.name, x, NUMERIC)
        shape = list(x.get_shape())
        axis = scalar(props["axis"])
        check_axis(cls.name, axis, len(shape))
        if shape[axis] == 0:
            raise fail(cls.name, f"the axis {axis} of {describe(x)} is empty")
        if scalar(props["keepdim"]):
            shape[axis] = 1
        else:
            del shape[axis]
        return [TensorType(i64, shape)]


@irdl_op_definition
class ArgmaxOp(_ArgExtremeOp):
    """The index of the first largest element (the first NaN if any)."""

    name = "tcp.argmax"


@irdl_op_definition
class ArgminOp(_ArgExtremeOp):
    """The index of the first smallest element (the first NaN if any)."""

    name = "tcp.argmin"
    LARGEST: ClassVar[bool] = False


@irdl_op_definition
class TopkOp(TcpOp):
    """The ``k`` largest (``largest``) or smallest elements along ``axis`` and their
    indices (i64), best first; ties in the order of their indices. NaN ranks above
    every number. With ``k`` the axis' size it is a stable sort (descending with
    ``largest``)."""

    name = "tcp.topk"
    input = operand_def(TensorType)
    k = prop_def(IntegerAttr)
    axis = prop_def(IntegerAttr)
    largest = prop_def(IntegerAttr)
    values = result_def(TensorType)
    indices = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($values) `,` type($indices)"

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType]:
        (x,) = operand_types
        check_elements(cls.name, x, NUMERIC)
        shape = list(x.get_shape())
        axis, k = scalar(props["axis"]), scalar(props["k"])
        check_axis(cls.name, axis, len(shape))
        if not 0 <= k <= shape[axis]:
            raise fail(cls.name, f"k = {k} is out of range for axis {axis} of {describe(x)}")
        shape[axis] = k
        return [TensorType(x.element_type, shape), TensorType(i64, shape)]


SELECTION_OPS = (CumsumOp, ArgmaxOp, ArgminOp, TopkOp)
