"""The zoo on the CPU: every model, built from its library's own code with random
weights, is exported from CPU tensors, compiled and run on the reference backend,
and matches PyTorch eager in float32 within 1e-4 (normwise relative error)."""

from __future__ import annotations

import pytest
import torch

import dnnc
from dnnc.numerics import relative_error
from tests.zoo.cases import ZooCase, params

ZOO_TOLERANCE = 1e-4
"""A whole network in float32: each layer rounds in another order than eager's kernels."""


@pytest.mark.parametrize("case", params("cpu"))
def test_zoo_model_matches_eager(case: ZooCase) -> None:
    model, inputs = case.build(case.cpu)
    with torch.no_grad():
        expected = model(*inputs)
    compiled = dnnc.compile(model, inputs, device="cpu")
    got = compiled(*inputs)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    err = relative_error(got, expected)
    assert err <= ZOO_TOLERANCE, f"{case.name}: relative error {err:.2e} against eager float32"
