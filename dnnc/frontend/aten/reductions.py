"""Reductions: sum, mean, max/min (values only), any, and variance composed."""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import StringAttr, i1
from xdsl.ir import SSAValue

from dnnc.frontend.aten.registry import aten, normalize_axes, normalize_axis, rule
from dnnc.frontend.aten.selection import arg_extreme
from dnnc.frontend.emitter import Emitter
from dnnc.ir import tcp
from dnnc.ir.attrs import bool_attr, i64_array
from dnnc.ir.types import element_of, shape_of


def reduce(em: Emitter, op_type: type[tcp.ReduceOp], x: SSAValue, axes: list[int], keepdim: bool) -> SSAValue:
    if not axes:  # reducing a rank-0 tensor over "all" of its no dimensions
        return x
    return em.build(op_type, [x], axes=i64_array(axes), keepdim=bool_attr(keepdim))


def _reduce_rule(op_type: type[tcp.ReduceOp]) -> Any:
    def run(em: Emitter, self: Any, dim: Any = None, keepdim: bool = False, **_: Any) -> SSAValue:
        out = em.result_type()
        x = em.cast(em.value(self), out.element_type)
        return reduce(em, op_type, x, normalize_axes(em, dim, len(shape_of(x))), keepdim)

    return run


rule(aten.sum.dim_IntList, aten.sum.default)(_reduce_rule(tcp.ReduceSumOp))
rule(aten.mean.dim, aten.mean.default)(_reduce_rule(tcp.ReduceMeanOp))
rule(aten.amax.default, aten.max.default)(_reduce_rule(tcp.ReduceMaxOp))


@rule(aten.amin.default, aten.min.default)
def amin(em: Emitter, self: Any, dim: Any = None, keepdim: bool = False) -> SSAValue:
    """min(x) = -max(-x), exact for floats and integers."""
    x = em.value(self)
    neg = em.build(tcp.NegOp, [x])
    return em.build(tcp.NegOp, [reduce(em, tcp.ReduceMaxOp, neg, normalize_axes(em, dim, len(shape_of(x))), keepdim)])


@rule(aten.max.dim)
def max_dim(em: Emitter, self: Any, dim: int, keepdim: bool = False) -> tuple[object, ...]:
    x = em.value(self)
    values = reduce(em, tcp.ReduceMaxOp, x, [normalize_axis(em, dim, len(shape_of(x)))], keepdim)
    return values, arg_extreme(em, tcp.ArgmaxOp, x, dim, keepdim)


@rule(aten.min.dim)
def min_dim(em: Emitter, self: Any, dim: int, keepdim: bool = False) -> tuple[object, ...]:
    x = em.value(self)
    neg = em.build(tcp.NegOp, [x])
    values = em.build(tcp.NegOp, [reduce(em, tcp.ReduceMaxOp, neg, [normalize_axis(em, dim, len(shape_of(x)))], keepdim)])
    return values, arg_extreme(em, tcp.ArgminOp, x, dim, keepdim)


@rule(aten.any.dim, aten.any.dims, aten.any.default)
def any_(em: Emitter, self: Any, dim: Any = None, keepdim: bool = False) -> SSAValue:
    x = em.value(self)
    axes = normalize_axes(em, dim, len(shape_of(x)))
    if element_of(x) != i1:
        zero = em.constant(0, shape_of(x), element_of(x))
        x = em.build(tcp.CompareOp, [x, zero], predicate=StringAttr("ne"))
    return reduce(em, tcp.ReduceMaxOp, x, axes, keepdim)


@rule(aten.var.correction)
def var(em: Emitter, self: Any, dim: Any = None, correction: Any = None, keepdim: bool = False) -> SSAValue:
    """sum((x - mean)^2) / (N - correction), with correction 1 unless given."""
    x = em.value(self)
    shape = shape_of(x)
    axes = normalize_axes(em, dim, len(shape))
    count = 1
    for a in axes:
        count *= shape[a]
    correction = 1 if correction is None else correction
    centered = em.build(tcp.SubOp, [x, em.broadcast_to(reduce(em, tcp.ReduceMeanOp, x, axes, True), shape)])
    total = reduce(em, tcp.ReduceSumOp, em.build(tcp.MulOp, [centered, centered]), axes, keepdim)
    divisor = em.constant(max(count - correction, 0), shape_of(total), element_of(total))
    return em.build(tcp.DivOp, [total, divisor])


@rule(aten.linalg_vector_norm.default)
def vector_norm(em: Emitter, self: Any, ord: Any = 2, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> SSAValue:
    """The p-norm over ``dim``: sqrt(sum(x^2)) for 2, sum(|x|) for 1, max(|x|) for inf,
    sum(|x|^p)^(1/p) otherwise."""
    out = em.result_type()
    x = em.cast(em.value(self), out.element_type)
    axes = normalize_axes(em, dim, len(shape_of(x)))
    magnitude = em.build(tcp.AbsOp, [x])
    p = float(ord)
    if p == float("inf"):
        return reduce(em, tcp.ReduceMaxOp, magnitude, axes, keepdim)
    if p == 2:
        total = reduce(em, tcp.ReduceSumOp, em.build(tcp.MulOp, [x, x]), axes, keepdim)
        return em.build(tcp.SqrtOp, [total])
    if p == 1:
        return reduce(em, tcp.ReduceSumOp, magnitude, axes, keepdim)
    if p <= 0:
        em.unsupported(f"vector norm of order {ord} (dnnc takes positive orders and inf)")
    powered = em.build(tcp.PowOp, [magnitude, em.constant(p, shape_of(x), element_of(x))])
    total = reduce(em, tcp.ReduceSumOp, powered, axes, keepdim)
    return em.build(tcp.PowOp, [total, em.constant(1.0 / p, shape_of(total), element_of(total))])
