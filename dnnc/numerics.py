"""How dnnc compares a result with a reference: normwise relative error over the
finite elements, NaN and infinities in the same places, integers exactly, and one
stated tolerance per dtype. Used by ``dnnc compile --check`` and by the tests.

    float32   1e-5   (same float32 arithmetic, another order of rounding)
    float16   2e-3   (one rounding of the result: 2^-11 ~ 4.9e-4, plus input effects)
    bfloat16  1.6e-2 (one rounding: 2^-8 ~ 3.9e-3)

On the GPU, float32 matmuls and convolutions may run on tensor cores in TF32
(10-bit mantissa, as PyTorch's cuDNN convolutions do by default), so float32
results there are held to ``GPU_TOLERANCE`` instead: 2e-3.

A whole float16 or bfloat16 network rounds at every layer, so ``dnnc compile``'s check
holds such outputs to the model run in float32, at twice eager's own error there or the
dtype's tolerance, whichever is larger (``compare_with_truth``), as the tests do against
float64.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from dnnc.compiled import CompiledModule
    from dnnc.ir.program import Program

TOLERANCE = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.float64: 1e-12}
GPU_TOLERANCE = {**TOLERANCE, torch.float32: 2e-3}


def relative_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    """``||actual - expected|| / ||expected||`` over the elements where ``expected`` is finite."""
    a, e = actual.double(), expected.double()
    finite = torch.isfinite(e)
    diff = (a[finite] - e[finite]).norm()
    scale = e[finite].norm()
    return float(diff / scale) if scale > 0 else float(diff)


def mismatch(
    actual: torch.Tensor,
    expected: torch.Tensor,
    dtype: torch.dtype | None = None,
    tolerances: dict[torch.dtype, float] = TOLERANCE,
) -> str | None:
    """Why ``actual`` does not match ``expected`` within ``dtype``'s tolerance, or None."""
    if tuple(actual.shape) != tuple(expected.shape):
        return f"shape {list(actual.shape)} != {list(expected.shape)}"
    if not expected.is_floating_point():
        if actual.dtype != expected.dtype:
            return f"dtype {actual.dtype} != {expected.dtype}"
        return None if torch.equal(actual, expected) else "integer/boolean values differ"
    a, e = actual.double(), expected.double()
    for name, where in (("NaNs", torch.isnan), ("+inf", torch.isposinf), ("-inf", torch.isneginf)):
        if not torch.equal(where(a), where(e)):
            return f"{name} in different places"
    dtype = dtype or actual.dtype
    err = relative_error(a, e)
    if err > tolerances[dtype]:
        return f"relative error {err:.3e} exceeds the {dtype} tolerance {tolerances[dtype]:.1e}"
    return None


@dataclass(frozen=True)
class Verdict:
    """Whether every output of a compiled program matched a reference on fresh inputs."""

    against: str
    problems: list[str]
    worst: float
    """The largest normwise relative error over the floating outputs."""
    tolerances: dict[torch.dtype, float]
    eager_worst: float | None = None
    """Where low-precision outputs were held to a float32 truth: eager's own largest
    error against it (``worst`` is then dnnc's against the same truth)."""

    @property
    def ok(self) -> bool:
        return not self.problems

    def tolerance_text(self) -> str:
        shown = (torch.float32, torch.float16, torch.bfloat16)
        return ", ".join(f"{str(d).removeprefix('torch.')} {self.tolerances[d]:g}" for d in shown)

    def describe(self) -> str:
        """The errors found and what they were allowed, for one line of output."""
        if self.eager_worst is None:
            return f"largest relative error {self.worst:.2e}; tolerance {self.tolerance_text()}"
        return (
            f"largest relative error {self.worst:.2e} against the model in float32, where eager's own is "
            f"{self.eager_worst:.2e}; allowed twice eager's, at least {self.tolerance_text()}"
        )


def compare_outputs(got: list[torch.Tensor], expected: list[torch.Tensor], device: str, against: str) -> Verdict:
    """Every output by ``mismatch``, at the GPU's float32 tolerance on ``cuda`` (TF32)."""
    table = GPU_TOLERANCE if device == "cuda" else TOLERANCE
    problems = [p for a, e in zip(got, expected, strict=True) if (p := mismatch(a, e, tolerances=table)) is not None]
    worst = max((relative_error(a, e) for a, e in zip(got, expected) if e.is_floating_point()), default=0.0)
    return Verdict(against, problems, worst, table)


LOW_PRECISION = (torch.float16, torch.bfloat16)


def compare_with_truth(
    got: list[torch.Tensor], eager: list[torch.Tensor], truth: list[torch.Tensor], device: str, against: str
) -> Verdict:
    """``compare_outputs``, but a float16 / bfloat16 output is held to ``truth`` (the
    model in float32): its error may be twice eager's own against that truth, or the
    dtype's tolerance where that is larger. Two programs that each round in float16
    differ from each other by more than either differs from the truth (a deep network's
    rounding grows with depth), so comparing them with each other at a fixed tolerance
    fails correct programs."""
    table = GPU_TOLERANCE if device == "cuda" else TOLERANCE
    problems: list[str] = []
    worst, eager_worst = 0.0, 0.0
    for i, (a, e, t) in enumerate(zip(got, eager, truth, strict=True)):
        if not (e.is_floating_point() and e.dtype in LOW_PRECISION):
            problem = mismatch(a, e, tolerances=table)
            if e.is_floating_point():
                worst = max(worst, relative_error(a, e))
        else:
            placed = mismatch(a, e, e.dtype, {e.dtype: float("inf")})  # shape, NaN and infinity places
            err, own = relative_error(a, t), relative_error(e, t)
            worst, eager_worst = max(worst, err), max(eager_worst, own)
            bound = max(2 * own, table[e.dtype])
            problem = placed or (
                f"output {i}: relative error {err:.3e} against float32 eager exceeds {bound:.1e} "
                f"(eager {str(e.dtype).removeprefix('torch.')} has {own:.2e})"
                if err > bound
                else None
            )
        if problem is not None:
            problems.append(problem)
    return Verdict(against, problems, worst, table, eager_worst)


def check_against_eager(compiled: CompiledModule, module: torch.nn.Module, example: tuple[Any, ...]) -> Verdict:
    """Fresh random inputs shaped like the examples (integers within their range)
    through the compiled program and through the module in PyTorch eager. Where eager
    returns float16 or bfloat16, a float32 copy of the module on float32 copies of the
    inputs is the truth both are held to (``compare_with_truth``)."""
    import copy

    import torch.utils._pytree as pytree

    from dnnc.inputs import random_like

    g = torch.Generator().manual_seed(int(time.time()))
    fresh = tuple(random_like(x, g) if isinstance(x, torch.Tensor) else x for x in example)
    with torch.no_grad():
        expected = pytree.tree_leaves(module(*fresh))
    on_device = tuple(x.to(compiled.device) if isinstance(x, torch.Tensor) else x for x in fresh)
    got = [t.cpu() for t in pytree.tree_leaves(compiled(*on_device))]
    if not any(isinstance(e, torch.Tensor) and e.dtype in LOW_PRECISION for e in expected):
        return compare_outputs(got, expected, compiled.device, "PyTorch eager")
    wide = tuple(x.float() if isinstance(x, torch.Tensor) and x.dtype in LOW_PRECISION else x for x in fresh)
    with torch.no_grad():
        truth = pytree.tree_leaves(copy.deepcopy(module).float()(*wide))
    return compare_with_truth(got, expected, truth, compiled.device, "PyTorch eager")


def check_against_reference(compiled: CompiledModule, reference: Program) -> Verdict:
    """Fresh random inputs through the compiled program and the reference backend
    running ``reference`` (the program before it was compiled)."""
    from dnnc.backends.reference import ReferenceExecutor
    from dnnc.inputs import random_tensor

    g = torch.Generator().manual_seed(int(time.time()))
    fresh = [random_tensor(tuple(s.shape), s.dtype, g) for s in compiled.input_specs]
    expected = ReferenceExecutor(reference).run(fresh)
    out = compiled(*[x.to(compiled.device) for x in fresh])
    got = [t.cpu() for t in (out if isinstance(out, tuple) else (out,))]
    return compare_outputs(got, expected, compiled.device, "the reference backend")
