"""split-reductions keeps a reduction's values (the reference backend before and after,
fresh random inputs, each dtype's tolerance), and the split program's Triton kernels
match too: its first reduction, with the ops before it fused in, runs as many programs
as there are chunks; the second reduces the chunks' values. On a CPU the kernels run on
Triton's interpreter, on a GPU machine on CUDA."""

from __future__ import annotations

import pytest
import torch

from dnnc.backends.reference.interpreter import ReferenceExecutor
from dnnc.backends.triton import TritonFuse
from dnnc.ir import tcp
from dnnc.ir.params import ParamStore
from dnnc.ir.program import Program
from dnnc.ir.text import parse_ir
from dnnc.passes import parse_passes
from dnnc.pipeline import run_passes
from tests.backends.triton.helpers import run_with_triton
from tests.numerics import assert_matches

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

REDUCTIONS = {
    "sum_all": "tcp.reduce_sum %x {axes = array<i64: 0, 1, 2>, keepdim = false} : tensor<4x128x160xT> -> tensor<T>",
    "mean_rows_kept": "tcp.reduce_mean %x {axes = array<i64: 1, 2>, keepdim = true} : tensor<4x128x160xT> -> tensor<4x1x1xT>",
    "max_trailing": "tcp.reduce_max %x {axes = array<i64: 1, 2>, keepdim = false} : tensor<4x128x160xT> -> tensor<4xT>",
}
"""Rows of 20480 or 81920 elements: shorter than ``LONG_ROW`` for the per-row ones, so
the test shrinks ``LONG_ROW`` to make them split."""


def _program(body: str, dtype: str) -> Program:
    result = body.rsplit("-> ", 1)[1].replace("T>", f"{dtype}>")
    text = f"""func.func @forward(%x: tensor<4x128x160x{dtype}>) -> {result} {{
  %r = {body.replace("xT>", f"x{dtype}>").replace("<T>", f"<{dtype}>")}
  func.return %r : {result}
}}"""
    return Program(parse_ir(text, "split"), ParamStore())


def _reductions(program: Program) -> list[str]:
    return [op.name for op in program.entry.body.walk() if isinstance(op, tcp.ReduceOp)]


@pytest.fixture(autouse=True)
def _short_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("dnnc.passes.split_reductions.LONG_ROW", 16384)


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_a_split_reduction_keeps_its_values(name: str, dtype: str, rng: torch.Generator) -> None:
    program = _program(REDUCTIONS[name], dtype)
    # Centred on 0.25: a sum of 81920 values centred on 0 lands within a few units of 0
    # for about one seed in 200, where the rounding of two summation orders exceeds
    # float32's relative tolerance though both are right; this one is near 20480, inside
    # float16's range.
    x = (torch.randn(4, 128, 160, generator=rng) * 0.5 + 0.25).to(DTYPES[dtype])
    expected = ReferenceExecutor(program).run([x])
    run_passes(program, parse_passes("split-reductions"))
    assert len(_reductions(program)) == 2, program.text()
    (actual,) = ReferenceExecutor(program).run([x])
    assert actual.shape == expected[0].shape and actual.dtype == expected[0].dtype
    assert_matches(actual, expected[0], DTYPES[dtype], what=f"{name} {dtype}")


OVERFLOW_CHECK = """func.func @forward(%x: tensor<4x128x128xT>) -> tensor<i1> {
  %inf = tcp.constant {value = 0x7ff0000000000000 : f64} : tensor<4x128x128xT>
  %a = tcp.abs %x : tensor<4x128x128xT>
  %isinf = tcp.compare %a, %inf {predicate = "eq"} : tensor<4x128x128xT> -> tensor<4x128x128xi1>
  %any = tcp.reduce_max %isinf {axes = array<i64: 0, 1, 2>, keepdim = false} : tensor<4x128x128xi1> -> tensor<i1>
  func.return %any : tensor<i1>
}"""


@pytest.mark.parametrize("overflow", [False, True])
@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_a_split_overflow_check_runs_as_two_triton_kernels(overflow: bool, dtype: str, rng: torch.Generator) -> None:
    """T5's ``isinf(x).any()``: the comparison fuses into the chunks' kernel."""
    program = Program(parse_ir(OVERFLOW_CHECK.replace("xT>", f"x{dtype}>"), "overflow"), ParamStore())
    x = torch.randn(4, 128, 128, generator=rng).to(DTYPES[dtype])
    if overflow:
        x[3, 100, 7] = float("inf")
    run_passes(program, [*parse_passes("split-reductions"), TritonFuse()])
    groups = [op for op in program.entry.body.block.ops if isinstance(op, tcp.IsolatedGroupOp)]
    assert len(groups) == 2, program.text()
    (actual,), launched = run_with_triton(program, [x], DEVICE)
    assert launched == 2
    assert bool(actual.cpu()) is overflow


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_a_split_sum_matches_on_triton(dtype: str, rng: torch.Generator) -> None:
    program = _program(REDUCTIONS["sum_all"], dtype)
    # Offset from zero as above: a sum of 81920 zero-mean draws can nearly cancel, and its
    # relative error then says nothing of the kernels.
    x = (torch.randn(4, 128, 160, generator=rng) * 0.5 + 0.25).to(DTYPES[dtype])
    expected = ReferenceExecutor(program).run([x])
    run_passes(program, [*parse_passes("split-reductions"), TritonFuse()])
    (actual,), launched = run_with_triton(program, [x], DEVICE)
    assert launched == 2
    assert_matches(actual.cpu(), expected[0], DTYPES[dtype], what=f"sum_all {dtype}")
