"""``dnnc ops``: the op tables one per line, and ``dnnc ops --check MODEL``: every
ATen op of a model the importer cannot take, without compiling further."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from dnnc.cli import main

MODELS = """
import torch
from torch import nn


class TwoUnsupported(nn.Module):
    def forward(self, x):
        d = torch.linalg.det(x)
        h = torch.histc(x, bins=4)
        return d.sum() + h.sum() + torch.linalg.det(x * 2).sum()


def two_unsupported(batch=2):
    return TwoUnsupported(), (torch.randn(batch, 3, 3),)


class ConstantTable(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("keys", torch.tensor([3.0, -1.0, 2.0]))

    def forward(self, x):
        return x * torch.special.digamma(self.keys)


def constant_table():
    return ConstantTable(), (torch.randn(2, 3),)


class Branches(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return x


def branches():
    return Branches(), (torch.randn(3),)
"""


@pytest.fixture
def models(tmp_path: Path) -> Path:
    path = tmp_path / "models.py"
    path.write_text(MODELS)
    return path


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def _line(path: Path, text: str) -> int:
    return next(i + 1 for i, line in enumerate(path.read_text().splitlines()) if text in line)


def test_check_names_every_unsupported_op(models: Path) -> None:
    result = invoke("ops", "--check", f"{models}:two_unsupported", "--arg", "batch=3")
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert lines[0] == "dnnc cannot import this model: 2 ATen ops are not supported"
    det = next(line for line in lines if "aten._linalg_det.default" in line)
    histc = next(line for line in lines if "aten.histc.default" in line)
    assert re.search(r" x2 +no import rule", det) and re.search(r" x1 +no import rule", histc)
    assert f"models.py:{_line(models, 'd = torch.linalg.det(x)')}: d = torch.linalg.det(x)" in det
    assert f"models.py:{_line(models, 'torch.histc')}" in histc
    assert "Traceback" not in result.output


def test_check_as_json(models: Path) -> None:
    result = invoke("ops", "--check", f"{models}:two_unsupported", "--json")
    assert result.exit_code == 1
    found = json.loads(result.output)
    assert found["supported"] is False
    assert [(u["op"], u["count"]) for u in found["unsupported"]] == [("aten._linalg_det.default", 2), ("aten.histc.default", 1)]
    assert found["unsupported"][1]["first_at"]["line"] == _line(models, "torch.histc")
    assert found["ops"]["aten.sum.dim_IntList"] == 3


def test_check_of_a_supported_model(models: Path) -> None:
    result = invoke("ops", "--check", f"{models}:constant_table")
    assert result.exit_code == 0, result.output
    (line,) = result.output.splitlines()
    assert re.fullmatch(
        r"all \d+ ATen ops of constant_table are supported \(aten\.digamma\.default x1 computed at compile time\)", line
    )
    found = json.loads(invoke("ops", "--check", f"{models}:constant_table", "--json").output)
    assert found["supported"] is True and found["computed_at_compile_time"] == {"aten.digamma.default": 1}


def test_check_of_a_model_export_cannot_trace(models: Path) -> None:
    result = invoke("ops", "--check", f"{models}:branches")
    assert result.exit_code == 1
    assert "torch.export could not trace the model" in result.output
    assert f"models.py:{_line(models, 'if x.sum() > 0:')}: if x.sum() > 0:" in result.output
    assert "Traceback" not in result.output and "def forward" not in result.output


def test_check_reports_loading_errors(models: Path) -> None:
    result = invoke("ops", "--check", f"{models}:no_such_factory")
    assert result.exit_code == 1 and "has no function 'no_such_factory'" in result.output


def test_ops_lists_one_op_per_line() -> None:
    result = invoke("ops")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert "  tcp.conv2d" in lines and "  aten.convolution.default" in lines and "  extern.dispatch" in lines
    assert any(re.fullmatch(r"ATen ops \(\d+\):", line) for line in lines)
    assert max(len(line) for line in lines) < 80


def test_model_options_need_check() -> None:
    result = invoke("ops", "--batch", "2")
    assert result.exit_code == 1 and "--arg, --dtype and --batch apply to --check MODEL" in result.output


def test_the_op_list_as_json() -> None:
    import json

    result = invoke("ops", "--json")
    assert result.exit_code == 0, result.output
    ops = json.loads(result.output)
    assert set(ops) == {"tcp", "extern", "aten"}
    assert (
        "tcp.conv2d" in ops["tcp"]
        and "aten.convolution.default" in ops["aten"]
        and ops["extern"] == ["extern.kernel", "extern.dispatch"]
    )
