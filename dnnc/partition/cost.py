"""The analytic cost of a group: a roofline over the target GPU's measured peaks.

A kernel takes at least the time to move the bytes it must read and write at
the memory bandwidth, and at least the time to do its FLOPs at the tensor-core
rate; it also pays a fixed launch cost. Fusion shows up in the bytes: a value
produced and consumed inside one group never goes to memory, so only values
crossing the group's boundary (and the weights it reads) are counted.

Backends reach different fractions of the peaks (cuDNN's convolutions are
closer to the tensor-core rate than a generic Triton conv), so each backend and
kernel kind has an efficiency. These are starting guesses, corrected where the
partitioner measures (``calibrate``); the explain report says how far off the
uncorrected estimate was.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import torch
from xdsl.dialects import func
from xdsl.ir import BlockArgument, Operation, SSAValue

from dnnc.ir import tcp
from dnnc.ir.attrs import ints
from dnnc.ir.types import element_of, numel, shape_of, torch_dtype


@dataclass(frozen=True)
class GpuPeaks:
    name: str
    bandwidth_gbs: float
    """Device-to-device copy rate, measured."""
    tensor_tflops: float
    """Dense fp16/bf16 tensor-core matmul rate, measured (fp32 math runs as TF32 at half of it)."""
    launch_us: float = 2.0
    """What one more kernel costs inside a CUDA graph (launch gap and tail)."""
    measured: bool = True


H100 = GpuPeaks("NVIDIA H100 80GB HBM3", bandwidth_gbs=3004.0, tensor_tflops=745.0)
"""dnnc's own measurement (bench/results, 2026-11-22): copy 3004 GB/s, fp16 mm 745 TFLOP/s."""
H200 = GpuPeaks("NVIDIA H200", bandwidth_gbs=4300.0, tensor_tflops=790.0)
"""design/ANCHORS.md: ~4.3 TB/s copy and ~790 TFLOP/s fp16 on an H200."""
KNOWN = (H100, H200)


def peaks_for(device_name: str | None) -> GpuPeaks:
    """The peaks of the named GPU; an unknown GPU (or none) is priced as an H100."""
    if device_name:
        for peaks in KNOWN:
            if device_name.startswith(peaks.name.split(" 80GB")[0]):
                return peaks
    return GpuPeaks(device_name or "no GPU (priced as an H100)", H100.bandwidth_gbs, H100.tensor_tflops, measured=False)


@dataclass(frozen=True)
class Efficiency:
    compute: float
    memory: float
    kernels: int = 1
    """Kernels one group of this kind launches."""


EFFICIENCY: Mapping[tuple[str, str], Efficiency] = {
    ("cudnn", "conv"): Efficiency(0.55, 0.75),
    ("cudnn", "matmul"): Efficiency(0.70, 0.80),
    ("cudnn", "layernorm"): Efficiency(0.10, 0.70),
    ("cudnn", "sdpa"): Efficiency(0.45, 0.70),
    ("triton", "conv2d"): Efficiency(0.30, 0.60),
    ("triton", "matmul"): Efficiency(0.60, 0.75),
    ("triton", "attention"): Efficiency(0.40, 0.75),
    ("triton", "*"): Efficiency(0.10, 0.85),
    ("torch", "*"): Efficiency(0.30, 0.60),
    ("view", "*"): Efficiency(1.0, 1.0, kernels=0),
}


def efficiency(backend: str, kind: str) -> Efficiency:
    root = kind.split("_")[0]
    return EFFICIENCY.get((backend, root)) or EFFICIENCY.get((backend, "*")) or Efficiency(0.3, 0.6)


@dataclass(frozen=True)
class Work:
    """What a group must do: FLOPs, bytes across its boundary, kernels launched."""

    flops: float
    bytes: float
    tensor_core: bool
    fp32: bool


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
    ops = list(ops)
    reads, writes = boundary_values(ops)
    flops = sum(op_flops(op) for op in ops)
    moved = sum(value_bytes(v) for v in reads) + sum(value_bytes(v) for v in writes)
    products = [op for op in ops if isinstance(op, tcp.Conv2dOp | tcp.MatmulOp | tcp.BatchMatmulOp | tcp.AttentionOp)]
    fp32 = any(torch_dtype(element_of(op.results[0])) == torch.float32 for op in products)
    return Work(flops, float(moved), tensor_core=bool(products), fp32=fp32)


def estimate_ms(work: Work, backend: str, kind: str, peaks: GpuPeaks) -> float:
    """Roofline time of one group on ``backend``, in milliseconds."""
    eff = efficiency(backend, kind)
    if eff.kernels == 0:
        return 0.0
    rate = peaks.tensor_tflops * (0.5 if work.fp32 else 1.0) if work.tensor_core else peaks.tensor_tflops / 16
    compute_s = work.flops / (rate * 1e12 * eff.compute)
    memory_s = work.bytes / (peaks.bandwidth_gbs * 1e9 * eff.memory)
    return (max(compute_s, memory_s) + eff.kernels * peaks.launch_us * 1e-6) * 1e3


def layout_conversion_ms(ops: Sequence[Operation], channels_last_convs: bool, peaks: GpuPeaks) -> float:
    """What a channels-last convolution (cuDNN's) costs at the program's edge.

    Between cuDNN graphs the NCHW <-> NHWC transposes cancel, and next to a Triton
    kernel they become its index arithmetic; but the program's inputs and outputs
    are NCHW, so a convolution reading an input or producing an output pays one
    standalone transpose kernel (read and write) for it."""
    if not channels_last_convs or not isinstance(ops[0], tcp.Conv2dOp):
        return 0.0
    edges = []
    if isinstance(ops[0].operands[0], BlockArgument):
        edges.append(ops[0].operands[0])
    last = ops[-1].results[0]
    if any(isinstance(use.operation, func.ReturnOp) for use in last.uses):
        edges.append(last)
    eff = efficiency("triton", "transpose").memory
    return sum((2 * value_bytes(v) / (peaks.bandwidth_gbs * 1e9 * eff) + peaks.launch_us * 1e-6) * 1e3 for v in edges)
