"""Running sums, positions of extremes, top-k and sorting, and the fused RMS norm."""

from __future__ import annotations

import math
from typing import Any

import torch
from xdsl.ir import SSAValue

from dnnc.frontend.aten.registry import aten, normalize_axis, rule
from dnnc.frontend.emitter import Emitter, Unavailable
from dnnc.ir import tcp
from dnnc.ir.attrs import bool_attr, float_attr, int_attr
from dnnc.ir.types import element_of, shape_of, torch_dtype


@rule(aten.cumsum.default)
def cumsum(em: Emitter, self: Any, dim: int, dtype: Any = None) -> SSAValue:
    """In the result's type: booleans and narrower integers sum as int64 (PyTorch's rule)."""
    out = em.result_type()
    x = em.cast(em.value(self), out.element_type)
    return em.build(tcp.CumsumOp, [x], axis=int_attr(normalize_axis(em, dim, len(shape_of(x)))))


def arg_extreme(em: Emitter, op_type: type[tcp.TcpOp], x: SSAValue, dim: Any, keepdim: bool) -> SSAValue:
    """The index of the first extreme along ``dim``; with no dim, of the flattened tensor."""
    shape = shape_of(x)
    if dim is None:
        flat = em.reshape(x, (math.prod(shape),))
        index = em.build(op_type, [flat], axis=int_attr(0), keepdim=bool_attr(False))
        return em.reshape(index, (1,) * len(shape) if keepdim else ())
    axis = normalize_axis(em, dim, len(shape))
    return em.build(op_type, [x], axis=int_attr(axis), keepdim=bool_attr(keepdim))


@rule(aten.argmax.default)
def argmax(em: Emitter, self: Any, dim: Any = None, keepdim: bool = False) -> SSAValue:
    return arg_extreme(em, tcp.ArgmaxOp, em.value(self), dim, keepdim)


@rule(aten.argmin.default)
def argmin(em: Emitter, self: Any, dim: Any = None, keepdim: bool = False) -> SSAValue:
    return arg_extreme(em, tcp.ArgminOp, em.value(self), dim, keepdim)


def _topk(em: Emitter, x: SSAValue, k: int, dim: int, largest: bool) -> tuple[SSAValue, SSAValue]:
    axis = normalize_axis(em, dim, len(shape_of(x)))
    if not isinstance(k, int):
        em.unsupported(f"k = {k!r} is not a number known at compile time")
    op = tcp.TopkOp.make([x], {"k": int_attr(k), "axis": int_attr(axis), "largest": bool_attr(largest)})
    em.emit(op)
    return op.values, op.indices


@rule(aten.topk.default)
def topk(em: Emitter, self: Any, k: Any, dim: int = -1, largest: bool = True, sorted: bool = True) -> tuple[SSAValue, SSAValue]:
    """Always sorted, best first (what ``sorted=False`` leaves open)."""
    return _topk(em, em.value(self), k, dim, largest)


@rule(aten.sort.default, aten.sort.stable)
def sort(em: Emitter, self: Any, dim: int = -1, descending: bool = False, stable: Any = None) -> tuple[SSAValue, SSAValue]:
    """A top-k of the whole axis: stable, NaN above every number."""
    x = em.value(self)
    shape = shape_of(x)
    return _topk(em, x, shape[normalize_axis(em, dim, len(shape))] if shape else 1, dim, descending)


@rule(aten.argsort.default, aten.argsort.stable)
def argsort(em: Emitter, self: Any, dim: int = -1, descending: bool = False, stable: Any = None) -> SSAValue:
    return sort(em, self, dim, descending)[1]


def rms_norm(em: Emitter, input: Any, normalized_shape: Any, weight: Any, eps: Any) -> SSAValue:
    x = em.value(input)
    shape, element = shape_of(x), element_of(x)
    axis = len(shape) - len(normalized_shape)
    if axis < 0 or tuple(shape[axis:]) != tuple(normalized_shape):
        em.unsupported(f"normalized_shape {list(normalized_shape)} does not end the input's shape {list(shape)}")
    if eps is None:  # PyTorch's default: the machine epsilon of the input's type
        eps = torch.finfo(torch_dtype(element)).eps
    w = em.cast(em.value(weight), element) if weight is not None else em.constant(1.0, shape[axis:], element)
    return em.build(tcp.RmsNormOp, [x, w], axis=int_attr(axis), epsilon=float_attr(eps))


@rule(aten._fused_rms_norm.default)
def fused_rms_norm(em: Emitter, input: Any, normalized_shape: Any, weight: Any, eps: Any) -> tuple[object, ...]:
    return rms_norm(em, input, normalized_shape, weight, eps), Unavailable("the RMS norm's inverse root mean square")


@rule(aten.rms_norm.default)
def rms_norm_rule(em: Emitter, input: Any, normalized_shape: Any, weight: Any = None, eps: Any = None) -> SSAValue:
    return rms_norm(em, input, normalized_shape, weight, eps)
