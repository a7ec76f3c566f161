"""A model torch.export cannot trace is a short dnnc error: export's reason, the
user's source line; what torch printed and the traceback go to the debug log only."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch
from torch import nn

from dnnc.errors import DnncError, ExportError, KernelDeclarationError
from dnnc.frontend.torch_export import export

HERE = Path(__file__)


def _line_of(marker: str) -> int:
    lines = HERE.read_text().splitlines()
    return next(i + 1 for i, line in enumerate(lines) if marker in line and "_line_of" not in line)


class BranchesOnValues(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:  # MARK-branch
            return x * 2
        return x - 1


class ClampsOnlyInHalf(nn.Module):
    """The overflow clamp transformers' BART-style layers run after each block."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x * 2
        if x.dtype == torch.float16 and not torch.isfinite(x).all():  # MARK-half
            x = torch.clamp(x, min=-64504.0, max=64504.0)
        return x


class Raises(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[0] != 4:
            raise ValueError(f"expected 4 rows, got {x.shape[0]}")  # MARK-raise
        return x


def test_data_dependent_control_flow(capfd: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ExportError) as info:
        export(BranchesOnValues(), [torch.randn(3)])
    message = str(info.value)
    assert isinstance(info.value, DnncError)
    assert message.startswith(
        "torch.export could not trace the model with example inputs ([3] float32): Could not guard on data-dependent expression"
    )
    assert f"{HERE.name}:{_line_of('MARK-branch')}: if x.sum() > 0:" in message
    assert "control flow on a tensor's value" in message and "torch.cond" in message
    assert len(message.splitlines()) <= 6
    printed = capfd.readouterr()
    assert "def forward" not in printed.err + printed.out  # torch's partial graph is held back


def test_a_branch_taken_only_in_float16_advises_bfloat16() -> None:
    with pytest.raises(ExportError) as info:
        export(ClampsOnlyInHalf(), [torch.randn(3, dtype=torch.float16)])
    message = str(info.value)
    assert f"{HERE.name}:{_line_of('MARK-half')}:" in message
    assert "taken only in float16" in message and "bfloat16" in message
    export(ClampsOnlyInHalf(), [torch.randn(3, dtype=torch.bfloat16)])  # the advice holds
    with pytest.raises(ExportError) as other:
        export(BranchesOnValues(), [torch.randn(3)])
    assert "bfloat16" not in str(other.value)


def test_a_model_that_raises(capfd: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ExportError) as info:
        export(Raises(), [torch.randn(3, 2)])
    message = str(info.value)
    assert (
        message.splitlines()[0]
        == "torch.export could not trace the model with example inputs ([3, 2] float32): ValueError: expected 4 rows, got 3"
    )
    assert f"{HERE.name}:{_line_of('MARK-raise')}: raise ValueError(" in message
    assert "Traceback" not in message
    assert capfd.readouterr().err == ""


def test_the_traceback_goes_to_the_debug_log(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="dnnc.export"), pytest.raises(ExportError):
        export(Raises(), [torch.randn(3, 2)])
    failed = [r for r in caplog.records if r.name == "dnnc.export" and r.exc_info]
    assert failed and failed[0].exc_info[0] is ValueError  # type: ignore[index]


def test_dnnc_errors_raised_while_tracing_pass_unchanged() -> None:
    class Declares(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            raise KernelDeclarationError("kernel k: grid has 4 dimensions")

    with pytest.raises(KernelDeclarationError, match="grid has 4 dimensions"):
        export(Declares(), [torch.randn(2)])


def test_a_model_that_exports_is_unaffected() -> None:
    ep = export(nn.Linear(3, 2).eval(), [torch.randn(4, 3)])
    assert any(n.op == "call_function" for n in ep.graph.nodes)
