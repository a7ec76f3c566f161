"""``CompiledModule.bind`` on the CPU reference backend: a binding's outputs hold the
result for what its inputs hold, each ``replay`` recomputes them in place from the
inputs' current values, outputs keep the model's structure, and bad inputs are refused
at ``bind`` with the op-free message a call gives."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
import torch
from torch import nn

import dnnc
from dnnc.errors import InputError


class TwoOutputs(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.lin(x)
        return torch.relu(h) + y, h.sum(dim=1)


@pytest.fixture(scope="module")
def compiled() -> tuple[nn.Module, dnnc.CompiledModule]:
    model = TwoOutputs().eval()
    return model, dnnc.compile(model, (torch.randn(3, 8), torch.randn(3, 4)), device="cpu")


def test_replay_recomputes_from_what_the_inputs_hold_into_the_same_outputs(compiled, rng: torch.Generator) -> None:
    model, module = compiled
    x, y = torch.randn(3, 8, generator=rng), torch.randn(3, 4, generator=rng)
    binding = module.bind(x, y)
    first, second = binding.outputs
    with torch.no_grad():
        expected = model(x, y)
    torch.testing.assert_close(first, expected[0])
    torch.testing.assert_close(second, expected[1])
    x.copy_(torch.randn(3, 8, generator=rng))
    y.copy_(torch.randn(3, 4, generator=rng))
    with torch.no_grad():
        expected = model(x, y)
    module(torch.randn(3, 8), torch.randn(3, 4))  # a call between leaves the binding alone
    binding.replay()
    assert binding.outputs[0] is first and binding.outputs[1] is second
    torch.testing.assert_close(first, expected[0])
    torch.testing.assert_close(second, expected[1])
    assert binding.inputs[0] is x and binding.inputs[1] is y


def test_bind_refuses_what_a_call_refuses_and_arrays(compiled) -> None:
    _, module = compiled
    with pytest.raises(InputError, match=r"shape"):
        module.bind(torch.randn(2, 8), torch.randn(3, 4))
    with pytest.raises(InputError, match="bind takes the torch tensors"):
        module.bind(np.zeros((3, 8), np.float32), torch.randn(3, 4))


def test_a_binding_keeps_its_program_alive(compiled, rng: torch.Generator) -> None:
    """``compile(...).bind(...)`` in one expression leaves the binding the only holder of
    the program: it must keep it (on a GPU the captured graph reads the program's memory
    by address)."""
    model, _ = compiled
    x, y = torch.randn(3, 8, generator=rng), torch.randn(3, 4, generator=rng)
    module = dnnc.compile(model, (x, y), device="cpu")
    held = weakref.ref(module)
    binding = module.bind(x, y)
    del module
    gc.collect()
    assert held() is not None
    x.copy_(torch.randn(3, 8, generator=rng))
    binding.replay()
    with torch.no_grad():
        torch.testing.assert_close(binding.outputs[0], model(x, y)[0])
    del binding
    gc.collect()
    assert held() is None
