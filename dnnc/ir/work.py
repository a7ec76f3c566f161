"""What a group of tcp ops must do: its FLOPs and the bytes crossing its boundary.

A value produced and consumed inside the group never goes to memory, so only the
values it reads from outside and the ones used outside it (and the weights it
reads) count; a broadcast or reshape feeding it is index arithmetic, so it reads
the source.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import torch
from xdsl.ir import Operation, SSAValue

from dnnc.ir import tcp
from dnnc.ir.attrs import ints
from dnnc.ir.types import element_of, numel, shape_of, torch_dtype


@dataclass(frozen=True)
class Work:
    """What a group must do: FLOPs, bytes across its boundary, kernels launched."""

    flops: float
    bytes: float
    tensor_core: bool
    fp32: bool


PRODUCTS = (tcp.Conv2dOp, tcp.MatmulOp, tcp.BatchMatmulOp, tcp.AttentionOp)
"""Ops that run on tensor cores."""


def op_flops(op: Operation) -> float:
    """Floating-point operations of one tcp op (multiply-adds count two)."""
    if isinstance(op, tcp.Conv2dOp):
        n, k, p, q = shape_of(op.results[0])
        c, r, s = shape_of(op.operands[1])[1:]
        return 2.0 * n * k * p * q * c * r * s
    if isinstance(op, tcp.MatmulOp | tcp.BatchMatmulOp):
        a = shape_of(op.operands[0])
        return 2.0 * numel(op.results[0]) * a[-1]
    if isinstance(op, tcp.AttentionOp):
        b, h, sq, d = shape_of(op.query)
        sk, dv = shape_of(op.value)[2:]
        return 2.0 * b * h * sq * sk * (d + dv) + 5.0 * b * h * sq * sk
    if isinstance(op, tcp.LayerNormOp | tcp.SoftmaxOp | tcp.BatchNormOp):
        return 5.0 * numel(op.results[0])
    if isinstance(op, tcp.MaxPool2dOp | tcp.AvgPool2dOp):
        return float(numel(op.results[0]) * math.prod(ints(op.kernel)))
    if isinstance(op, tcp.ReduceOp):
        return float(numel(op.operands[0]))
    if isinstance(op, tcp.ELEMENTWISE_OPS):
        return float(numel(op.results[0]))
    return 0.0


def value_bytes(v: SSAValue) -> int:
    return numel(v) * torch_dtype(element_of(v)).itemsize


def boundary_values(ops: Iterable[Operation]) -> tuple[list[SSAValue], list[SSAValue]]:
    """Values a set of ops reads from outside and values used outside it."""
    ops = list(dict.fromkeys(ops))
    members = set(ops)
    reads: list[SSAValue] = []
    writes: list[SSAValue] = []
    for op in ops:  # in the caller's (program) order: extracted programs and their cache keys depend on it
        reads += [_materialized(v) for v in op.operands if v.owner not in members]
        writes += [r for r in op.results if not r.uses or any(use.operation not in members for use in r.uses)]
    return list(dict.fromkeys(reads)), writes


def _materialized(v: SSAValue) -> SSAValue:
    """A broadcast or reshape is index arithmetic to a fused kernel: it reads the source."""
    owner = v.owner
    while isinstance(owner, tcp.BroadcastOp | tcp.ReshapeOp) and isinstance(owner.operands[0].owner, Operation):
        v = owner.operands[0]
        owner = v.owner
    return v


def work_of(ops: Iterable[Operation]) -> Work:
    """The work of ops that will run as one kernel (a candidate group, before outlining)."""
    ops = list(ops)
    reads, writes = boundary_values(ops)
    moved = sum(value_bytes(v) for v in reads) + sum(value_bytes(v) for v in writes)
    return _work(ops, float(moved))


def kernel_work(kernel: Operation) -> Work:
    """The work of an outlined kernel (a Triton group): its body's FLOPs, its operands
    and results as the bytes it moves."""
    moved = sum(value_bytes(v) for v in kernel.operands) + sum(value_bytes(r) for r in kernel.results)
    return _work([op for region in kernel.regions for block in region.blocks for op in block.ops], float(moved))


def _work(ops: list[Operation], moved: float) -> Work:
    products = [op for op in ops if isinstance(op, PRODUCTS)]
    fp32 = any(torch_dtype(element_of(op.results[0])) == torch.float32 for op in products)
    return Work(sum(op_flops(op) for op in ops), moved, tensor_core=bool(products), fp32=fp32)
