"""A vocabulary projection with an odd number of columns, compiled for the GPU under
each policy: its product runs at the padded width, the slice back is a view step, the
output matches eager and is the caller's own (its strides kept, changed in place freely,
not rewritten by the next call)."""

from __future__ import annotations

import pytest
import torch

import dnnc
from dnnc import knobs
from tests.numerics import assert_matches

pytestmark = pytest.mark.gpu

VOCABULARY = 50257


@pytest.mark.parametrize("policy", ["auto", "greedy", "triton-only"])
def test_an_odd_vocabulary_projection_runs_padded(policy: str, rng: torch.Generator) -> None:
    head = torch.nn.Linear(768, VOCABULARY, bias=False).cuda().half().eval()
    x = torch.randn(2, 128, 768, generator=rng).cuda().half()
    with torch.no_grad():
        expected = head(x)
    with knobs.override(partition=policy):
        compiled = dnnc.compile(head, [x], device="cuda")
    steps = compiled._executor.steps
    assert [s.backend for s in steps].count("view") >= 1
    widths = {shape[-1] for s in steps for shape, _ in s.out_specs}
    assert 50304 in widths, [(s.backend, s.out_specs) for s in steps]
    first = compiled(x)
    assert first.shape == expected.shape and first.stride()[-2] == 50304
    assert_matches(first, expected, torch.float16, what=f"vocabulary projection ({policy})")
    kept = first.clone()
    second = compiled(torch.randn_like(x))
    assert torch.equal(first, kept) and not torch.equal(first, second)
    first += 1
