"""A BERT encoder compiled for the GPU (``knobs.merge_products``, on by default): the
query, key and value products run as one, and the output matches eager in float16."""

from __future__ import annotations

import pytest
import torch

import dnnc
from dnnc import knobs
from tests.numerics import assert_matches

pytestmark = pytest.mark.gpu
pytest.importorskip("transformers")


@pytest.mark.parametrize("policy", ["auto", "greedy"])
def test_merged_projections_on_the_gpu(policy: str, rng: torch.Generator) -> None:
    from dnnc.models.zoo import ZOO

    torch.manual_seed(int(torch.randint(0, 2**31, (1,), generator=rng)))
    model, inputs = ZOO["bert"](batch=2, seq=64, layers=2)
    model = model.cuda().half().eval()
    xs = [x.cuda() for x in inputs]
    with torch.no_grad():
        expected = model(*xs)
    with knobs.override(merge_products=True, partition=policy):
        compiled = dnnc.compile(model, xs, device="cuda")
    widths = {shape[-1] for s in compiled._executor.steps for shape, _ in s.out_specs}
    assert 3 * 768 in widths, "one product computes the query, key and value columns"
    assert_matches(compiled(*xs), expected, torch.float16, what=f"BERT with merged projections ({policy})")
