"""One import reports every unsupported ATen op of a model: its name, how often it
occurs, why (no rule, or the rule's own refusal) and the first source line. The ops
used here (determinant, histogram, digamma) are ones dnnc is not expected to take."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from torch import nn

from dnnc.errors import DnncError, UnsupportedOpError
from dnnc.frontend.problems import UnsupportedOp
from dnnc.frontend.source_location import CODE_WIDTH
from dnnc.frontend.torch_export import export, survey
from tests.compile_helpers import compile_program

HERE = Path(__file__)


def _line_of(marker: str) -> int:
    lines = HERE.read_text().splitlines()
    return next(i + 1 for i, line in enumerate(lines) if marker in line and "_line_of" not in line)


def _row(message: str, op: str) -> str:
    return next(line for line in message.splitlines() if line.strip().startswith(op + " "))


class ThreeProblems(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pool = nn.AvgPool2d(2, divisor_override=3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d = torch.linalg.det(x)  # MARK-det
        h = torch.histc(x, bins=4)  # MARK-histc
        again = torch.linalg.det(x * 2)
        pooled = self.pool(x)  # MARK-pool
        return d.sum() + h.sum() + again.sum() + pooled.sum()


def test_every_unsupported_op_is_reported_once_with_count_reason_and_first_line() -> None:
    with pytest.raises(UnsupportedOpError) as info:
        compile_program(ThreeProblems(), [torch.randn(1, 2, 3, 3)])
    message = str(info.value)
    assert isinstance(info.value, DnncError)
    assert message.splitlines()[0] == "dnnc cannot import this model: 3 ATen ops are not supported"
    assert len(message.splitlines()) == 4  # the header and one row per op
    det = _row(message, "aten._linalg_det.default")
    assert re.search(r" x2 +no import rule +\(first at ", det)
    assert f"{HERE.name}:{_line_of('MARK-det')}: d = torch.linalg.det(x)" in det
    assert f"{HERE.name}:{_line_of('MARK-histc')}" in _row(message, "aten.histc.default")
    pool = _row(message, "aten.avg_pool2d.default")
    assert re.search(r" x1 +avg_pool2d with divisor_override +\(first at ", pool)  # the rule's own refusal
    assert f":{_line_of('MARK-pool')}:" in pool and "(in module pool (AvgPool2d))" in pool
    ops = info.value.problems
    assert [(p.op, p.count) for p in ops] == [  # type: ignore[attr-defined]
        ("aten._linalg_det.default", 2),
        ("aten.histc.default", 1),
        ("aten.avg_pool2d.default", 1),
    ]


class AfterAProblem(nn.Module):
    """The determinant is refused; the ops using its result are checked on a stand-in."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d = torch.linalg.det(x)
        return torch.special.digamma(d.exp()) * 2 + d


def test_ops_after_an_unsupported_op_are_still_checked() -> None:
    with pytest.raises(UnsupportedOpError) as info:
        compile_program(AfterAProblem(), [torch.randn(2, 3, 3)])
    ops = [p.op for p in info.value.problems]  # type: ignore[attr-defined]
    assert ops == ["aten._linalg_det.default", "aten.digamma.default"]  # exp, mul, add are fine on the stand-in


def test_a_value_dnnc_does_not_compute_is_refused_once_at_its_op() -> None:
    """Max-pool indices: refused at the op that makes them, not again at each user."""
    pool = nn.MaxPool2d(2, return_indices=True)

    def f(x: torch.Tensor) -> torch.Tensor:
        indices = pool(x)[1]
        return indices.float() + indices.float().exp()

    with pytest.raises(UnsupportedOpError) as info:
        compile_program(f, [torch.randn(1, 1, 4, 4)])
    (problem,) = info.value.problems  # type: ignore[attr-defined]
    assert problem.op == "aten.max_pool2d_with_indices.default"
    assert "uses the max-pool indices, which dnnc does not compute" in problem.reason


class Branches(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.cond(x.sum() > 0, lambda x: x * 2, lambda x: x - 1, (x,))  # MARK-cond
        return torch.special.digamma(y)


def test_a_control_flow_op_is_reported_at_the_users_line() -> None:
    with pytest.raises(UnsupportedOpError) as info:
        compile_program(Branches(), [torch.randn(3)])
    message = str(info.value)
    assert [p.op for p in info.value.problems] == ["cond", "aten.digamma.default"]  # type: ignore[attr-defined]
    assert f"{HERE.name}:{_line_of('MARK-cond')}: y = torch.cond(" in _row(message, "cond")


class LongLine(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.special.digamma(x) + torch.special.digamma(x + 1.0) + torch.special.digamma(x + 2.0) + x * 3.0  # MARK-long


def test_long_source_lines_are_cut() -> None:
    with pytest.raises(UnsupportedOpError) as info:
        compile_program(LongLine(), [torch.rand(4) + 1])
    row = _row(str(info.value), "aten.digamma.default")
    assert " x3 " in row
    code = row.split(f":{_line_of('MARK-long')}: ", 1)[1].split(" (in module")[0]
    assert code.endswith("...") and len(code) <= CODE_WIDTH
    assert "MARK-long" not in row


def test_survey_reports_what_the_import_refuses() -> None:
    model, example = ThreeProblems(), [torch.randn(1, 2, 3, 3)]
    found = survey(export(model, example))
    with pytest.raises(UnsupportedOpError) as info:
        compile_program(model, example)
    assert found.unsupported == list(info.value.problems)  # type: ignore[attr-defined]
    assert all(isinstance(p, UnsupportedOp) for p in found.unsupported)
    assert found.ops["aten._linalg_det.default"] == 2 and found.ops["aten.sum.dim_IntList"] == 4
    assert not found.computed


def test_a_supported_model_surveys_clean() -> None:
    found = survey(export(nn.Sequential(nn.Linear(3, 4), nn.ReLU()).eval(), [torch.randn(2, 3)]))
    assert found.unsupported == [] and not found.computed
    assert "aten.relu.default" in found.ops
