"""``check_steps`` judges each step of a GPU program alone, against the reference rule of
its op on the operands the step got: on the CPU (Triton under its interpreter) every step
of a correct program passes, a step made wrong is the first one named, and the steps
after it, fed its wrong output, still pass on their own."""

from __future__ import annotations

import pytest
import torch

import dnnc
from dnnc.errors import DnncError
from dnnc.pipeline import lower_for_gpu, to_canonical_tcp
from dnnc.runtime.gpu_executor import GpuExecutor
from dnnc.runtime.step_check import check_steps, first_wrong
from tests.runtime.test_gpu_executor_cpu import Net


@pytest.fixture
def executor(rng: torch.Generator) -> tuple[GpuExecutor, torch.Tensor]:
    model = Net().eval()
    x = torch.randn(2, 8, 9, 9, generator=rng)
    program = to_canonical_tcp(model, (x,))
    lower_for_gpu(program, backends=["triton"])
    return GpuExecutor(program, "cpu"), x


def test_every_step_of_a_correct_program_passes(executor) -> None:
    gpu, x = executor
    checks = check_steps(gpu, [x])
    assert len(checks) >= len(gpu.steps) >= 3
    assert first_wrong(checks) is None, "\n".join(c.describe() for c in checks)
    assert all(c.error < 1e-5 for c in checks)  # float32 kernels against float64


def test_a_wrong_step_is_the_first_one_named_and_those_after_it_pass(executor) -> None:
    gpu, x = executor
    broken = 1
    kernel = gpu.steps[broken].kernel
    assert kernel is not None
    launch = kernel.launch

    def off_by_one(operands, outs):
        launch(operands, outs)
        outs[0].add_(1.0)

    kernel.launch = off_by_one
    checks = check_steps(gpu, [x])
    wrong = first_wrong(checks)
    assert wrong is not None and wrong.index == broken and "WRONG" in wrong.describe()
    assert [c.index for c in checks if not c.ok] == [broken]


def test_a_cpu_program_has_no_steps_to_check() -> None:
    model = Net().eval()
    x = torch.randn(2, 8, 9, 9)
    compiled = dnnc.compile(model, (x,), device="cpu")
    with pytest.raises(DnncError, match="GPU program"):
        compiled.check_steps(x)


@pytest.mark.gpu
def test_every_step_of_a_float16_gpu_program_passes_and_a_wrong_one_is_named(rng: torch.Generator) -> None:
    """cuDNN graphs, Triton and Gluon kernels of a compiled float16 program judged alone."""
    model = Net().cuda().half().eval()
    x = torch.randn(4, 8, 16, 16, generator=rng).cuda().half()
    compiled = dnnc.compile(model, (x,))
    checks = compiled.check_steps(x)
    assert checks and first_wrong(checks) is None, "\n".join(c.describe() for c in checks)
    executor = compiled._executor
    index, step = next((i, s) for i, s in enumerate(executor.steps) if s.kernel is not None)
    launch = step.kernel.launch

    def off_by_one(operands, outs):
        launch(operands, outs)
        outs[0].add_(1.0)

    step.kernel.launch = off_by_one
    try:
        wrong = first_wrong(compiled.check_steps(x))
    finally:
        step.kernel.launch = launch
    assert wrong is not None and wrong.index == index


def test_a_step_the_reference_cannot_run_is_reported_not_judged(executor, monkeypatch) -> None:
    from dnnc.runtime import step_check

    gpu, x = executor
    real = step_check.execute

    def refuse_the_first(op, operands, env):
        if op is gpu.steps[0].op:
            raise DnncError("the reference backend has no rule for it")
        return real(op, operands, env)

    monkeypatch.setattr(step_check, "execute", refuse_the_first)
    checks = check_steps(gpu, [x])
    assert checks[0].unjudged and checks[0].ok and "not judged" in checks[0].describe()
    assert first_wrong(checks) is None and all(not c.unjudged for c in checks[1:])
