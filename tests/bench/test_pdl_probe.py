"""``bench/pdl_probe.py``'s chain of products against float32 on fresh random inputs
(Triton's interpreter where there is no GPU): the plain kernel and the one that reads its
weights' first K tile first, at a shape whose K and N are not multiples of the tile. The
PDL launches themselves need an sm_90 GPU and run only in the probe."""

from __future__ import annotations

import pytest
import torch

from bench.pdl_probe import chain_error

TOLERANCE = 2e-2 if torch.cuda.is_available() else 1e-4
"""float16 on a GPU, float32 on the interpreter."""


@pytest.mark.parametrize("variant", ["plain", "weights-first"])
def test_the_chain_matches_float32(variant: str) -> None:
    assert chain_error((20, 48, 32), variant, seed=3) < TOLERANCE
