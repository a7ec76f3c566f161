"""A product's operand tiles that are plain loads feed ``tl.dot`` as loaded (no float32
select between them), and a strided implicit-GEMM convolution on a channels-last input
still computes what the reference computes with them (Triton's interpreter on a CPU,
CUDA on a GPU): K steps inside one tap of the window and across two, split-K, in
float32, float16 and bfloat16."""

from __future__ import annotations

import json

import pytest
import torch
from xdsl.dialects.builtin import StringAttr

from dnnc.backends.interface import SPEC_CONFIG_ATTR
from dnnc.backends.reference.interpreter import ReferenceExecutor
from dnnc.backends.triton import TritonFuse
from dnnc.backends.triton.conv_weights import TritonConvWeights
from dnnc.backends.triton.kernels import generate
from dnnc.ir import tcp
from dnnc.ir.program import Program
from dnnc.pipeline import run_passes
from tests.backends.triton.cases import CASES
from tests.backends.triton.helpers import run_with_triton, windowed_conv
from tests.numerics import assert_matches

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def _program(dtype: str, rng: torch.Generator) -> Program:
    """A strided 3x3 convolution + bias + ReLU on 32 channels between channels-last
    neighbours: K steps of 16 or 32 lie in one tap, of 64 span two."""
    return windowed_conv(2, 7, 32, 16, dtype, rng, stride=2)


def _conv(program: Program) -> tcp.Conv2dOp:
    (conv,) = [op for op in program.entry.body.walk() if isinstance(op, tcp.Conv2dOp)]
    return conv


def _config(block_k: int, split: int) -> dict[str, int]:
    return {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": block_k, "num_warps": 4, "num_stages": 2} | (
        {"SPLIT_K": split} if split > 1 else {}
    )


@pytest.mark.parametrize(("block_k", "split"), [(16, 1), (32, 1), (64, 1), (16, 3)])
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_a_strided_window_matches_the_reference(dtype: str, block_k: int, split: int, rng: torch.Generator) -> None:
    program = _program(dtype, rng)
    inputs = [torch.randn(2, 7, 7, 32, generator=rng).to(DTYPES[dtype])]
    expected = ReferenceExecutor(program).run(inputs)
    run_passes(program, [TritonConvWeights(), TritonFuse()])
    _conv(program).attributes[SPEC_CONFIG_ATTR] = StringAttr(json.dumps(_config(block_k, split)))  # as a spec gives it
    actual, launched = run_with_triton(program, inputs, DEVICE)
    assert launched == 1
    assert_matches(actual[0].cpu(), expected[0], DTYPES[dtype], what=f"3x3/2 ({dtype}, BLOCK_K {block_k}, split {split})")


def _text(block_k: int, rng: torch.Generator) -> str:
    program = _program("f16", rng)
    run_passes(program, [TritonConvWeights(), TritonFuse()])
    (group,) = [op for op in program.entry.body.walk() if isinstance(op, tcp.IsolatedGroupOp)]
    return generate(group, _config(block_k, 1)).text


def test_loaded_operand_tiles_feed_the_dot_as_loaded(rng: torch.Generator) -> None:
    text = _text(32, rng)
    assert "acc += tl.dot(x0, x2)" in text, text
    assert "tl.where(amask" not in text and "tl.where(bmask" not in text, text


def _attention_text(name: str) -> str:
    (case,) = [c for c in CASES if c.name == name]
    program = case.program("f16")
    run_passes(program, [TritonFuse()])
    groups = [op for op in program.entry.body.walk() if isinstance(op, tcp.IsolatedGroupOp)]
    (group,) = [g for g in groups if any(isinstance(op, tcp.AttentionOp) for op in g.walk())]
    return generate(group, {"BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 4, "num_stages": 2}).text


def test_attention_reads_tiles_that_fill_their_head_dim_as_loaded() -> None:
    text = _attention_text("attention_heads_split_bool_mask")  # head dim 16
    for mask in ("qmask", "kmask", "vmask"):
        assert f"tl.where({mask}" not in text, text
    assert "s = tl.dot(x0, x2)" in text and "tl.dot(p.to(tl.float16), x5)" in text, text


def test_attention_selects_tiles_of_a_head_dim_short_of_its_block() -> None:
    text = _attention_text("attention_gqa_head_dim_40")  # 40 in a block of 64, 24 in 32
    for mask in ("qmask", "kmask", "vmask"):
        assert f"tl.where({mask}" in text, text


def test_a_bias_is_loaded_as_one_row_of_the_tile(rng: torch.Generator) -> None:
    text = _text(32, rng)
    assert "= tl.load(in2 + o_i, mask=rn < 16, other=0)" in text, text
    assert "tl.broadcast_to(o_i" not in text, text


def test_a_depthwise_bias_is_loaded_once_per_channel() -> None:
    """The depthwise kernel's tile is channels by pixels: its bias is one column of it."""
    (case,) = [c for c in CASES if c.name == "depthwise_direct"]
    program = case.program("f16")
    run_passes(program, [TritonFuse()])
    group = next(op for op in program.entry.body.walk() if isinstance(op, tcp.IsolatedGroupOp))
    text = generate(group, {"BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 4, "num_stages": 2}).text
    assert "= tl.load(in2 + rc, mask=rc < 6, other=0)" in text, text
    assert "tl.broadcast_to(rc" not in text, text


def test_masks_test_k_only_where_a_step_can_pass_its_end(rng: torch.Generator) -> None:
    whole = _text(32, rng)  # K = 3 * 3 * 32 = 288 = 9 steps of 32
    assert "amask = (rm < 32) & inb0" in whole and "bmask = (rn < 16)" in whole, whole
    program = windowed_conv(2, 7, 20, 16, "f16", rng, stride=2)  # K = 180: the last step of 32 passes it
    run_passes(program, [TritonConvWeights(), TritonFuse()])
    (group,) = [op for op in program.entry.body.walk() if isinstance(op, tcp.IsolatedGroupOp)]
    cut = generate(group, _config(32, 1)).text
    assert "(ka < 180)" in cut and "bmask = (kb < 180) & (rn < 16)" in cut, cut
