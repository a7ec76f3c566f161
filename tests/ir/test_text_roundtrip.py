"""Textual IR round-trips: print -> parse -> print gives identical text, for a
file using every tcp op and for each test model after canonicalization."""

from __future__ import annotations

from pathlib import Path

import pytest

from dnnc.ir import tcp
from dnnc.ir.text import parse_ir, print_ir

ALL_OPS = Path(__file__).with_name("all_ops.mlir")


def roundtrip(text: str) -> tuple[str, str]:
    first = print_ir(parse_ir(text))
    return first, print_ir(parse_ir(first))


def test_every_op_is_in_the_sample() -> None:
    used = {op.name for op in parse_ir(ALL_OPS.read_text()).walk()}
    missing = {op.name for op in tcp.ALL_OPS} - used
    assert not missing, f"add these ops to all_ops.mlir: {sorted(missing)}"


def test_all_ops_roundtrip() -> None:
    first, second = roundtrip(ALL_OPS.read_text())
    assert first == second


@pytest.mark.parametrize("name", ["mobilenet_v2", "vit_block", "gpt2_block"])
def test_model_ir_roundtrip(name: str, canonical_models: dict) -> None:
    text = canonical_models[name][0].text()
    assert print_ir(parse_ir(text)) == text
