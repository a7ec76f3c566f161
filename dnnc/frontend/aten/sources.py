"""Ops that make tensors from scalars: full, zeros/ones, scalar_tensor, arange."""

from __future__ import annotations

from typing import Any

from xdsl.ir import SSAValue

from dnnc.frontend.aten.registry import aten, rule
from dnnc.frontend.emitter import Emitter
from dnnc.ir import tcp
from dnnc.ir.types import shape_of


def _splat(em: Emitter, value: Any) -> SSAValue:
    t = em.result_type()
    if not isinstance(value, (bool, int, float)):
        em.unsupported(f"fill value {value!r} is not a Python number")
    return em.constant(value, shape_of(t), t.element_type)


@rule(aten.full.default)
def full(em: Emitter, size: Any, fill_value: Any, **_: Any) -> SSAValue:
    return _splat(em, fill_value)


@rule(aten.full_like.default)
def full_like(em: Emitter, self: Any, fill_value: Any, **_: Any) -> SSAValue:
    return _splat(em, fill_value)


@rule(aten.scalar_tensor.default)
def scalar_tensor(em: Emitter, s: Any, **_: Any) -> SSAValue:
    return _splat(em, s)


@rule(aten.zeros.default, aten.zeros_like.default)
def zeros(em: Emitter, **_: Any) -> SSAValue:
    return _splat(em, 0)


@rule(aten.ones.default, aten.ones_like.default)
def ones(em: Emitter, **_: Any) -> SSAValue:
    return _splat(em, 1)


@rule(aten.arange.start_step, aten.arange.start, aten.arange.default)
def arange(em: Emitter, start: Any = 0, end: Any = None, step: Any = 1, **_: Any) -> SSAValue:
    if not all(isinstance(v, int) or (isinstance(v, float) and v.is_integer()) for v in (start, step)):
        em.unsupported(f"arange with non-integer start {start} or step {step}")
    return em.emit(tcp.IotaOp(int(start), int(step), em.result_type()))
