"""cudnn-attention on the CPU: GPT-2's causal attention and ViT's plain attention,
written out in steps, over 512 keys or more (``MIN_KEYS_WRITTEN_OUT``) become one
``cudnn.sdpa`` graph each in fp16, the lowered program computes what the canonical
one does (reference backend, fresh inputs), and what is not attention cuDNN can
fuse (float32, a mask that is not causal) or is too short to gain is left alone,
unless ``knobs.cudnn_attention`` asks for cuDNN's attention at every length."""

from __future__ import annotations

import pytest
import torch

from dnnc.backends.reference import ReferenceExecutor
from dnnc.ir import cudnn
from dnnc.models import FACTORIES
from dnnc.passes import parse_passes
from dnnc.pipeline import CUDNN_STAGE, run_passes, to_canonical_tcp
from tests.numerics import assert_matches

STAGE = "cudnn-attention," + CUDNN_STAGE


LONG = {"gpt2_block": {"seq": 512}, "vit_block": {"image_size": 384}}
"""512 and 577 keys: long enough for the fused kernel."""


def _program(name: str, dtype: torch.dtype, **args: int):
    model, inputs = FACTORIES[name](**(LONG[name] | args))
    model = model.to(dtype)
    inputs = [x.to(dtype) if x.is_floating_point() else x for x in inputs]
    return to_canonical_tcp(model, inputs), inputs


def _graphs(program) -> list[cudnn.GraphOp]:
    return [op for op in program.entry.body.walk() if isinstance(op, cudnn.GraphOp)]


def _fresh(inputs: list[torch.Tensor], rng: torch.Generator) -> list[torch.Tensor]:
    out = []
    for x in inputs:
        if x.is_floating_point():
            out.append(torch.randn(x.shape, generator=rng).to(x.dtype))
        else:
            out.append(torch.randint(0, 1000, x.shape, generator=rng))
    return out


@pytest.mark.parametrize(("name", "kind"), [("gpt2_block", "sdpa_causal"), ("vit_block", "sdpa")])
def test_attention_becomes_one_sdpa_graph(name: str, kind: str, rng: torch.Generator) -> None:
    program, inputs = _program(name, torch.float16)
    fresh = _fresh(inputs, rng)
    expected = ReferenceExecutor(program).run(fresh)
    run_passes(program, parse_passes(STAGE))
    sdpa = [g for g in _graphs(program) if g.attributes["kind"].data.startswith("sdpa")]  # type: ignore[attr-defined]
    assert [g.attributes["kind"].data for g in sdpa] == [kind]  # type: ignore[attr-defined]
    assert "tcp.softmax" not in program.text()
    for got, want in zip(ReferenceExecutor(program).run(fresh), expected):
        assert_matches(got, want, torch.float16)


def test_float32_attention_is_left_to_matmul_graphs() -> None:
    program, _ = _program("gpt2_block", torch.float32)
    run_passes(program, parse_passes(STAGE))
    assert "tcp.softmax" in program.text()
    assert not any(g.attributes["kind"].data.startswith("sdpa") for g in _graphs(program))  # type: ignore[attr-defined]


def test_attention_over_few_keys_is_left_to_its_own_kernels() -> None:
    program, _ = _program("gpt2_block", torch.float16, seq=128)
    run_passes(program, parse_passes(STAGE))
    assert "tcp.softmax" in program.text()
    assert not any(g.attributes["kind"].data.startswith("sdpa") for g in _graphs(program))  # type: ignore[attr-defined]


def test_cudnn_attention_knob_takes_few_keys_too() -> None:
    """``knobs.cudnn_attention`` asks for cuDNN's attention everywhere it computes it,
    so the length rule does not apply under it."""
    from dnnc import knobs

    program, _ = _program("gpt2_block", torch.float16, seq=128)
    with knobs.override(cudnn_attention=True):
        run_passes(program, parse_passes(STAGE))
    assert "tcp.softmax" not in program.text()
    assert [g.attributes["kind"].data for g in _graphs(program) if g.attributes["kind"].data.startswith("sdpa")] == [
        "sdpa_causal"
    ]  # type: ignore[attr-defined]


def test_a_mask_that_is_not_causal_is_not_fused() -> None:
    program, _ = _program("gpt2_block", torch.float16)
    (mask_name,) = [n for n in program.params if program.params[n].dtype == torch.bool]
    mask = program.params[mask_name].clone()
    mask[..., 0, 1] = False  # the first query may now see the second key
    program.params.add(mask_name, mask)
    run_passes(program, parse_passes(STAGE))
    assert "tcp.softmax" in program.text()
