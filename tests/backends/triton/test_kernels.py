"""Every Triton kernel kind against the reference backend: odd sizes, broadcasting,
data movement, prologues and epilogues, in float32, float16 and bfloat16. On a CPU
these run on Triton's interpreter; on a GPU machine the same tests run on CUDA."""

from __future__ import annotations

import collections

import pytest
import torch

from dnnc.backends.reference.interpreter import ReferenceExecutor
from dnnc.backends.triton import TritonFuse
from dnnc.backends.triton.ops import KINDS
from dnnc.ir import tcp
from dnnc.pipeline import run_passes
from tests.backends.triton.cases import CASES, KIND_CASES, Case
from tests.backends.triton.helpers import run_with_triton
from tests.numerics import assert_matches

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def test_every_kind_is_exercised() -> None:
    assert set(KINDS) == KIND_CASES


def _kinds(program) -> list[str]:
    return sorted(op.attributes["kind"].data for op in program.entry.body.walk() if isinstance(op, tcp.IsolatedGroupOp))


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_kernels_match_reference(case: Case, dtype: str, rng: torch.Generator) -> None:
    program = case.program(dtype)
    inputs = case.inputs(program, rng)
    expected = ReferenceExecutor(program).run(inputs)
    run_passes(program, [TritonFuse()])
    assert _kinds(program) == sorted(case.kinds)
    top = [op for op in program.entry.body.block.ops if not isinstance(op, tcp.ParamOp)]
    assert all(isinstance(op, tcp.IsolatedGroupOp) for op in top[:-1]), "every op is in a Triton group"
    actual, launched = run_with_triton(program, inputs, DEVICE)
    assert launched == len(case.kinds)
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert_matches(a.cpu(), e, DTYPES[dtype] if e.is_floating_point() else None, what=f"{case.name} output {i}")


def test_single_op_groups_cover_every_op_kind(rng: torch.Generator) -> None:
    """With products left out, matmul runs outside while its epilogue still gets a kernel."""
    case = next(c for c in CASES if c.name == "matmul_epilogue")
    program = case.program("f32")
    inputs = case.inputs(program, rng)
    expected = ReferenceExecutor(program).run(inputs)
    run_passes(program, [TritonFuse(products=False)])
    ops = collections.Counter(op.name for op in program.entry.body.block.ops)
    assert ops["tcp.matmul"] == 1 and ops["tcp.batch_matmul"] == 1
    actual, _ = run_with_triton(program, inputs, DEVICE)
    for a, e in zip(actual, expected):
        assert_matches(a.cpu(), e, torch.float32)


GELU_IR = """
func.func @forward(%x: tensor<40001xf32>) -> tensor<40001xf32> {
  %g = tcp.gelu %x {approximate = "none"} : tensor<40001xf32>
  func.return %g : tensor<40001xf32>
}
"""


def test_exact_gelu_holds_across_its_range() -> None:
    """The kernels' exact GELU (erfc's rational-exponential form, not libdevice's erf)
    against float64 over [-12, 12], tails included: within 1e-6 everywhere, and within
    float16's resolution (2^-11 of the value) wherever the value is at least 1e-3."""
    from dnnc.ir.params import ParamStore
    from dnnc.ir.program import Program
    from dnnc.ir.text import parse_ir

    program = Program(parse_ir(GELU_IR, "gelu"), ParamStore())
    run_passes(program, [TritonFuse()])
    x = torch.linspace(-12.0, 12.0, 40001)
    (got,), _ = run_with_triton(program, [x.to(DEVICE)], DEVICE)
    want = torch.nn.functional.gelu(x.double())
    error = (got.cpu().double() - want).abs()
    assert error.max() <= 1e-6
    sized = want.abs() >= 1e-3
    assert (error[sized] / want[sized].abs()).max() <= 2.0**-11


DEPTHWISE_STORED_NHWC = """
func.func @forward(%x: tensor<2x5x9x7xT>, %w: tensor<5x1x3x3xT>) -> tensor<2x9x7x5xT> {
  %g = tcp.isolated_group(%x, %w) {backend = "triton", kind = "conv2d"} : (tensor<2x5x9x7xT>, tensor<5x1x3x3xT>) -> tensor<2x9x7x5xT> {
  ^bb0(%a: tensor<2x5x9x7xT>, %b: tensor<5x1x3x3xT>):
    %c = tcp.conv2d %a, %b {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 5 : i64} : (tensor<2x5x9x7xT>, tensor<5x1x3x3xT>) -> tensor<2x5x9x7xT>
    %r = tcp.clamp %c {min = 0.0 : f64} : tensor<2x5x9x7xT>
    %t = tcp.transpose %r {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x5x9x7xT> -> tensor<2x9x7x5xT>
    tcp.yield %t : tensor<2x9x7x5xT>
  }
  func.return %g : tensor<2x9x7x5xT>
}
"""


@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_a_depthwise_group_stores_a_transposed_output(dtype: str, rng: torch.Generator) -> None:
    """The direct kernel (an NCHW input) stores any output permuted from its result as the
    product kernel does (``skeleton.store_outputs``), a transpose ``triton-fuse`` puts in
    its group included."""
    case = Case("depthwise_stored_nhwc", ("conv2d",), DEPTHWISE_STORED_NHWC)
    program = case.program(dtype)
    inputs = case.inputs(program, rng)
    expected = ReferenceExecutor(program).run(inputs)
    actual, launched = run_with_triton(program, inputs, DEVICE)
    assert launched == 1
    assert_matches(actual[0].cpu(), expected[0], DTYPES[dtype], what="depthwise stored NHWC")
