"""The analytic cost of a group: a roofline over the target GPU's measured peaks
(``roofline``) for the group's work (``ir.work``).

A kernel takes at least the time to move the bytes it must read and write at
the memory bandwidth, and at least the time to do its FLOPs at the tensor-core
rate; it also pays a fixed launch cost. Fusion shows up in the bytes: only values
crossing the group's boundary (and the weights it reads) are counted.

Backends reach different fractions of the peaks (cuDNN's convolutions are
closer to the tensor-core rate than a generic Triton conv), so each backend and
kernel kind has an efficiency. These are starting guesses, corrected where the
partitioner measures (``calibrate``); the explain report says how far off the
uncorrected estimate was.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.ir import BlockArgument, Operation

from dnnc.ir import tcp
from dnnc.ir.work import Work, value_bytes
from dnnc.roofline import GpuPeaks, compute_tflops


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


def estimate_ms(work: Work, backend: str, kind: str, peaks: GpuPeaks) -> float:
    """Roofline time of one group on ``backend``, in milliseconds."""
    eff = efficiency(backend, kind)
    if eff.kernels == 0:
        return 0.0
    compute_s = work.flops / (compute_tflops(work, peaks) * 1e12 * eff.compute)
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
