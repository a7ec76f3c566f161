"""Elementwise ops. PyTorch's implicit broadcasting and type promotion become
explicit ``tcp.broadcast`` and ``tcp.cast`` ops; the result type always comes from
the exported node's metadata, so promotion follows PyTorch exactly."""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import StringAttr, i1
from xdsl.ir import Attribute, SSAValue

from dnnc.frontend.aten.registry import aten, rule
from dnnc.frontend.emitter import Emitter
from dnnc.ir import tcp
from dnnc.ir.attrs import float_attr
from dnnc.ir.types import element_of, is_float, shape_of


def binary(em: Emitter, op_type: type[tcp.TcpOp], a: Any, b: Any, element: Attribute | None = None) -> SSAValue:
    """``a <op> b`` computed in ``element`` (default: the node's result type)."""
    out = em.result_type()
    element = element or out.element_type
    shape = shape_of(out)
    return em.build(op_type, [em.operand(a, shape, element), em.operand(b, shape, element)])


def unary(em: Emitter, op_type: type[tcp.TcpOp], x: Any, **props: Attribute) -> SSAValue:
    out = em.result_type()
    return em.build(op_type, [em.operand(x, shape_of(out), out.element_type)], **props)


def _scaled(em: Emitter, other: Any, alpha: Any) -> Any:
    """``alpha * other`` for add/sub's alpha argument."""
    if alpha in (None, 1):
        return other
    if isinstance(other, (int, float)):
        return other * alpha
    out = em.result_type()
    return binary(em, tcp.MulOp, other, alpha, out.element_type)


@rule(aten.add.Tensor, aten.add.Scalar)
def add(em: Emitter, self: Any, other: Any, alpha: Any = 1) -> SSAValue:
    return binary(em, tcp.AddOp, self, _scaled(em, other, alpha))


@rule(aten.sub.Tensor, aten.sub.Scalar)
def sub(em: Emitter, self: Any, other: Any, alpha: Any = 1) -> SSAValue:
    return binary(em, tcp.SubOp, self, _scaled(em, other, alpha))


@rule(aten.rsub.Scalar, aten.rsub.Tensor)
def rsub(em: Emitter, self: Any, other: Any, alpha: Any = 1) -> SSAValue:
    return binary(em, tcp.SubOp, other, _scaled(em, self, alpha))


@rule(aten.mul.Tensor, aten.mul.Scalar)
def mul(em: Emitter, self: Any, other: Any) -> SSAValue:
    if em.result_type().element_type == i1:
        return binary(em, tcp.LogicalAndOp, self, other)
    return binary(em, tcp.MulOp, self, other)


@rule(aten.div.Tensor, aten.div.Scalar)
def div(em: Emitter, self: Any, other: Any) -> SSAValue:
    return binary(em, tcp.DivOp, self, other)


@rule(aten.div.Tensor_mode, aten.div.Scalar_mode)
def div_mode(em: Emitter, self: Any, other: Any, rounding_mode: Any = None) -> SSAValue:
    if rounding_mode is None:
        return binary(em, tcp.DivOp, self, other)
    if rounding_mode == "floor":
        return binary(em, tcp.FloorDivOp, self, other)
    if rounding_mode != "trunc":
        em.unsupported(f"division with rounding_mode={rounding_mode!r} (expected None, 'floor' or 'trunc')")
    if is_float(em.result_type().element_type):
        return em.build(tcp.TruncOp, [binary(em, tcp.DivOp, self, other)])
    # a - fmod(a, b) is a multiple of b: its floor division is exact, the truncated quotient
    out = em.result_type()
    shape, element = shape_of(out), out.element_type
    a, b = em.operand(self, shape, element), em.operand(other, shape, element)
    return em.build(tcp.FloorDivOp, [em.build(tcp.SubOp, [a, em.build(tcp.FmodOp, [a, b])]), b])


@rule(aten.floor_divide.default, aten.floor_divide.Scalar)
def floor_divide(em: Emitter, self: Any, other: Any) -> SSAValue:
    return binary(em, tcp.FloorDivOp, self, other)


@rule(aten.remainder.Tensor, aten.remainder.Scalar, aten.remainder.Scalar_Tensor)
def remainder(em: Emitter, self: Any, other: Any) -> SSAValue:
    return binary(em, tcp.RemainderOp, self, other)


@rule(aten.fmod.Tensor, aten.fmod.Scalar)
def fmod(em: Emitter, self: Any, other: Any) -> SSAValue:
    return binary(em, tcp.FmodOp, self, other)


@rule(aten.reciprocal.default)
def reciprocal(em: Emitter, self: Any) -> SSAValue:
    return binary(em, tcp.DivOp, 1.0, self)


@rule(aten.pow.Tensor_Scalar, aten.pow.Tensor_Tensor, aten.pow.Scalar)
def pow_(em: Emitter, self: Any, exponent: Any) -> SSAValue:
    if not is_float(em.result_type().element_type):
        em.unsupported("integer pow")
    return binary(em, tcp.PowOp, self, exponent)


@rule(aten.maximum.default)
def maximum(em: Emitter, self: Any, other: Any) -> SSAValue:
    return binary(em, tcp.MaximumOp, self, other)


@rule(aten.minimum.default, aten.min.other)
def minimum(em: Emitter, self: Any, other: Any) -> SSAValue:
    return binary(em, tcp.MinimumOp, self, other)


def _on_booleans(em: Emitter) -> bool:
    return em.result_type().element_type == i1


@rule(aten.logical_and.default)
def logical_and(em: Emitter, self: Any, other: Any) -> SSAValue:
    return binary(em, tcp.LogicalAndOp, self, other)


@rule(aten.logical_or.default)
def logical_or(em: Emitter, self: Any, other: Any) -> SSAValue:
    return binary(em, tcp.LogicalOrOp, self, other)


@rule(aten.bitwise_and.Tensor, aten.bitwise_and.Scalar, aten.bitwise_and.Scalar_Tensor, aten.__and__.Tensor)
def bitwise_and(em: Emitter, self: Any, other: Any) -> SSAValue:
    return binary(em, tcp.LogicalAndOp if _on_booleans(em) else tcp.BitwiseAndOp, self, other)


@rule(aten.bitwise_or.Tensor, aten.bitwise_or.Scalar, aten.bitwise_or.Scalar_Tensor)
def bitwise_or(em: Emitter, self: Any, other: Any) -> SSAValue:
    return binary(em, tcp.LogicalOrOp if _on_booleans(em) else tcp.BitwiseOrOp, self, other)


@rule(aten.bitwise_xor.Tensor, aten.bitwise_xor.Scalar, aten.bitwise_xor.Scalar_Tensor)
def bitwise_xor(em: Emitter, self: Any, other: Any) -> SSAValue:
    return logical_xor(em, self, other) if _on_booleans(em) else binary(em, tcp.BitwiseXorOp, self, other)


@rule(
    aten.__lshift__.Tensor,
    aten.__lshift__.Scalar,
    *(getattr(aten.bitwise_left_shift, o) for o in ("Tensor", "Tensor_Scalar", "Scalar_Tensor")),
)
def shift_left(em: Emitter, self: Any, other: Any) -> SSAValue:
    return binary(em, tcp.ShiftLeftOp, self, other)


@rule(
    aten.__rshift__.Tensor,
    aten.__rshift__.Scalar,
    *(getattr(aten.bitwise_right_shift, o) for o in ("Tensor", "Tensor_Scalar", "Scalar_Tensor")),
)
def shift_right(em: Emitter, self: Any, other: Any) -> SSAValue:
    return binary(em, tcp.ShiftRightOp, self, other)


@rule(aten.logical_xor.default)
def logical_xor(em: Emitter, self: Any, other: Any) -> SSAValue:
    shape = shape_of(em.result_type())
    a, b = em.operand(self, shape, i1), em.operand(other, shape, i1)
    return em.build(tcp.CompareOp, [a, b], predicate=StringAttr("ne"))


@rule(aten.logical_not.default, aten.bitwise_not.default)
def logical_not(em: Emitter, self: Any) -> SSAValue:
    if em.result_type().element_type != i1:
        return unary(em, tcp.BitwiseNotOp, self)
    return unary(em, tcp.LogicalNotOp, self)


def _compare(predicate: str) -> Any:
    def run(em: Emitter, self: Any, other: Any) -> SSAValue:
        shape = shape_of(em.result_type())
        element = em.promoted_element(self, other)
        lhs, rhs = em.operand(self, shape, element), em.operand(other, shape, element)
        return em.build(tcp.CompareOp, [lhs, rhs], predicate=StringAttr(predicate))

    return run


for _pred in ("eq", "ne", "lt", "le", "gt", "ge"):
    _overloads = getattr(aten, _pred)
    rule(_overloads.Tensor, _overloads.Scalar)(_compare(_pred))


@rule(aten.where.self, aten.where.ScalarSelf, aten.where.ScalarOther, aten.where.Scalar)
def where(em: Emitter, condition: Any, self: Any, other: Any) -> SSAValue:
    out = em.result_type()
    shape = shape_of(out)
    cond = em.operand(condition, shape, i1)
    return em.build(tcp.SelectOp, [cond, em.operand(self, shape, out.element_type), em.operand(other, shape, out.element_type)])


_UNARY = {
    aten.exp.default: tcp.ExpOp,
    aten.log.default: tcp.LogOp,
    aten.tanh.default: tcp.TanhOp,
    aten.sigmoid.default: tcp.SigmoidOp,
    aten.silu.default: tcp.SiluOp,
    aten.sqrt.default: tcp.SqrtOp,
    aten.rsqrt.default: tcp.RsqrtOp,
    aten.erf.default: tcp.ErfOp,
    aten.neg.default: tcp.NegOp,
    aten.abs.default: tcp.AbsOp,
}


_MATH = {
    aten.sin.default: tcp.SinOp,
    aten.cos.default: tcp.CosOp,
    aten.tan.default: tcp.TanOp,
    aten.log1p.default: tcp.Log1pOp,
    aten.expm1.default: tcp.Expm1Op,
    aten.sign.default: tcp.SignOp,
}
_ROUNDING = {
    aten.floor.default: tcp.FloorOp,
    aten.ceil.default: tcp.CeilOp,
    aten.round.default: tcp.RoundOp,
    aten.trunc.default: tcp.TruncOp,
}


def _unary_rule(op_type: type[tcp.TcpOp]) -> Any:
    return lambda em, self: unary(em, op_type, self)


def _rounding_rule(op_type: type[tcp.TcpOp]) -> Any:
    """Integers are whole already: rounding them is the identity (as in PyTorch)."""
    return lambda em, self: unary(em, op_type, self) if is_float(em.result_type().element_type) else em.value(self)


for _target, _op in {**_UNARY, **_MATH}.items():
    rule(_target)(_unary_rule(_op))
for _target, _op in _ROUNDING.items():
    rule(_target)(_rounding_rule(_op))

LN2 = 0.6931471805599453


@rule(aten.log2.default)
def log2(em: Emitter, self: Any) -> SSAValue:
    return binary(em, tcp.MulOp, unary(em, tcp.LogOp, self), 1.0 / LN2)


@rule(aten.exp2.default)
def exp2(em: Emitter, self: Any) -> SSAValue:
    return unary(em, tcp.ExpOp, binary(em, tcp.MulOp, self, LN2))


def _float_value(em: Emitter, x: Any) -> SSAValue:
    v = em.value(x)
    if not is_float(element_of(v)):
        em.unsupported(f"expected a float tensor, got {element_of(v)} (integers are never inf or NaN)")
    return v


@rule(aten.isnan.default)
def isnan(em: Emitter, self: Any) -> SSAValue:
    v = _float_value(em, self)
    return em.build(tcp.CompareOp, [v, v], predicate=StringAttr("ne"))


@rule(aten.isinf.default)
def isinf(em: Emitter, self: Any) -> SSAValue:
    v = _float_value(em, self)
    inf = em.constant(float("inf"), shape_of(v), element_of(v))
    return em.build(tcp.CompareOp, [em.build(tcp.AbsOp, [v]), inf], predicate=StringAttr("eq"))


@rule(aten.isfinite.default)
def isfinite(em: Emitter, self: Any) -> SSAValue:
    """|x| < inf: false for infinities and NaN."""
    v = _float_value(em, self)
    inf = em.constant(float("inf"), shape_of(v), element_of(v))
    return em.build(tcp.CompareOp, [em.build(tcp.AbsOp, [v]), inf], predicate=StringAttr("lt"))


@rule(aten.gelu.default)
def gelu(em: Emitter, self: Any, approximate: str = "none") -> SSAValue:
    return unary(em, tcp.GeluOp, self, approximate=StringAttr(approximate))


def clamp_value(em: Emitter, x: Any, lo: Any, hi: Any) -> SSAValue:
    bounds = {}
    if lo is not None:
        bounds["min"] = float_attr(lo)
    if hi is not None:
        bounds["max"] = float_attr(hi)
    if not bounds:
        return em.value(x)
    return unary(em, tcp.ClampOp, x, **bounds)


@rule(aten.relu.default)
def relu(em: Emitter, self: Any) -> SSAValue:
    return clamp_value(em, self, 0.0, None)


@rule(aten.hardtanh.default)
def hardtanh(em: Emitter, self: Any, min_val: Any = -1.0, max_val: Any = 1.0) -> SSAValue:
    return clamp_value(em, self, min_val, max_val)


@rule(aten.clamp.default)
def clamp(em: Emitter, self: Any, min: Any = None, max: Any = None) -> SSAValue:
    return clamp_value(em, self, min, max)


@rule(aten.clamp.Tensor)
def clamp_tensor(em: Emitter, self: Any, min: Any = None, max: Any = None) -> SSAValue:
    out = em.result_type()
    shape, element = shape_of(out), out.element_type
    x = em.operand(self, shape, element)
    if min is not None:
        x = em.build(tcp.MaximumOp, [x, em.operand(min, shape, element)])
    if max is not None:
        x = em.build(tcp.MinimumOp, [x, em.operand(max, shape, element)])
    return x


@rule(aten.leaky_relu.default)
def leaky_relu(em: Emitter, self: Any, negative_slope: Any = 0.01) -> SSAValue:
    out = em.result_type()
    shape, element = shape_of(out), out.element_type
    x = em.operand(self, shape, element)
    positive = em.build(tcp.CompareOp, [x, em.constant(0, shape, element)], predicate=StringAttr("gt"))
    scaled = em.build(tcp.MulOp, [x, em.constant(negative_slope, shape, element)])
    return em.build(tcp.SelectOp, [positive, x, scaled])


@rule(aten._to_copy.default)
def to_copy(em: Emitter, self: Any, **_: Any) -> SSAValue:
    return em.cast(em.value(self), em.result_type().element_type)


@rule(aten.clone.default, aten.alias.default, aten.detach.default, aten.lift_fresh_copy.default)
def identity(em: Emitter, self: Any, **_: Any) -> SSAValue:
    return em.value(self)
