"""Models of the zoo's families beyond the zoo, on the GPU, held to ``check_on_gpu``."""

from __future__ import annotations

import pytest

from tests.zoo.families import FamilyCase, family_params
from tests.zoo.gpu_check import check_on_gpu

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("case", family_params())
def test_family_model_on_gpu(case: FamilyCase) -> None:
    model, inputs = case.build()
    check_on_gpu(case.name, model, inputs, case.gpu_dtype)
