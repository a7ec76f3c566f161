"""Evaluating a compile-time value (one computed from parameters, constants and
iota only) with the reference rules, for the passes that fold such values."""

from __future__ import annotations

import torch
from xdsl.ir import SSAValue

from dnnc.backends.reference import evaluate_op
from dnnc.ir import tcp
from dnnc.ir.params import ParamStore

# Ops that only move or pick elements: exact in any precision, so they run on the
# stored dtype (a large transposed weight is not widened to float64 on the way).
_EXACT = (tcp.ParamOp, tcp.ConstantOp, tcp.IotaOp, *tcp.SHAPE_OPS)


def evaluate_value(value: SSAValue, params: ParamStore, cache: dict[SSAValue, torch.Tensor] | None = None) -> torch.Tensor:
    """Arithmetic in float64; data movement in the operands' own precision.
    Operands first, by an explicit stack rather than recursion; ``cache`` keeps the
    values computed on the way for the next call."""
    cache = {} if cache is None else cache
    stack = [value]
    while stack:
        op = stack[-1].owner
        pending = [v for v in op.operands if v not in cache]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        if op.results[0] in cache:
            continue
        operands = [cache[v] for v in op.operands]
        widened = any(t.dtype == torch.float64 for t in operands)
        precision = "native" if isinstance(op, _EXACT) and not widened else "float64"
        if precision == "float64":
            operands = [t.double() if t.is_floating_point() else t for t in operands]
        cache.update(zip(op.results, evaluate_op(op, operands, params, precision)))
    return cache[value]
