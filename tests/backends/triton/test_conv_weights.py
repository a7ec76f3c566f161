"""``triton-conv-weights`` end to end: a partitioned 3x3 convolution on a channels-last
input, its weight stored OHWI by the pass, computes what the reference computes on the
program before the pass (Triton's interpreter on a CPU, CUDA on a GPU), unsplit and
split-K, in float32, float16 and bfloat16; and its kernel's weight loads step along the
weight's channels, which are now contiguous."""

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
from tests.backends.triton.helpers import run_with_triton, windowed_conv
from tests.numerics import assert_matches

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def _program(dtype: str, rng: torch.Generator) -> Program:
    """ResNet's batch-1 3x3 convolution in small, between channels-last neighbours."""
    return windowed_conv(1, 5, 40, 24, dtype, rng)


def _group(program: Program) -> tcp.IsolatedGroupOp:
    (group,) = [op for op in program.entry.body.walk() if isinstance(op, tcp.IsolatedGroupOp)]
    return group


@pytest.mark.parametrize("split", [1, 4])
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_a_window_reading_ohwi_weights_matches_the_reference(dtype: str, split: int, rng: torch.Generator) -> None:
    program = _program(dtype, rng)
    inputs = [torch.randn(1, 5, 5, 40, generator=rng).to(DTYPES[dtype])]
    expected = ReferenceExecutor(program).run(inputs)
    run_passes(program, [TritonConvWeights(), TritonFuse()])
    assert "w.ohwi" in program.params
    config = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "num_warps": 4, "num_stages": 2} | (
        {"SPLIT_K": split} if split > 1 else {}
    )
    (conv,) = [op for op in _group(program).walk() if isinstance(op, tcp.Conv2dOp)]
    conv.attributes[SPEC_CONFIG_ATTR] = StringAttr(json.dumps(config))  # as a tuning spec gives it
    actual, launched = run_with_triton(program, inputs, DEVICE)
    assert launched == 1
    assert_matches(actual[0].cpu(), expected[0], DTYPES[dtype], what=f"3x3 on OHWI weights ({dtype}, split {split})")


def test_the_weight_tile_steps_along_contiguous_channels(rng: torch.Generator) -> None:
    program = _program("f16", rng)
    run_passes(program, [TritonConvWeights(), TritonFuse()])
    text = generate(_group(program), {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "num_warps": 4, "num_stages": 2}).text
    # the weight (in1, 24 x 3 x 3 x 40): channel kc innermost, the window's (khi, kwi) above it
    assert "(o_i) * 360 + (khi0) * 120 + (kwi0) * 40 + kc0" in text, text
