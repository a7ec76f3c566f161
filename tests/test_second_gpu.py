"""A program compiled for the second GPU of a machine (``device="cuda:1"``) is built
and runs there, also when another GPU is current at the call; its artifact loads
there; inputs on another GPU are refused by name. Needs two GPUs (``nvidia-h200-x2``);
the refusals on a one-GPU machine are CPU tests in ``tests/test_api.py``."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import dnnc
from dnnc.errors import DnncError, InputError
from dnnc.numerics import relative_error
from tests.serving.models import image_net

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2, reason="needs two GPUs"),
]


def test_a_program_compiled_for_cuda_1_runs_there(tmp_path: Path) -> None:
    model, (x,) = image_net(batch=4)
    second = torch.device("cuda", 1)
    model, x = model.to(second), x.to(second)
    with torch.no_grad():
        want = model(x)
    with pytest.raises(DnncError, match="make cuda:1 current first"):
        dnnc.compile(model, (x,), device="cuda:1")
    with torch.cuda.device(1):
        compiled = dnnc.compile(model, (x,), device="cuda:1")
        assert compiled.placed == second
        got = compiled(x)
        path = compiled.save(tmp_path / "second.dnnc")
        loaded = dnnc.load(path, device="cuda:1")
    assert got.device == second and relative_error(got.cpu(), want.cpu()) < 2e-3
    assert torch.cuda.current_device() == 0
    for module in (compiled, loaded):
        for _ in range(3):  # the first call, the graph on the input's own memory, its replay
            out = module(x)  # cuda:0 is current: the call runs on cuda:1 all the same
        assert out.device == second and relative_error(out.cpu(), want.cpu()) < 2e-3
        with pytest.raises(InputError, match="input 0: expected a tensor on cuda:1, got one on cuda:0"):
            module(x.to("cuda:0"))


def test_a_user_kernel_is_loaded_and_launched_on_each_gpu(rng: torch.Generator) -> None:
    """Eager calls on either GPU, whichever is current, each launching the module loaded
    into that GPU's context; a compiled program on cuda:1 with the kernel inside."""
    from tests.kernels.kernels import load_example

    example = load_example()
    exact = {"rtol": 1e-6, "atol": 1e-6}
    for index in (1, 0, 1):
        a, b = (torch.randn(1000, generator=rng).to(f"cuda:{index}") for _ in range(2))
        torch.testing.assert_close(example.simple_mul(a, b), a * b, **exact)  # cuda:0 is current
    a, b = (torch.randn(4099, generator=rng).to("cuda:1") for _ in range(2))
    with torch.cuda.device(1):
        compiled = dnnc.compile(example.MixedInvocation(), (a, b), device="cuda:1")
    assert compiled.summary()["user_kernels"] == {"simple_mul_inplace": "sm_90 cubin"}
    for _ in range(2):
        torch.testing.assert_close(compiled(a, b), (torch.tanh(a) * (b + 1)) * 2 + a, **exact)
