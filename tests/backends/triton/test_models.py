"""The GPT-2 and ViT blocks after ``triton-fuse`` with matmuls left out: every group
runs as a generated Triton kernel, the matmuls (and the patch conv) by the reference
rules. On a CPU against the reference backend (Triton's interpreter); on a GPU
against PyTorch eager."""

from __future__ import annotations

import collections
import copy

import pytest
import torch

from dnnc.backends.reference.interpreter import ReferenceExecutor
from dnnc.backends.triton import TritonFuse
from dnnc.backends.triton.ops import PRODUCT_ANCHORS
from dnnc.ir import tcp
from dnnc.pipeline import run_passes
from tests.backends.triton.helpers import run_with_triton
from tests.numerics import assert_matches, tf32

MODELS = {
    "gpt2_block": {"layer_norm": 3, "softmax": 1, "pointwise": 5, "transpose": 1},
    "vit_block": {"layer_norm": 3, "softmax": 1},
}
"""Kernels of each kind at least. GPT-2's key, sliced from the merged projection, split
into heads and transposed for the scores, is a tiled transpose: it is read along the
head's 64 lanes and written along the 128 positions."""


def _fused(canonical_models, name: str):
    program, model, inputs = canonical_models[name]
    program = copy.deepcopy(program)
    run_passes(program, [TritonFuse(products=False)])
    return program, model, inputs


@pytest.mark.parametrize("name", list(MODELS))
def test_fusion_leaves_only_products_and_views(canonical_models, name: str) -> None:
    program, _, _ = _fused(canonical_models, name)
    top = collections.Counter(type(op) for op in program.entry.body.block.ops)
    allowed = {tcp.IsolatedGroupOp, tcp.ParamOp, tcp.ReshapeOp, *PRODUCT_ANCHORS}
    assert set(top) - allowed == {type(program.entry.body.block.last_op)}
    kinds = collections.Counter(
        op.attributes["kind"].data for op in program.entry.body.block.ops if isinstance(op, tcp.IsolatedGroupOp)
    )
    for kind, at_least in MODELS[name].items():
        assert kinds[kind] >= at_least, kinds
    for group in program.entry.body.walk():
        if isinstance(group, tcp.IsolatedGroupOp):
            assert not any(isinstance(op, PRODUCT_ANCHORS) for op in group.body.walk())


@pytest.mark.skipif(torch.cuda.is_available(), reason="the GPU variant below compares with eager")
@pytest.mark.parametrize("name", list(MODELS))
def test_block_matches_reference_on_interpreter(canonical_models, name: str) -> None:
    program, _, inputs = _fused(canonical_models, name)
    expected = ReferenceExecutor(canonical_models[name][0]).run(inputs)
    actual, launched = run_with_triton(program, inputs, "cpu")
    assert launched >= 4
    for a, e in zip(actual, expected):
        assert_matches(a, e, torch.float32)


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(MODELS))
def test_block_matches_eager_on_gpu(canonical_models, name: str) -> None:
    program, model, inputs = _fused(canonical_models, name)
    with torch.no_grad(), tf32(False):
        expected = model.to("cuda")(*[x.to("cuda") for x in inputs])
    expected = [expected] if isinstance(expected, torch.Tensor) else list(expected)
    actual, launched = run_with_triton(program, inputs, "cuda")
    assert launched >= 4
    for a, e in zip(actual, expected):
        assert_matches(a.cpu(), e.cpu(), torch.float32)
