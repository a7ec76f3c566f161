"""Programs on disk: IR plus parameters, and the checks that tie them together."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from dnnc.errors import IRError, ParamError
from dnnc.ir.params import ParamStore
from dnnc.ir.program import Program
from dnnc.ir.text import parse_ir

TEXT = """func.func @forward(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
  %w = tcp.param @fc.weight : tensor<3x4xf32>
  %y = tcp.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
"""


def program(**params: torch.Tensor) -> Program:
    return Program(parse_ir(TEXT), ParamStore(params))


def test_save_load_round_trip(tmp_path: Path, rng: torch.Generator) -> None:
    p = program(**{"fc.weight": torch.randn(3, 4, generator=rng), "unused": torch.ones(2)})
    p.save(tmp_path / "p.mlir")
    assert sorted(p.params) == ["fc.weight"]  # saving drops what no op names
    q = Program.load(tmp_path / "p.mlir")
    assert q.text() == p.text() and torch.equal(q.params["fc.weight"], p.params["fc.weight"])


def test_missing_parameter() -> None:
    with pytest.raises(ParamError, match=r"parameter @fc.weight is not in the store \(it holds 0: nothing\)"):
        program().verify()


@pytest.mark.parametrize(
    "value,message",
    [
        (torch.ones(4, 3), r"stored as \[4, 3\] float32 but the IR uses 3x4xf32"),
        (torch.ones(3, 4, dtype=torch.bfloat16), "bfloat16"),
    ],
)
def test_mismatched_parameter(value: torch.Tensor, message: str) -> None:
    with pytest.raises(ParamError, match=message):
        program(**{"fc.weight": value}).verify()


def test_no_entry_function() -> None:
    p = Program(parse_ir("func.func @main() {\n  func.return\n}\n"), ParamStore())
    with pytest.raises(IRError, match="no func.func @forward"):
        p.verify()


def test_corrupt_parameter_file(tmp_path: Path) -> None:
    (tmp_path / "p.mlir").write_text(TEXT)
    (tmp_path / "p.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{broken}")
    with pytest.raises(ParamError, match="p.safetensors is not a readable safetensors file"):
        Program.load(tmp_path / "p.mlir")


def test_fresh_names() -> None:
    store = ParamStore({"w.folded": torch.ones(1), "w.folded.1": torch.ones(1)})
    assert store.fresh_name("w.folded") == "w.folded.2"
    assert store.fresh_name("b.folded") == "b.folded"
