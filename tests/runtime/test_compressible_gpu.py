"""Compressible memory on the GPU: it holds what is written to it after the Python
object that mapped it is gone (a tensor's view keeps it), is freed once no view is left,
and a program whose arena is compressible computes what one with a plain arena does."""

from __future__ import annotations

import gc

import pytest
import torch
from torch import nn

import dnnc
from dnnc import knobs
from dnnc.runtime import compressible

pytestmark = pytest.mark.gpu


def _needs_compression() -> None:
    if not compressible.supported(torch.cuda.current_device()):
        pytest.skip("this GPU gives no compressible memory")


def test_compressible_memory_holds_what_is_written_while_a_view_lives() -> None:
    _needs_compression()
    held = compressible.empty_bytes((3 << 20) + 6, torch.device("cuda"))
    assert held is not None and held.numel() == (3 << 20) + 6 and held.is_cuda
    view = held[8:].view(torch.float16)[: 1 << 20]
    del held
    gc.collect()
    values = torch.relu(torch.randn(1 << 20, device="cuda", dtype=torch.float16))
    view.copy_(values)
    torch.cuda.synchronize()
    assert torch.equal(view, values)
    free_before = torch.cuda.mem_get_info()[0]
    del view
    gc.collect()
    assert torch.cuda.mem_get_info()[0] > free_before  # released, not leaked


class _Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(16, 32, 3, padding=1)
        self.b = nn.Conv2d(32, 32, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.b(torch.relu(self.a(x)))) + 1


def test_a_program_with_a_compressible_arena_computes_what_a_plain_one_does() -> None:
    _needs_compression()
    model = _Net().cuda().half().eval()
    x = torch.randn(4, 16, 32, 32, device="cuda", dtype=torch.float16)
    plain = dnnc.compile(model, (x,))(x)
    with knobs.override(compressible_arena=True):
        module = dnnc.compile(model, (x,))
    for _ in range(3):  # the eager run, the capture, a replay
        got = module(x)
    torch.testing.assert_close(got, plain, rtol=0, atol=0)
    with torch.no_grad():
        torch.testing.assert_close(got.float(), model.float()(x.float()), rtol=2e-2, atol=2e-2)
    model.half()
