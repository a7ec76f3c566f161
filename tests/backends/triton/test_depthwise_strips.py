"""Depthwise convolutions of channels-last inputs on strips of output columns
(``kernels._channelwise_strips``): every config against the reference, in float32,
float16 and bfloat16, over strides, dilations, channel multipliers, uneven padding,
widths a strip does not divide, and epilogues stored NHWC. On a CPU these run on Triton's
interpreter; on a GPU machine the same tests run on CUDA."""

from __future__ import annotations

import pytest
import torch

from dnnc.backends.reference.interpreter import ReferenceExecutor
from dnnc.backends.triton import TritonFuse
from dnnc.backends.triton.configs import candidates, channelwise_strips, config_problem, strip_width
from dnnc.backends.triton.conv_weights import TritonConvWeights
from dnnc.backends.triton.emitter import CodegenError
from dnnc.backends.triton.kernels import generate
from dnnc.backends.triton.launch import TritonKernel
from dnnc.backends.triton.skeleton import GroupInfo
from dnnc.ir import tcp
from dnnc.ir.params import ParamStore
from dnnc.ir.program import Program
from dnnc.ir.text import parse_ir
from dnnc.ir.types import element_of, shape_of, torch_dtype
from dnnc.pipeline import run_passes
from tests.backends.triton.helpers import TORCH_DTYPES, capability, fused_group, run_with_triton, typed_program
from tests.numerics import assert_matches

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")

CONVNEXT = """func.func @forward(%x: tensor<1x9x14x8xT>, %w: tensor<8x1x7x7xT>, %b: tensor<1x8x1x1xT>) -> tensor<1x9x14x8xT> {
  %t = tcp.transpose %x {permutation = array<i64: 0, 3, 1, 2>} : tensor<1x9x14x8xT> -> tensor<1x8x9x14xT>
  %c = tcp.conv2d %t, %w {stride = array<i64: 1, 1>, padding = array<i64: 3, 3, 3, 3>, dilation = array<i64: 1, 1>, groups = 8 : i64} : (tensor<1x8x9x14xT>, tensor<8x1x7x7xT>) -> tensor<1x8x9x14xT>
  %bb = tcp.broadcast %b : tensor<1x8x1x1xT> to tensor<1x8x9x14xT>
  %a = tcp.add %c, %bb : tensor<1x8x9x14xT>
  %g = tcp.gelu %a {approximate = "none"} : tensor<1x8x9x14xT>
  %n = tcp.transpose %g {permutation = array<i64: 0, 2, 3, 1>} : tensor<1x8x9x14xT> -> tensor<1x9x14x8xT>
  func.return %n : tensor<1x9x14x8xT>
}"""
"""ConvNeXt's 7x7 convolution with its bias and a GELU, NHWC in and out."""

STRIDED = """func.func @forward(%x: tensor<2x9x10x3xT>, %w: tensor<6x1x3x3xT>) -> tensor<2x6x5x5xT> {
  %t = tcp.transpose %x {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x9x10x3xT> -> tensor<2x3x9x10xT>
  %r = tcp.clamp %t {min = 0.0 : f64, max = 6.0 : f64} : tensor<2x3x9x10xT>
  %c = tcp.conv2d %r, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 0>, dilation = array<i64: 1, 1>, groups = 3 : i64} : (tensor<2x3x9x10xT>, tensor<6x1x3x3xT>) -> tensor<2x6x5x5xT>
  func.return %c : tensor<2x6x5x5xT>
}"""
"""A strided 3x3 one with a channel multiplier of 2 after a ReLU6 prologue (zero where the
window is padded, whatever the prologue makes of a zero), uneven padding, stored NCHW."""

DILATED = """func.func @forward(%x: tensor<1x10x13x5xT>, %w: tensor<5x1x5x5xT>) -> tensor<1x5x3x11xT> {
  %t = tcp.transpose %x {permutation = array<i64: 0, 3, 1, 2>} : tensor<1x10x13x5xT> -> tensor<1x5x10x13xT>
  %e = tcp.exp %t : tensor<1x5x10x13xT>
  %c = tcp.conv2d %e, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 1, 2, 0>, dilation = array<i64: 2, 1>, groups = 5 : i64} : (tensor<1x5x10x13xT>, tensor<5x1x5x5xT>) -> tensor<1x5x3x11xT>
  func.return %c : tensor<1x5x3x11xT>
}"""
"""A 5x5 one dilated along the height, on a width of 11 (strips of 7, the second masked),
after an exp prologue (exp(0) = 1: padded taps must still read zero)."""

CASES = {"convnext": CONVNEXT, "strided": STRIDED, "dilated": DILATED}


def _group(ir: str, dtype: str) -> tuple[tcp.IsolatedGroupOp, GroupInfo]:
    group = fused_group(typed_program(ir, dtype, "group"))
    return group, GroupInfo.of(group)


def _configs(info: GroupInfo) -> list[dict[str, int]]:
    """On a GPU every config the compiler offers, and strips of 1, 3 and 8 columns; on the
    interpreter (seconds a launch) the first and a strip of 3 without ``HALF``."""
    offered = candidates(info)
    first = next(c for c in offered if not c.get("HALF"))
    if DEVICE.type == "cpu":
        return [offered[0], {**first, "STRIP": 3}]
    return [*offered, *({**first, "STRIP": s} for s in (1, 3, 8))]


@pytest.mark.parametrize("dtype", list(TORCH_DTYPES))
@pytest.mark.parametrize("case", list(CASES))
def test_every_strip_config_matches_the_reference(case: str, dtype: str, rng: torch.Generator) -> None:
    ir = CASES[case]
    program = typed_program(ir, dtype, "group")
    inputs = [torch.randn(shape_of(t), generator=rng).to(torch_dtype(t.element_type)) for t in program.input_types]
    (expected,) = ReferenceExecutor(program).run(inputs)
    program = typed_program(ir, dtype, "group")
    group = fused_group(program)
    info = GroupInfo.of(group)
    args = {a: x.to(DEVICE) for a, x in zip(program.entry.body.block.args, inputs)}
    (y,) = group.outputs
    configs = _configs(info)
    assert all("STRIP" in c for c in configs)
    assert any(c.get("HALF") for c in configs) == (dtype == "f16")
    for config in configs:
        source = generate(group, config, interpret=DEVICE.type == "cpu", info=info)
        kernel = TritonKernel(source, DEVICE, capability(DEVICE), config)
        out = torch.full(shape_of(y), float("nan"), dtype=torch_dtype(element_of(y)), device=DEVICE)
        kernel.launch([args[v] for v in group.operands], [out])
        assert_matches(out.cpu(), expected, TORCH_DTYPES[dtype], what=f"{case} {config} ({dtype})")


def test_a_window_row_reads_each_input_column_once() -> None:
    """A strip of 7 over a 7x7 window loads 13 input columns a window row, not 49 taps."""
    group, info = _group(CONVNEXT, "f16")
    config = {"BLOCK_M": 16, "BLOCK_N": 8, "STRIP": 7, "HALF": 1, "num_warps": 1}
    text = generate(group, config, info=info).text
    loop = text.split("for kh_i in range(7):")[1].split("acc0 += ")[0]
    assert loop.count("tl.load(") == 7 + 13  # the row's weights, then its input columns
    assert text.count("tl.store(") == 7  # one per column of the strip


def test_half_configs_are_float16_only() -> None:
    _, info = _group(CONVNEXT, "bf16")
    group, _ = _group(CONVNEXT, "bf16")
    with pytest.raises(CodegenError, match="HALF sums a window row"):
        generate(group, {"BLOCK_M": 16, "BLOCK_N": 8, "STRIP": 7, "HALF": 1}, info=info)


def test_strip_widths_and_config_checks() -> None:
    assert [strip_width(w) for w in (112, 56, 28, 14, 7, 16, 30, 9, 3)] == [7, 7, 7, 7, 7, 8, 6, 7, 3]
    assert config_problem("STRIP", 17) is not None and config_problem("STRIP", 7) is None
    assert config_problem("HALF", 2) is not None and config_problem("HALF", 1) is None


def test_an_nchw_input_keeps_the_pixel_tiles() -> None:
    """Read NCHW, a depthwise convolution keeps the tiles that run pixels along the threads."""
    ir = """func.func @forward(%x: tensor<1x8x9x14xT>, %w: tensor<8x1x3x3xT>) -> tensor<1x8x9x14xT> {
  %c = tcp.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 8 : i64} : (tensor<1x8x9x14xT>, tensor<8x1x3x3xT>) -> tensor<1x8x9x14xT>
  func.return %c : tensor<1x8x9x14xT>
}"""
    _, info = _group(ir, "f16")
    assert not any("STRIP" in c for c in candidates(info))
    assert channelwise_strips(info.anchor)  # type: ignore[arg-type]


def test_ihwo_weights_step_along_the_channels(rng: torch.Generator) -> None:
    """``triton-conv-weights`` stores a depthwise weight IHWO: the kernel's weight loads
    step along contiguous output channels, and the program still computes the reference's
    result (its first config, the interpreter on a CPU)."""
    ir = """func.func @forward(%x: tensor<2x9x14x8xf16>) -> tensor<2x8x9x14xf16> {
  %w = tcp.param @w : tensor<8x1x7x7xf16>
  %t = tcp.transpose %x {dnnc.part = 0 : i64, permutation = array<i64: 0, 3, 1, 2>} : tensor<2x9x14x8xf16> -> tensor<2x8x9x14xf16>
  %c = tcp.conv2d %t, %w {dnnc.part = 0 : i64, stride = array<i64: 1, 1>, padding = array<i64: 3, 3, 3, 3>, dilation = array<i64: 1, 1>, groups = 8 : i64} : (tensor<2x8x9x14xf16>, tensor<8x1x7x7xf16>) -> tensor<2x8x9x14xf16>
  func.return %c : tensor<2x8x9x14xf16>
}"""
    params = ParamStore()
    params.add("w", torch.randn(8, 1, 7, 7, generator=rng).half())
    program = Program(parse_ir(ir, "ihwo"), params)
    inputs = [torch.randn(2, 9, 14, 8, generator=rng).half()]
    expected = ReferenceExecutor(program).run(inputs)
    run_passes(program, [TritonConvWeights(), TritonFuse()])
    assert "w.ihwo" in program.params
    (group,) = [op for op in program.entry.body.walk() if isinstance(op, tcp.IsolatedGroupOp)]
    text = generate(group, {"BLOCK_M": 16, "BLOCK_N": 8, "STRIP": 7, "num_warps": 1}).text
    assert "(kh_i) * 56 + (3) * 8 + rc" in text, text  # tap (kh_i, 3) of 8 channels
    actual, launched = run_with_triton(program, inputs, DEVICE)
    assert launched == 1
    assert_matches(actual[0].cpu(), expected[0], torch.float16, what="depthwise on IHWO weights")
