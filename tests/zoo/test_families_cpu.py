"""Models of the zoo's families beyond the zoo, on the CPU: each compiles with no
op refused and matches PyTorch eager in float32 within the zoo's tolerance."""

from __future__ import annotations

import pytest
import torch

import dnnc
from dnnc.numerics import relative_error
from tests.zoo.families import FamilyCase, family_params
from tests.zoo.test_zoo_cpu import ZOO_TOLERANCE


@pytest.mark.parametrize("case", family_params())
def test_family_model_matches_eager(case: FamilyCase) -> None:
    model, inputs = case.build()
    with torch.no_grad():
        expected = model(*inputs)
    assert expected.abs().amax() > 0, f"{case.name}: eager's output is all zeros, the comparison would show nothing"
    got = dnnc.compile(model, inputs, device="cpu")(*inputs)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    err = relative_error(got, expected)
    assert err <= ZOO_TOLERANCE, f"{case.name}: relative error {err:.2e} against eager float32"


def test_a_mixture_of_experts_in_its_grouped_form_is_refused_with_the_way_out() -> None:
    """transformers' default experts form needs ops dnnc does not take; the error says
    which form compiles (the family case ``mixtral`` compiles that one)."""
    pytest.importorskip("transformers")
    from dnnc.errors import UnsupportedOpError
    from tests.zoo.families import mixtral_as_built

    model, inputs = mixtral_as_built()
    with pytest.raises(UnsupportedOpError, match=r"grouped_mm(.|\n)*set_experts_implementation\(\"batched_mm\"\)"):
        dnnc.compile(model, inputs, device="cpu")
