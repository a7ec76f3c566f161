"""The physical floor of a workload: its FLOPs at the measured fp16 matmul rate, and
its fewest bytes (inputs, weights and outputs, each moved once) at the measured
copy bandwidth; the floor is the larger. Counted on dnnc's canonical program of the
model (batch norm folded), so every variant is held to the same work."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from dnnc.ir.program import Program
from dnnc.ir.types import element_of, numel, torch_dtype
from dnnc.ir.work import op_flops

FLOAT_BYTES = 2
"""The suite runs fp16: floating values count two bytes whatever the program's dtype."""


@dataclass(frozen=True)
class Floor:
    flops: float
    bytes: float

    def ms(self, matmul_tflops: float, copy_gbs: float) -> float:
        return max(self.flops / (matmul_tflops * 1e9), self.bytes / (copy_gbs * 1e6))


def floor_of(program: Program) -> Floor:
    block = program.entry.body.block
    flops = sum(op_flops(op) for op in block.ops)
    values = [*block.args, *(op.result for op in program.param_ops()), *block.last_op.operands]  # type: ignore[union-attr]
    return Floor(flops, float(sum(_bytes(v) for v in values)))


def _bytes(v: object) -> int:
    dtype = torch_dtype(element_of(v))  # type: ignore[arg-type]
    return numel(v) * (FLOAT_BYTES if dtype.is_floating_point else dtype.itemsize)  # type: ignore[arg-type]


def workload_floor(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> Floor:
    """The floor of ``model`` on ``inputs`` (canonicalized on the CPU in float32)."""
    import copy

    from dnnc.pipeline import to_canonical_tcp

    cpu = [x.detach().cpu().float() if x.is_floating_point() else x.detach().cpu() for x in inputs]
    return floor_of(to_canonical_tcp(copy.deepcopy(model).cpu().float(), cpu))
