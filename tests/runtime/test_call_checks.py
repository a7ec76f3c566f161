"""A compiled module's call checks its inputs once per placement: the same tensors (or
tensors at the same address, shape, strides, dtype and device) pass again unchecked;
anything else is checked, and a bad input is refused with the usual message."""

from __future__ import annotations

import pytest
import torch

import dnnc
from dnnc.errors import InputError
from dnnc.runtime import signature


class _Scale(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2.0 + 1.0


@pytest.fixture
def compiled():
    return dnnc.compile(_Scale(), [torch.randn(2, 3)], device="cpu")


def test_the_same_tensors_are_checked_once(compiled, monkeypatch: pytest.MonkeyPatch) -> None:
    checked = []
    real = signature.check_inputs
    monkeypatch.setattr("dnnc.compiled.check_inputs", lambda *a: (checked.append(1), real(*a)))
    x = torch.randn(2, 3)
    for _ in range(3):
        torch.testing.assert_close(compiled(x), x * 2.0 + 1.0)
    assert len(checked) == 1
    y = torch.randn(2, 3)
    torch.testing.assert_close(compiled(y), y * 2.0 + 1.0)
    assert len(checked) == 2, "another tensor is checked"


def test_a_tensor_changed_in_place_is_checked_again(compiled) -> None:
    x = torch.randn(2, 3)
    compiled(x)
    x.resize_(4, 3)
    with pytest.raises(InputError, match=r"input 0: expected shape \[2, 3\], got \[4, 3\]"):
        compiled(x)
    with pytest.raises(InputError, match="expected dtype torch.float32, got torch.float64"):
        compiled(torch.randn(2, 3, dtype=torch.float64))


def test_placement_tells_tensors_apart_by_what_a_kernel_reads() -> None:
    x = torch.randn(2, 3)
    assert signature.placement([x]) == signature.placement([x])
    assert signature.placement([x]) == signature.placement([x.view(2, 3)]), "a view of all of it reads the same"
    assert signature.placement([x]) != signature.placement([x.t()])
    assert signature.placement([x]) != signature.placement([x.clone()])
    assert signature.placement([x]) != signature.placement([x.view(torch.int32)])


def test_a_tensor_without_storage_is_refused_with_a_message(compiled) -> None:
    with pytest.raises(InputError, match=r"input 0: expected a dense tensor of \[2, 3\] float32, got a torch.sparse_coo one"):
        compiled(torch.randn(2, 3).to_sparse())
