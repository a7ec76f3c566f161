"""Which step of a GPU program computes something other than its op says: each step's
outputs against the reference rule of that step's op, run in float64 on the CPU on the
very operands the step was given.

A whole program's output that is off says only that something is; comparing each step
with the reference program's value of the same IR value mixes a step's own error with
everything before it. Here every step is judged alone: a cuDNN graph, a Triton or Gluon
kernel or a stopgap torch op gets the inputs it got in the run, and the reference rules
(``dnnc.backends.reference``) recompute its outputs from them. A wrong kernel stands out
by orders of magnitude (a missing bias or a misplaced tile is an error of 1e-1 or more,
a float16 kernel's rounding about 1e-3), so the first step over the tolerance is the
one to look at.

``check_steps(executor, inputs)`` runs the program once, step by step outside any CUDA
graph, and returns one ``StepCheck`` per output of every step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from dnnc.backends.interface import GROUP_KIND_ATTR, group_attr
from dnnc.backends.reference import ReferenceExecutor, execute
from dnnc.errors import DnncError
from dnnc.ir.analysis import inner_op_names
from dnnc.numerics import TOLERANCE, relative_error
from dnnc.runtime.gpu_executor import GpuExecutor, Step

STEP_TOLERANCE_FACTOR = 4
"""A step's outputs may differ from float64 by this many times their dtype's tolerance
(``numerics.TOLERANCE``): a kernel rounds its result once and may sum in another order
or in the inputs' precision (a float16 reduction, TF32 products); a wrong one is off by
far more."""


@dataclass(frozen=True)
class StepCheck:
    index: int
    """The step's place in the program."""
    backend: str
    kind: str
    """The step's op, with a group's kind and its ops."""
    output: int
    shape: tuple[int, ...]
    dtype: torch.dtype
    error: float
    """Normwise relative error against the reference on the step's own operands."""
    tolerance: float
    unjudged: str = ""
    """Why the step was not judged (no reference rule for its op), else empty."""

    @property
    def ok(self) -> bool:
        return bool(self.unjudged) or self.error <= self.tolerance  # NaN is not ok

    def describe(self) -> str:
        shape = "x".join(map(str, self.shape))
        if self.unjudged:
            return f"step {self.index} ({self.backend} {self.kind}) output {self.output} {shape}: not judged ({self.unjudged})"
        verdict = "ok" if self.ok else "WRONG"
        return (
            f"step {self.index} ({self.backend} {self.kind}) output {self.output} {shape} {str(self.dtype).removeprefix('torch.')}: "
            f"relative error {self.error:.2e} (tolerance {self.tolerance:.0e}) {verdict}"
        )


def _kind(step: Step) -> str:
    op = step.op
    return f"{group_attr(op, GROUP_KIND_ATTR) or op.name}: {', '.join(inner_op_names(op))}"


def _on_cpu(t: torch.Tensor) -> torch.Tensor:
    return t.detach().to("cpu", torch.float64 if t.is_floating_point() else t.dtype)


def check_steps(executor: GpuExecutor, inputs: Sequence[torch.Tensor]) -> list[StepCheck]:
    """Runs ``executor``'s program once on ``inputs`` and judges every step's outputs."""
    reference = ReferenceExecutor(executor.program, "float64", keep_precision=True)
    checks: list[StepCheck] = []

    def judge(index: int, step: Step, operands: list[torch.Tensor], outs: list[torch.Tensor]) -> None:
        try:
            wanted = execute(step.op, [_on_cpu(t) for t in operands], reference)
        except DnncError as e:  # an op the reference backend has no rule for
            for i, got in enumerate(outs):
                checks.append(StepCheck(index, step.backend, _kind(step), i, tuple(got.shape), got.dtype, 0.0, 0.0, str(e)))
            return
        for i, (got, want) in enumerate(zip(outs, wanted, strict=True)):
            tolerance = STEP_TOLERANCE_FACTOR * TOLERANCE.get(got.dtype, 0.0)
            error = (
                relative_error(_on_cpu(got), want)
                if got.is_floating_point()
                else float(not torch.equal(got.cpu(), want.to(got.dtype)))
            )
            checks.append(StepCheck(index, step.backend, _kind(step), i, tuple(got.shape), got.dtype, error, tolerance))

    with torch.no_grad():
        executor.run(inputs, after_step=judge)
    return checks


def first_wrong(checks: Sequence[StepCheck]) -> StepCheck | None:
    return next((c for c in checks if not c.ok), None)
