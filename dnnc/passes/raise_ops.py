"""raise-ops: recognize an op that a frontend wrote out in steps, and make it the
one tcp op the backends have fused kernels and patterns for.

JAX (and StableHLO in general) has no softmax and no layer norm:
``jax.nn.softmax`` arrives as ``e = exp(x - max(x)); e / sum(e)`` over one axis,
and a layer norm as ``(x - mean) * rsqrt(var + eps) * g + b`` with the means
written as sums divided by the count (in float32 between casts, for 16-bit
inputs): four to eight kernels where ``tcp.softmax`` or ``tcp.layer_norm`` is one.
PyTorch models write the RMS norm of Llama, T5 and their kin by hand as
``x * rsqrt(mean(x^2) + eps)`` (the weight and casts around it): one
``tcp.rms_norm`` with a unit weight, the rest left as its epilogue. GPT-2's
activation (transformers' ``gelu_new``, JAX's ``gelu(approximate=True)``) is the tanh
GELU written out, ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``: nine ops
(a ``pow`` among them) where ``tcp.gelu`` is one that a product's epilogue takes.
The matches are exact: the same ``x`` feeds every step, over the same single
(last, for layer norm; trailing, for RMS norm) axes, with the reduced values
broadcast back along them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from dnnc.ir import tcp
from dnnc.ir.analysis import splat_value
from dnnc.ir.attrs import float_attr, int_attr, ints, scalar
from dnnc.ir.builder import TcpBuilder
from dnnc.ir.rewriting import PatternPass
from dnnc.ir.types import element_of, shape_of


def _broadcast_back(value: SSAValue, reduced: type[tcp.ReduceOp]) -> tcp.ReduceOp | None:
    """The ``reduced`` op whose result ``value`` is, broadcast back along its reduced axis."""
    while isinstance(value.owner, tcp.BroadcastOp | tcp.ReshapeOp):
        value = value.owner.input
    op = value.owner
    return op if isinstance(op, reduced) and not scalar(op.keepdim) and len(ints(op.axes)) == 1 else None


class RaiseSoftmax(RewritePattern):
    """div(e, bcast(sum(e, a))) with e = exp(sub(x, bcast(max(x, a)))) -> softmax(x, a)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tcp.DivOp, rewriter: PatternRewriter) -> None:
        e = op.lhs
        total = _broadcast_back(op.rhs, tcp.ReduceSumOp)
        if not isinstance(e.owner, tcp.ExpOp) or total is None or total.input != e:
            return
        shifted = e.owner.input
        if not isinstance(shifted.owner, tcp.SubOp):
            return
        x = shifted.owner.lhs
        peak = _broadcast_back(shifted.owner.rhs, tcp.ReduceMaxOp)
        if peak is None or peak.input != x or ints(peak.axes) != ints(total.axes) or shape_of(x) != shape_of(op.result):
            return
        axis = ints(total.axes)[0]
        rewriter.replace(op, tcp.SoftmaxOp.make([x], {"axis": int_attr(axis)}))


def _uncast(value: SSAValue) -> SSAValue:
    while isinstance(value.owner, tcp.CastOp):
        value = value.owner.input
    return value


def _mean_of(value: SSAValue, axis: int) -> SSAValue | None:
    """``v`` where ``value`` is ``sum(v, axis) / n`` kept as a size-1 axis (casts allowed)."""
    div = _uncast(value).owner
    if not isinstance(div, tcp.DivOp):
        return None
    total = _broadcast_back(div.lhs, tcp.ReduceSumOp)
    if total is None or ints(total.axes) != (axis,) or splat_value(div.rhs) != shape_of(total.input)[axis]:
        return None
    return _uncast(total.input)


def _centered(value: SSAValue, axis: int) -> tuple[SSAValue, SSAValue] | None:
    """``(x, mean)`` where ``value`` is ``x - mean(x)`` along ``axis``."""
    sub = value.owner
    if not isinstance(sub, tcp.SubOp):
        return None
    mean = sub.rhs
    while isinstance(mean.owner, tcp.BroadcastOp | tcp.ReshapeOp):
        mean = mean.owner.input
    x = sub.lhs
    return (x, mean) if _mean_of(mean, axis) == _uncast(x) or _mean_of(mean, axis) == x else None


def _vector(builder: TcpBuilder, value: SSAValue, size: int, like: SSAValue) -> SSAValue | None:
    """The per-channel vector a broadcast parameter or splat came from, as ``[size]``."""
    source = value
    while isinstance(source.owner, tcp.BroadcastOp | tcp.ReshapeOp):
        source = source.owner.input
    if isinstance(source.owner, tcp.ConstantOp):
        return builder.constant(source.owner.scalar, (size,), element_of(like))
    if element_of(source) != element_of(like) or [d for d in shape_of(source) if d != 1] != [size]:
        return None
    return builder.reshape(source, (size,))


class RaiseLayerNorm(RewritePattern):
    """add(mul(mul(x - mean, bcast(rsqrt(var + eps))), g), b) -> layer_norm(x, g, b)
    over the last axis, where var is the mean of (x - mean)^2."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tcp.AddOp, rewriter: PatternRewriter) -> None:
        rank = len(shape_of(op.result))
        axis = rank - 1
        for scaled, beta in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            outer = scaled.owner
            if not isinstance(outer, tcp.MulOp):
                continue
            for normed, gamma in ((outer.lhs, outer.rhs), (outer.rhs, outer.lhs)):
                inner = normed.owner
                if not isinstance(inner, tcp.MulOp):
                    continue
                for centered, rstd in ((inner.lhs, inner.rhs), (inner.rhs, inner.lhs)):
                    found = self._match(centered, rstd, axis)
                    if found is None:
                        continue
                    x, eps = found
                    builder = TcpBuilder.before(op)
                    size = shape_of(x)[axis]
                    w, b = _vector(builder, gamma, size, x), _vector(builder, beta, size, x)
                    if w is None or b is None:
                        return
                    norm = tcp.LayerNormOp.make([x, w, b], {"axis": int_attr(axis), "epsilon": float_attr(eps)})
                    rewriter.replace(op, norm)
                    return

    @staticmethod
    def _match(centered: SSAValue, rstd: SSAValue, axis: int) -> tuple[SSAValue, float] | None:
        pair = _centered(centered, axis)
        while isinstance(rstd.owner, tcp.BroadcastOp | tcp.ReshapeOp):
            rstd = rstd.owner.input
        if pair is None or not isinstance(rstd.owner, tcp.RsqrtOp):
            return None
        shifted = rstd.owner.input.owner
        if not isinstance(shifted, tcp.AddOp):
            return None
        for var, eps_value in ((shifted.lhs, shifted.rhs), (shifted.rhs, shifted.lhs)):
            eps = splat_value(eps_value)
            square = _mean_of(var, axis)
            if eps is None or square is None or not isinstance(square.owner, tcp.MulOp):
                continue
            a, b = square.owner.lhs, square.owner.rhs
            if a == b and _centered(a, axis) is not None and _centered(a, axis)[0] == pair[0]:
                return pair[0], float(eps)
        return None


def _square_of(value: SSAValue) -> SSAValue | None:
    """``x`` where ``value`` is ``x * x`` or ``x ** 2``."""
    op = value.owner
    if isinstance(op, tcp.MulOp) and op.lhs == op.rhs:
        return op.lhs
    if isinstance(op, tcp.PowOp) and splat_value(op.rhs) == 2:
        return op.lhs
    return None


def _same(a: SSAValue, b: SSAValue) -> bool:
    """One value, or two casts of one value to one type (PyTorch code casts twice)."""
    return a == b or (a.type == b.type and _uncast(a) == _uncast(b) and isinstance(a.owner, tcp.CastOp))


class RaiseRmsNorm(RewritePattern):
    """mul(x, bcast(rsqrt(mean(x^2 over trailing axes, keepdim) + eps))) -> rms_norm(x, 1)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tcp.MulOp, rewriter: PatternRewriter) -> None:
        for x, scale in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            while isinstance(scale.owner, tcp.BroadcastOp | tcp.ReshapeOp):
                scale = scale.owner.input
            if not isinstance(scale.owner, tcp.RsqrtOp) or not isinstance(scale.owner.input.owner, tcp.AddOp):
                continue
            shifted = scale.owner.input.owner
            for mean, eps_value in ((shifted.lhs, shifted.rhs), (shifted.rhs, shifted.lhs)):
                eps, reduced = splat_value(eps_value), mean.owner
                if eps is None or not isinstance(reduced, tcp.ReduceMeanOp) or not scalar(reduced.keepdim):
                    continue
                rank = len(shape_of(x))
                axes = list(ints(reduced.axes))
                squared = _square_of(reduced.input)
                if axes != list(range(rank - len(axes), rank)) or squared is None or not _same(squared, x):
                    continue
                unit = TcpBuilder.before(op).constant(1.0, shape_of(x)[axes[0] :], element_of(x))
                rewriter.replace(op, tcp.RmsNormOp.make([x, unit], {"axis": int_attr(axes[0]), "epsilon": float_attr(eps)}))
                return


def _is_splat(value: SSAValue, target: float) -> bool:
    """A splat of ``target`` as the model's dtype rounds it (float16 keeps ~3 digits)."""
    found = splat_value(value)
    return found is not None and abs(float(found) - target) <= 1e-3 * abs(target)


def _other(op: tcp.BinaryOp, target: float) -> SSAValue | None:
    """The operand of ``op`` beside a splat of ``target``, or None."""
    for value, constant in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
        if _is_splat(constant, target):
            return value
    return None


def _cube_of(value: SSAValue) -> SSAValue | None:
    """``x`` where ``value`` is ``x ** 3`` or ``x * x * x``."""
    op = value.owner
    if isinstance(op, tcp.PowOp) and splat_value(op.rhs) == 3:
        return op.lhs
    if isinstance(op, tcp.MulOp):
        for square, x in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            if _square_of(square) == x:
                return x
    return None


def _tanh_gelu_factor_of(value: SSAValue) -> SSAValue | None:
    """``x`` where ``value`` is ``1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))``."""
    add = value.owner
    if not isinstance(add, tcp.AddOp) or (t := _other(add, 1.0)) is None or not isinstance(t.owner, tcp.TanhOp):
        return None
    scaled = t.owner.input.owner
    if not isinstance(scaled, tcp.MulOp) or (inner := _other(scaled, math.sqrt(2 / math.pi))) is None:
        return None
    total = inner.owner
    if not isinstance(total, tcp.AddOp):
        return None
    for x, term in ((total.lhs, total.rhs), (total.rhs, total.lhs)):
        if isinstance(term.owner, tcp.MulOp) and (cube := _other(term.owner, 0.044715)) is not None and _cube_of(cube) == x:
            return x
    return None


class RaiseTanhGelu(RewritePattern):
    """mul(mul(x, 0.5), 1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))) -> gelu(x, tanh),
    the half on either side."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tcp.MulOp, rewriter: PatternRewriter) -> None:
        for a, b in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            half_x = _other(a.owner, 0.5) if isinstance(a.owner, tcp.MulOp) else None
            if half_x is not None and _tanh_gelu_factor_of(b) == half_x:
                x = half_x
            elif (
                isinstance(b.owner, tcp.MulOp)
                and (factor := _other(b.owner, 0.5)) is not None
                and _tanh_gelu_factor_of(factor) == a
            ):
                x = a
            else:
                continue
            rewriter.replace(op, tcp.GeluOp.make([x], {"approximate": StringAttr("tanh")}))
            return


@dataclass(frozen=True)
class RaiseOps(PatternPass):
    name = "raise-ops"
    patterns = (RaiseSoftmax(), RaiseLayerNorm(), RaiseRmsNorm(), RaiseTanhGelu())
