"""Product kernels whose operand tiles, residual and output move through TMA tensor
descriptors (``tma``): against the reference in float16 and bfloat16 with partial
tiles on both axes, on Triton's interpreter on a CPU and compiled on a Hopper GPU; the
groups that cannot take them; the pointer kernel a launch on an unaligned tensor runs."""

from __future__ import annotations

import pytest
import torch

from dnnc.backends.reference.interpreter import ReferenceExecutor
from dnnc.backends.triton import compiler
from dnnc.backends.triton.configs import candidates, config_problem
from dnnc.backends.triton.emitter import CodegenError
from dnnc.backends.triton.kernels import generate
from dnnc.backends.triton.launch import TritonKernel
from dnnc.backends.triton.skeleton import GroupInfo
from dnnc.backends.triton.tma import TMA_CAPABILITY, operands
from dnnc.ir import tcp
from dnnc.ir.program import Program
from dnnc.ir.types import element_of, shape_of, torch_dtype
from tests.backends.triton.helpers import capability, fused_group, typed_program
from tests.numerics import assert_matches

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16}
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")

CONV_RESIDUAL = """func.func @forward(%x: tensor<2x5x7x16xT>, %w: tensor<24x16x1x1xT>, %bias: tensor<1x24x1x1xT>, %res: tensor<2x5x7x24xT>) -> tensor<2x5x7x24xT> {
  %t = tcp.transpose %x {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x5x7x16xT> -> tensor<2x16x5x7xT>
  %c = tcp.conv2d %t, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x16x5x7xT>, tensor<24x16x1x1xT>) -> tensor<2x24x5x7xT>
  %bb = tcp.broadcast %bias : tensor<1x24x1x1xT> to tensor<2x24x5x7xT>
  %a = tcp.add %c, %bb : tensor<2x24x5x7xT>
  %an = tcp.transpose %a {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x24x5x7xT> -> tensor<2x5x7x24xT>
  %s = tcp.add %an, %res : tensor<2x5x7x24xT>
  %r = tcp.clamp %s {min = 0.0 : f64} : tensor<2x5x7x24xT>
  func.return %r : tensor<2x5x7x24xT>
}"""
"""ResNet's residual 1x1 convolution on a channels-last input: 70 pixels x 24 channels
from 16, so 32 x 16 tiles are partial on both axes."""

LINEAR = """func.func @forward(%x: tensor<37x32xT>, %w: tensor<40x32xT>, %bias: tensor<1x40xT>, %res: tensor<37x40xT>) -> (tensor<37x40xT>, tensor<37x40xT>) {
  %wt = tcp.transpose %w {permutation = array<i64: 1, 0>} : tensor<40x32xT> -> tensor<32x40xT>
  %m = tcp.matmul %x, %wt : (tensor<37x32xT>, tensor<32x40xT>) -> tensor<37x40xT>
  %bb = tcp.broadcast %bias : tensor<1x40xT> to tensor<37x40xT>
  %a = tcp.add %m, %bb : tensor<37x40xT>
  %s = tcp.add %a, %res : tensor<37x40xT>
  %g = tcp.tanh %s : tensor<37x40xT>
  func.return %s, %g : tensor<37x40xT>, tensor<37x40xT>
}"""
"""A linear layer (an ``N x K`` weight) with a residual, and two outputs: three output-shaped
tensors, one more than the epilogue moves through TMA (``tma.EPILOGUE_TILES``)."""

CONV_NCHW_OUT = """func.func @forward(%x: tensor<2x5x7x16xT>, %w: tensor<24x16x1x1xT>) -> tensor<2x24x5x7xT> {
  %t = tcp.transpose %x {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x5x7x16xT> -> tensor<2x16x5x7xT>
  %c = tcp.conv2d %t, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x16x5x7xT>, tensor<24x16x1x1xT>) -> tensor<2x24x5x7xT>
  %g = tcp.sigmoid %c : tensor<2x24x5x7xT>
  func.return %g : tensor<2x24x5x7xT>
}"""
"""A 1x1 convolution stored NCHW: no tile of a row-major output, so stored element by element."""

TRANSPOSED_LEFT = """func.func @forward(%x: tensor<48x40xT>, %w: tensor<48x24xT>) -> tensor<40x24xT> {
  %xt = tcp.transpose %x {permutation = array<i64: 1, 0>} : tensor<48x40xT> -> tensor<40x48xT>
  %m = tcp.matmul %xt, %w : (tensor<40x48xT>, tensor<48x24xT>) -> tensor<40x24xT>
  func.return %m : tensor<40x24xT>
}"""
"""A ``K x M`` left operand and a ``K x N`` right one (the tiles transposed the other way)."""

ONE_PIXEL = """func.func @forward(%x: tensor<80x16x1x1xT>, %w: tensor<24x16x1x1xT>) -> tensor<80x24x1x1xT> {
  %c = tcp.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<80x16x1x1xT>, tensor<24x16x1x1xT>) -> tensor<80x24x1x1xT>
  %g = tcp.sigmoid %c : tensor<80x24x1x1xT>
  func.return %g : tensor<80x24x1x1xT>
}"""
"""A squeeze-excite FC as a 1x1 convolution on one pixel per image: its NCHW input is an
images x channels matrix already."""

CASES = {
    "conv_residual": CONV_RESIDUAL,
    "linear": LINEAR,
    "transposed_left": TRANSPOSED_LEFT,
    "conv_nchw_out": CONV_NCHW_OUT,
    "one_pixel": ONE_PIXEL,
}
CONFIG = {"TMA": 1, "BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 16, "num_warps": 4, "num_stages": 2}


def _tma_runs_here() -> None:
    here = capability(DEVICE)
    if here is not None and here < TMA_CAPABILITY:
        pytest.skip(f"sm_{here} has no TMA")


def _run(group: tcp.IsolatedGroupOp, source, config, inputs: list[torch.Tensor], program: Program) -> list[torch.Tensor]:
    kernel = TritonKernel(source, DEVICE, capability(DEVICE), config)
    args = {a: x.to(DEVICE) for a, x in zip(program.entry.body.block.args, inputs)}
    outs = [torch.empty(shape_of(r), dtype=torch_dtype(element_of(r)), device=DEVICE) for r in group.outputs]
    kernel.launch([args[v] for v in group.operands], outs)
    return [o.cpu() for o in outs]


def _inputs(program: Program, rng: torch.Generator) -> list[torch.Tensor]:
    return [torch.randn(shape_of(t), generator=rng).to(torch_dtype(t.element_type)) for t in program.input_types]


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("name", list(CASES))
def test_tma_products_match_reference(name: str, dtype: str, rng: torch.Generator) -> None:
    _tma_runs_here()
    program = typed_program(CASES[name], dtype, "tma")
    inputs = _inputs(program, rng)
    expected = ReferenceExecutor(program).run(inputs)
    group = fused_group(program)
    assert operands(GroupInfo.of(group).anchor, group) is not None
    source = generate(group, CONFIG, interpret=compiler.interpreting())
    assert source.descriptors and source.fallback is not None and not source.fallback.descriptors
    for a, e in zip(_run(group, source, CONFIG, inputs, program), expected):
        assert_matches(a, e, DTYPES[dtype], what=f"{name} ({dtype})")


def test_the_epilogue_reads_the_residual_and_stores_the_output_as_tiles() -> None:
    group = fused_group(typed_program(CONV_RESIDUAL, "f16", "tma"))
    source = generate(group, CONFIG)
    text = source.text
    assert "in0_tile.load([pid_m * BLOCK_M, k0])" in text, text  # pixels x channels of the NHWC input
    assert "in1_tile.load([pid_n * BLOCK_N, k0])" in text  # the weight, N x K, transposed in registers
    assert "in3_tile.load([pid_m * BLOCK_M, pid_n * BLOCK_N])" in text  # the residual
    assert "out0_tile.store([pid_m * BLOCK_M, pid_n * BLOCK_N]" in text
    assert "tl.load(in0" not in text and "tl.store(" not in text
    assert [(d.param, d.tensor, d.shape, d.block) for d in source.descriptors] == [
        ("in0_tile", 0, (70, 16), (32, 16)),
        ("in1_tile", 1, (24, 16), (16, 16)),
        ("in3_tile", 3, (70, 24), (32, 16)),
        ("out0_tile", 4, (70, 24), (32, 16)),
    ]
    assert source.signature["in0_tile"] == "tensordesc<fp16[32, 16]>" and source.tensors == 5
    assert source.grid == (3 * 2, 1, 1)


def test_outputs_beyond_the_epilogue_tiles_or_not_laid_out_as_the_tile_keep_pointer_stores() -> None:
    text = generate(
        fused_group(typed_program(LINEAR, "bf16", "tma")), CONFIG
    ).text  # the residual and the first output take the two tiles
    assert "in3_tile.load(" in text and "out0_tile.store(" in text and "tl.store(out1 +" in text, text
    text = generate(fused_group(typed_program(CONV_NCHW_OUT, "f16", "tma")), CONFIG).text
    assert "in0_tile.load(" in text and "tl.store(out0 +" in text and "_tile.store" not in text, text


def test_groups_without_row_major_operands_get_no_tma_tiles() -> None:
    unaligned = CONV_RESIDUAL.replace("x16xT", "x12xT").replace("24x16x1x1", "24x12x1x1").replace("2x16x5x7", "2x12x5x7")
    for program in (typed_program(CONV_RESIDUAL, "f32", "tma"), typed_program(unaligned, "f16", "tma")):
        group = fused_group(program)
        info = GroupInfo.of(group)
        assert operands(info.anchor, group) is None
        assert not any("TMA" in c for c in candidates(info, 90))
        with pytest.raises(CodegenError, match="TMA tiles need"):
            generate(group, CONFIG)


def test_tma_configs_come_first_on_hopper_only() -> None:
    program = typed_program(
        CONV_RESIDUAL.replace("2x5x7", "8x9x9").replace("2x16x5x7", "8x16x9x9").replace("2x24x5x7", "8x24x9x9"), "f16", "tma"
    )
    info = GroupInfo.of(fused_group(program))
    assert candidates(info, 90)[0].get("TMA") == 1
    assert not any("TMA" in c for c in candidates(info, 80)) and not any("TMA" in c for c in candidates(info))
    assert config_problem("TMA", 1) is None and "TMA is 1" in (config_problem("TMA", 2) or "")


def test_an_unaligned_tensor_runs_the_pointer_kernel(rng: torch.Generator) -> None:
    _tma_runs_here()
    program = typed_program(CONV_RESIDUAL, "f16", "tma")
    inputs = _inputs(program, rng)
    expected = ReferenceExecutor(program).run(inputs)
    group = fused_group(program)
    source = generate(group, CONFIG, interpret=compiler.interpreting())
    kernel = TritonKernel(source, DEVICE, capability(DEVICE), CONFIG)
    args = {a: x.to(DEVICE) for a, x in zip(program.entry.body.block.args, inputs)}
    shifted = torch.empty(args[program.entry.body.block.args[0]].numel() + 1, dtype=torch.float16, device=DEVICE)[1:]
    shifted.copy_(args[program.entry.body.block.args[0]].flatten())
    args[program.entry.body.block.args[0]] = shifted.view(2, 5, 7, 16)
    (out,) = [torch.empty(shape_of(r), dtype=torch.float16, device=DEVICE) for r in group.outputs]
    kernel.launch([args[v] for v in group.operands], [out])
    assert kernel._fallback is not None
    assert_matches(out.cpu(), expected[0], torch.float16)
