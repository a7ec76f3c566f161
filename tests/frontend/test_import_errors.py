"""Bad input to the importer: every refusal names the ATen op (or the tensor) and,
where PyTorch recorded it, the user's source line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from torch import nn

from dnnc.errors import UnsupportedOpError
from dnnc.pipeline import to_canonical_tcp
from tests.compile_helpers import compile_program

HERE = __file__


def _line_of(marker: str) -> int:
    lines = Path(HERE).read_text().splitlines()
    return next(i + 1 for i, line in enumerate(lines) if marker in line and "_line_of" not in line)


class Digamma(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * 2
        return torch.special.digamma(y)  # MARK-digamma


def test_unsupported_op_names_op_and_source_line() -> None:
    with pytest.raises(UnsupportedOpError) as info:
        compile_program(Digamma(), [torch.randn(3, 4)])
    message = str(info.value)
    assert message.startswith("dnnc cannot import this model: 1 ATen op is not supported")
    assert re.search(r"aten\.digamma\.default +x1 +no import rule", message)
    assert f"{Path(HERE).name}:{_line_of('MARK-digamma')}" in message
    assert "torch.special.digamma(y)" in message


class Pool(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pool = nn.AvgPool2d(2, divisor_override=3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


def test_unsupported_argument_value_names_module() -> None:
    with pytest.raises(UnsupportedOpError) as info:
        compile_program(Pool(), [torch.randn(1, 3, 4, 4)])
    message = str(info.value)
    assert re.search(r"aten\.avg_pool2d\.default +x1 +avg_pool2d with divisor_override", message)
    assert "in module pool (AvgPool2d)" in message


def test_training_mode_batchnorm_is_refused() -> None:
    model = nn.Sequential(nn.Conv2d(3, 3, 1), nn.BatchNorm2d(3)).train()
    with pytest.raises(
        UnsupportedOpError,
        match=r"writes its buffer '1.running_mean' while running.*BatchNorm in training mode does .call model.eval\(\)",
    ):
        to_canonical_tcp(model, (torch.randn(2, 3, 4, 4),))


def test_float64_is_refused_with_dtype_named() -> None:
    with pytest.raises(UnsupportedOpError, match="float64 is not supported"):
        compile_program(nn.Linear(3, 2).double(), [torch.randn(4, 3, dtype=torch.float64)])


def test_unused_outputs_of_multi_result_ops_are_fine_but_used_ones_are_not() -> None:
    pool = nn.MaxPool2d(2, return_indices=True)
    with pytest.raises(UnsupportedOpError, match="uses the max-pool indices"):
        compile_program(lambda x: pool(x)[1].float(), [torch.randn(1, 1, 4, 4)])
    compile_program(lambda x: pool(x)[0], [torch.randn(1, 1, 4, 4)])


def test_median_is_refused() -> None:
    with pytest.raises(UnsupportedOpError, match=r"aten\.median\.dim +x1 +no import rule"):
        compile_program(lambda x: x.median(-1).values, [torch.randn(2, 5)])


def test_integer_pow_is_refused() -> None:
    with pytest.raises(UnsupportedOpError, match="integer pow"):
        compile_program(lambda x: x**2, [torch.arange(4)])


def test_data_dependent_indexing_is_refused() -> None:
    with pytest.raises(UnsupportedOpError, match="data-dependent"):
        compile_program(lambda x: x[x > 0], [torch.randn(3, 3)])
