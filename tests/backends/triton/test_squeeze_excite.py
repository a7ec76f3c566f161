"""A squeeze-excite block (EfficientNet's, MobileNetV3's) on Triton kernels: the depthwise
convolution stores channels-last although two readers take its result (the mean and the
scaling), the mean reads that as rows of channels, and the scaling runs as the projection's
prologue on the channels-last tensor. Its kernels against the reference on fresh random
inputs; on a CPU on Triton's interpreter, on a GPU machine on CUDA."""

from __future__ import annotations

import pytest
import torch

from dnnc.backends.reference.interpreter import ReferenceExecutor
from dnnc.ir import tcp
from dnnc.ir.analysis import TO_NCHW, transposes
from dnnc.ir.params import ParamStore
from dnnc.ir.program import Program
from dnnc.ir.text import parse_ir
from dnnc.ir.types import shape_of
from dnnc.pipeline import run_passes
from tests.backends.triton.helpers import TORCH_DTYPES, run_with_triton
from tests.numerics import assert_matches

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")

SCALED_PROJECTION = """  %gb = tcp.broadcast %g {dnnc.part = 4 : i64} : tensor<2x16x1x1xT> to tensor<2x16x6x6xT>
  %y = tcp.mul %s, %gb {dnnc.part = 4 : i64} : tensor<2x16x6x6xT>
  %wp = tcp.param @wp : tensor<8x16x1x1xT>
  %p = tcp.conv2d %y, %wp {dnnc.part = 4 : i64, stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x16x6x6xT>, tensor<8x16x1x1xT>) -> tensor<2x8x6x6xT>
  func.return %p : tensor<2x8x6x6xT>
}"""
"""The block's end: the activation %s scaled by the gate %g, then a 1x1 projection."""

BLOCK = (
    """func.func @forward(%x: tensor<2x16x6x6xT>) -> tensor<2x8x6x6xT> {
  %w = tcp.param @w : tensor<16x1x3x3xT>
  %b = tcp.param @b : tensor<1x16x1x1xT>
  %c = tcp.conv2d %x, %w {dnnc.part = 0 : i64, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 16 : i64} : (tensor<2x16x6x6xT>, tensor<16x1x3x3xT>) -> tensor<2x16x6x6xT>
  %bb = tcp.broadcast %b {dnnc.part = 0 : i64} : tensor<1x16x1x1xT> to tensor<2x16x6x6xT>
  %a = tcp.add %c, %bb {dnnc.part = 0 : i64} : tensor<2x16x6x6xT>
  %s = tcp.silu %a {dnnc.part = 0 : i64} : tensor<2x16x6x6xT>
  %m = tcp.reduce_mean %s {dnnc.part = 1 : i64, axes = array<i64: 2, 3>, keepdim = true} : tensor<2x16x6x6xT> -> tensor<2x16x1x1xT>
  %w1 = tcp.param @w1 : tensor<4x16x1x1xT>
  %r = tcp.conv2d %m, %w1 {dnnc.part = 2 : i64, stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x16x1x1xT>, tensor<4x16x1x1xT>) -> tensor<2x4x1x1xT>
  %rs = tcp.silu %r {dnnc.part = 2 : i64} : tensor<2x4x1x1xT>
  %w2 = tcp.param @w2 : tensor<16x4x1x1xT>
  %e = tcp.conv2d %rs, %w2 {dnnc.part = 3 : i64, stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x4x1x1xT>, tensor<16x4x1x1xT>) -> tensor<2x16x1x1xT>
  %g = tcp.sigmoid %e {dnnc.part = 3 : i64} : tensor<2x16x1x1xT>
"""
    + SCALED_PROJECTION
)
"""Partitioned as the compiler marks it (``dnnc.part``): the depthwise convolution with its
bias and SiLU, the mean, the two FCs, and the scaling with the projection."""

AFTER_A_CHANNELS_LAST_PRODUCER = (
    """func.func @forward(%x: tensor<2x6x6x16xT>) -> tensor<2x8x6x6xT> {
  %t = tcp.transpose %x {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x6x6x16xT> -> tensor<2x16x6x6xT>
  %b = tcp.param @b : tensor<1x16x1x1xT>
  %bb = tcp.broadcast %b {dnnc.part = 1 : i64} : tensor<1x16x1x1xT> to tensor<2x16x6x6xT>
  %a = tcp.add %t, %bb {dnnc.part = 1 : i64} : tensor<2x16x6x6xT>
  %s = tcp.silu %a {dnnc.part = 1 : i64} : tensor<2x16x6x6xT>
  %m = tcp.reduce_mean %s {dnnc.part = 1 : i64, axes = array<i64: 2, 3>, keepdim = true} : tensor<2x16x6x6xT> -> tensor<2x16x1x1xT>
  %g = tcp.sigmoid %m {dnnc.part = 3 : i64} : tensor<2x16x1x1xT>
"""
    + SCALED_PROJECTION
)
"""The depthwise convolution left to cuDNN (its NHWC result the argument): the bias and SiLU
join the mean's row kernel, which stores their result NHWC at the positions it reads."""

TRITON_LOWERING = (
    "triton-channels-last,sink-transposes,simplify-shapes,fold-params{max-growth=3.0},dce,triton-conv-weights,triton-fuse,dce"
)
"""``PARTITIONED`` without the cuDNN passes (every group here is a Triton one)."""


SHAPES = {"w": (16, 1, 3, 3), "b": (1, 16, 1, 1), "w1": (4, 16, 1, 1), "w2": (16, 4, 1, 1), "wp": (8, 16, 1, 1)}


def _program(dtype: str, rng: torch.Generator, ir: str = BLOCK) -> Program:
    params = ParamStore()
    for name, shape in SHAPES.items():
        if f"@{name} " in ir:
            params.add(name, (torch.randn(shape, generator=rng) / 2).to(TORCH_DTYPES[dtype]))
    return Program(parse_ir(ir.replace("xT>", f"x{dtype}>"), "squeeze_excite"), params)


def _groups(program: Program) -> list[tcp.IsolatedGroupOp]:
    return [op for op in program.entry.body.block.ops if isinstance(op, tcp.IsolatedGroupOp)]


def test_the_depthwise_result_is_stored_channels_last(rng: torch.Generator) -> None:
    program = _program("f32", rng)
    run_passes(program, TRITON_LOWERING)
    groups = _groups(program)
    assert [g.attributes["kind"].data for g in groups] == ["conv2d", "reduce", "conv2d", "conv2d", "conv2d"]  # type: ignore[attr-defined]
    depthwise, mean, _, _, projection = groups
    assert shape_of(depthwise.outputs[0]) == (2, 6, 6, 16)  # NHWC, read by the mean and the projection
    assert mean.operands[0] is depthwise.outputs[0]
    assert any(transposes(op, TO_NCHW) for op in mean.body.walk())  # read as rows of channels
    assert depthwise.outputs[0] in projection.operands
    (mul,) = [op for op in projection.body.walk() if isinstance(op, tcp.MulOp)]
    assert shape_of(mul.result) == (2, 6, 6, 16)  # the scaling, channels-last, in the projection's kernel
    assert not any(isinstance(op, tcp.TransposeOp) for op in program.entry.body.block.ops)


def test_after_a_channels_last_producer_the_activation_is_stored_by_the_mean(rng: torch.Generator) -> None:
    program = _program("f32", rng, AFTER_A_CHANNELS_LAST_PRODUCER)
    run_passes(program, TRITON_LOWERING)
    groups = _groups(program)
    assert [g.attributes["kind"].data for g in groups] == ["reduce", "pointwise", "conv2d"]  # type: ignore[attr-defined]
    mean, _, projection = groups
    assert [shape_of(y) for y in mean.outputs] == [(2, 6, 6, 16), (2, 16, 1, 1)]
    assert mean.outputs[0] in projection.operands


FORMS = {
    "block": (BLOCK, (2, 16, 6, 6), 5),
    "after_channels_last_producer": (AFTER_A_CHANNELS_LAST_PRODUCER, (2, 6, 6, 16), 3),
}
"""Each program, its input's shape and the Triton kernels it runs as."""


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("form", list(FORMS))
def test_kernels_match_the_reference(form: str, dtype: str, rng: torch.Generator) -> None:
    ir, shape, kernels = FORMS[form]
    program = _program(dtype, rng, ir)
    inputs = [torch.randn(shape, generator=rng).to(TORCH_DTYPES[dtype])]
    expected = ReferenceExecutor(program).run(inputs)
    run_passes(program, TRITON_LOWERING)
    actual, launched = run_with_triton(program, inputs, DEVICE)
    assert launched == kernels
    assert_matches(actual[0].cpu(), expected[0], TORCH_DTYPES[dtype], what=f"squeeze-excite {form} ({dtype})")
