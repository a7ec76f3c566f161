"""What a GPU can do at best, and the least time a piece of work takes on it.

The peaks are measured rates (device-to-device copy, dense fp16 tensor-core
matmul); a kernel needs at least its bytes at the copy rate and its FLOPs at the
tensor-core rate. The partitioner's cost model starts from these (``partition.cost``
scales them by each backend's efficiency); the Triton backend asks ``launch_bound``
whether a kernel is small enough that its time is mostly launch and tail, and then
times two of its configs instead of all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xdsl.ir import Operation

from dnnc import knobs
from dnnc.ir.work import Work, kernel_work


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


def floor_us(work: Work, peaks: GpuPeaks) -> float:
    """The least time ``work`` takes as one kernel: its bytes at the copy rate or its
    FLOPs at the tensor-core rate (a sixteenth of it without products), whichever is
    longer; no launch cost."""
    return max(work.flops / (compute_tflops(work, peaks) * 1e6), work.bytes / (peaks.bandwidth_gbs * 1e3))


def compute_tflops(work: Work, peaks: GpuPeaks) -> float:
    """The peak rate ``work``'s FLOPs run at: the tensor-core rate (half of it for fp32
    products, as TF32), a sixteenth of it without products."""
    return peaks.tensor_tflops * (0.5 if work.fp32 else 1.0) if work.tensor_core else peaks.tensor_tflops / 16


def launch_bound(kernel: Operation, device: Any) -> bool:
    """Whether an outlined kernel (a Triton group) is so small that its launch and tail
    are most of its time: its floor (``floor_us``) under ``knobs.tune_floor_us``."""
    import torch

    floor = knobs.get().tune_floor_us
    if floor <= 0:
        return False
    name = torch.cuda.get_device_name(device) if torch.cuda.is_available() else None
    return floor_us(kernel_work(kernel), peaks_for(name)) < floor
