"""Elementwise ops. Operands of a binary op have one type: broadcasting and casts are
explicit ops (``tcp.broadcast``, ``tcp.cast``), so every elementwise op maps one
element to one element and fusing them needs no shape reasoning.

Float ops compute in at least float32 on every backend and round once to the
result type.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import FloatAttr, StringAttr, TensorType, i1
from xdsl.ir import Attribute
from xdsl.irdl import (
    VarConstraint,
    base,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure

from dnnc.ir.tcp.base import TcpOp, check_elements, check_same, fail
from dnnc.ir.types import FLOAT_TYPES, INDEX_TYPES, describe

NUMERIC = (*FLOAT_TYPES, *INDEX_TYPES)
BOOL = (i1,)


class UnaryOp(TcpOp):
    """``result[i] = f(input[i])``; the result has the input's type."""

    ELEMENTS: ClassVar[tuple[Attribute, ...]] = FLOAT_TYPES
    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($result)"

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType]:
        check_elements(cls.name, operand_types[0], cls.ELEMENTS)
        return [operand_types[0]]


@irdl_op_definition
class ExpOp(UnaryOp):
    """e to the power x."""

    name = "tcp.exp"


@irdl_op_definition
class LogOp(UnaryOp):
    """Natural logarithm (-inf at 0, NaN below)."""

    name = "tcp.log"


@irdl_op_definition
class TanhOp(UnaryOp):
    """Hyperbolic tangent."""

    name = "tcp.tanh"


@irdl_op_definition
class SigmoidOp(UnaryOp):
    """1 / (1 + exp(-x))."""

    name = "tcp.sigmoid"


@irdl_op_definition
class SiluOp(UnaryOp):
    """x * sigmoid(x) (also called swish)."""

    name = "tcp.silu"


@irdl_op_definition
class SqrtOp(UnaryOp):
    """Square root (NaN below zero)."""

    name = "tcp.sqrt"


@irdl_op_definition
class RsqrtOp(UnaryOp):
    """1 / sqrt(x)."""

    name = "tcp.rsqrt"


@irdl_op_definition
class ErfOp(UnaryOp):
    """The Gauss error function."""

    name = "tcp.erf"


@irdl_op_definition
class NegOp(UnaryOp):
    """-x."""

    name = "tcp.neg"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = NUMERIC


@irdl_op_definition
class AbsOp(UnaryOp):
    """|x|."""

    name = "tcp.abs"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = NUMERIC


@irdl_op_definition
class LogicalNotOp(UnaryOp):
    """Boolean negation of an i1 tensor."""

    name = "tcp.logical_not"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = BOOL


GELU_APPROXIMATIONS = ("none", "tanh")


@irdl_op_definition
class GeluOp(UnaryOp):
    """GELU: x * Phi(x) with the exact normal CDF (``approximate = "none"``) or
    PyTorch's tanh approximation (``approximate = "tanh"``)."""

    name = "tcp.gelu"
    approximate = prop_def(StringAttr)

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType]:
        mode = props["approximate"]
        if not isinstance(mode, StringAttr) or mode.data not in GELU_APPROXIMATIONS:
            raise fail(cls.name, f"approximate must be one of {GELU_APPROXIMATIONS}, got {mode}")
        return super().infer(operand_types, props)


@irdl_op_definition
class ClampOp(UnaryOp):
    """min(max(x, min), max); either bound may be absent. ReLU is ``clamp {min = 0.0}``.

    Bounds are stored as f64 and converted to the element type (truncated for
    integers) before comparing; NaN inputs stay NaN.
    """

    name = "tcp.clamp"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = NUMERIC
    min = opt_prop_def(FloatAttr)
    max = opt_prop_def(FloatAttr)

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType]:
        lo, hi = props.get("min"), props.get("max")
        if lo is None and hi is None:
            raise fail(cls.name, "needs a min or a max bound")
        if isinstance(lo, FloatAttr) and isinstance(hi, FloatAttr) and lo.value.data > hi.value.data:
            raise fail(cls.name, f"min {lo.value.data} is greater than max {hi.value.data}")
        return super().infer(operand_types, props)


@irdl_op_definition
class CastOp(TcpOp):
    """Element type conversion, as ``torch.Tensor.to``: float to integer truncates
    toward zero, anything to i1 is ``x != 0``, i1 to numbers gives 0 or 1, and a
    float result is rounded to the target type (round to nearest even)."""

    name = "tcp.cast"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `to` type($result)"

    def verify_(self) -> None:
        src, dst = self.input.type, self.result.type
        if src.get_shape() != dst.get_shape():
            raise fail(self.name, f"cannot change the shape ({describe(src)} to {describe(dst)})")


class BinaryOp(TcpOp):
    """``result[i] = f(lhs[i], rhs[i])``; both operands and the result have one type."""

    ELEMENTS: ClassVar[tuple[Attribute, ...]] = NUMERIC
    T: ClassVar = VarConstraint("T", base(TensorType))
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($result)"

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType]:
        check_same(cls.name, operand_types)
        check_elements(cls.name, operand_types[0], cls.ELEMENTS)
        return [operand_types[0]]


@irdl_op_definition
class AddOp(BinaryOp):
    """lhs + rhs."""

    name = "tcp.add"


@irdl_op_definition
class SubOp(BinaryOp):
    """lhs - rhs."""

    name = "tcp.sub"


@irdl_op_definition
class MulOp(BinaryOp):
    """lhs * rhs."""

    name = "tcp.mul"


@irdl_op_definition
class DivOp(BinaryOp):
    """lhs / rhs, IEEE division (float types only)."""

    name = "tcp.div"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = FLOAT_TYPES


@irdl_op_definition
class MaximumOp(BinaryOp):
    """The larger of lhs and rhs; NaN if either is NaN."""

    name = "tcp.maximum"


@irdl_op_definition
class MinimumOp(BinaryOp):
    """The smaller of lhs and rhs; NaN if either is NaN."""

    name = "tcp.minimum"


@irdl_op_definition
class PowOp(BinaryOp):
    """lhs raised to rhs (float types only)."""

    name = "tcp.pow"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = FLOAT_TYPES


@irdl_op_definition
class LogicalAndOp(BinaryOp):
    """Boolean and of two i1 tensors."""

    name = "tcp.logical_and"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = BOOL


@irdl_op_definition
class LogicalOrOp(BinaryOp):
    """Boolean or of two i1 tensors."""

    name = "tcp.logical_or"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = BOOL


COMPARE_PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")


@irdl_op_definition
class CompareOp(TcpOp):
    """``lhs <predicate> rhs`` elementwise, an i1 result; predicates eq, ne, lt, le,
    gt, ge. Comparisons with NaN are false except ``ne``."""

    name = "tcp.compare"
    T: ClassVar = VarConstraint("T", base(TensorType))
    lhs = operand_def(T)
    rhs = operand_def(T)
    predicate = prop_def(StringAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `->` type($result)"

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType]:
        check_same(cls.name, operand_types)
        pred = props["predicate"]
        if not isinstance(pred, StringAttr) or pred.data not in COMPARE_PREDICATES:
            raise fail(cls.name, f"predicate must be one of {COMPARE_PREDICATES}, got {pred}")
        return [TensorType(i1, operand_types[0].get_shape())]


@irdl_op_definition
class SelectOp(TcpOp):
    """``cond[i] ? on_true[i] : on_false[i]``; cond is i1 of the same shape."""

    name = "tcp.select"
    T: ClassVar = VarConstraint("T", base(TensorType))
    cond = operand_def(TensorType)
    on_true = operand_def(T)
    on_false = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$cond `,` $on_true `,` $on_false attr-dict `:` type($cond) `,` type($result)"

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType]:
        cond, a, b = operand_types
        check_same(cls.name, [a, b])
        check_elements(cls.name, cond, BOOL, "condition")
        if cond.get_shape() != a.get_shape():
            raise fail(cls.name, f"condition shape {describe(cond)} differs from the values' {describe(a)}")
        return [a]


@irdl_op_definition
class SinOp(UnaryOp):
    """Sine (radians)."""

    name = "tcp.sin"


@irdl_op_definition
class CosOp(UnaryOp):
    """Cosine (radians)."""

    name = "tcp.cos"


@irdl_op_definition
class TanOp(UnaryOp):
    """Tangent (radians)."""

    name = "tcp.tan"


@irdl_op_definition
class Log1pOp(UnaryOp):
    """log(1 + x), accurate for small x."""

    name = "tcp.log1p"


@irdl_op_definition
class Expm1Op(UnaryOp):
    """exp(x) - 1, accurate for small x."""

    name = "tcp.expm1"


@irdl_op_definition
class FloorOp(UnaryOp):
    """The largest integer not above x (float types; NaN and infinities stay)."""

    name = "tcp.floor"


@irdl_op_definition
class CeilOp(UnaryOp):
    """The smallest integer not below x."""

    name = "tcp.ceil"


@irdl_op_definition
class RoundOp(UnaryOp):
    """The nearest integer, halfway cases to the even one (as ``torch.round``)."""

    name = "tcp.round"


@irdl_op_definition
class TruncOp(UnaryOp):
    """x rounded toward zero."""

    name = "tcp.trunc"


@irdl_op_definition
class SignOp(UnaryOp):
    """-1, 0 or 1 by the sign of x (0 stays 0, NaN stays NaN); integers too."""

    name = "tcp.sign"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = NUMERIC


@irdl_op_definition
class BitwiseNotOp(UnaryOp):
    """~x on integers (two's complement)."""

    name = "tcp.bitwise_not"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = INDEX_TYPES


@irdl_op_definition
class FloorDivOp(BinaryOp):
    """floor(lhs / rhs) (Python's ``//``). Integer division by zero is undefined (the
    reference raises); for floats it follows IEEE division."""

    name = "tcp.floor_div"


@irdl_op_definition
class RemainderOp(BinaryOp):
    """lhs - floor(lhs / rhs) * rhs: the remainder with the sign of rhs (Python's ``%``,
    ``torch.remainder``). Integer remainder by zero is undefined."""

    name = "tcp.remainder"


@irdl_op_definition
class FmodOp(BinaryOp):
    """lhs - trunc(lhs / rhs) * rhs: the remainder with the sign of lhs (C's ``fmod``,
    ``torch.fmod``). Integer remainder by zero is undefined."""

    name = "tcp.fmod"


@irdl_op_definition
class BitwiseAndOp(BinaryOp):
    """lhs & rhs on integers."""

    name = "tcp.bitwise_and"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = INDEX_TYPES


@irdl_op_definition
class BitwiseOrOp(BinaryOp):
    """lhs | rhs on integers."""

    name = "tcp.bitwise_or"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = INDEX_TYPES


@irdl_op_definition
class BitwiseXorOp(BinaryOp):
    """lhs ^ rhs on integers."""

    name = "tcp.bitwise_xor"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = INDEX_TYPES


@irdl_op_definition
class ShiftLeftOp(BinaryOp):
    """lhs << rhs on integers (rhs in [0, bits))."""

    name = "tcp.shift_left"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = INDEX_TYPES


@irdl_op_definition
class ShiftRightOp(BinaryOp):
    """lhs >> rhs on integers, arithmetic (the sign fills in; rhs in [0, bits))."""

    name = "tcp.shift_right"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = INDEX_TYPES


MATH_OPS = (SinOp, CosOp, TanOp, Log1pOp, Expm1Op, FloorOp, CeilOp, RoundOp, TruncOp, SignOp, BitwiseNotOp)
INTEGER_BINARY_OPS = (FloorDivOp, RemainderOp, FmodOp, BitwiseAndOp, BitwiseOrOp, BitwiseXorOp, ShiftLeftOp, ShiftRightOp)
UNARY_OPS = (
    ExpOp,
    LogOp,
    TanhOp,
    SigmoidOp,
    SiluOp,
    SqrtOp,
    RsqrtOp,
    ErfOp,
    NegOp,
    AbsOp,
    LogicalNotOp,
    GeluOp,
    ClampOp,
    *MATH_OPS,
)
BINARY_OPS = (AddOp, SubOp, MulOp, DivOp, MaximumOp, MinimumOp, PowOp, LogicalAndOp, LogicalOrOp, *INTEGER_BINARY_OPS)
ELEMENTWISE_OPS = (*UNARY_OPS, *BINARY_OPS, CastOp, CompareOp, SelectOp)
