"""Attention launch configs stay within the shared memory a Hopper block can take:
a config that plans for more does not launch (float32 tiles at head dim 128)."""

from __future__ import annotations

import pytest

from dnnc.backends.triton.configs import ATTENTION_SMEM_BUDGET, attention, attention_smem


@pytest.mark.parametrize("itemsize", [2, 4])
@pytest.mark.parametrize("d", [32, 64, 80, 128, 256])
@pytest.mark.parametrize(("sq", "sk"), [(1, 1), (7, 197), (197, 197), (1024, 1024), (1, 4096)])
def test_every_attention_config_fits_shared_memory(sq: int, sk: int, d: int, itemsize: int) -> None:
    configs = attention(sq, sk, d, d, itemsize)
    assert configs
    for c in configs:
        used = attention_smem(c["BLOCK_M"], c["BLOCK_N"], d, d, c["num_stages"], itemsize)
        assert used <= ATTENTION_SMEM_BUDGET, (c, used)
        assert c["num_stages"] >= 1


def test_half_precision_keeps_the_deep_pipeline() -> None:
    """Float16 at head dim 64 or 128 fits three stages of 128 x 64 tiles: the fast shape
    stays first."""
    for d in (64, 128):
        assert attention(1024, 1024, d, d, 2)[0] == {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 3}


def test_float32_head_dim_128_pipelines_fewer_stages() -> None:
    first = attention(1024, 1024, 128, 128, 4)[0]
    assert first["num_stages"] < 3


def test_value_head_dim_counts() -> None:
    """A value head dim larger than the key's (cross-attention projections) is priced."""
    narrow = attention(1024, 1024, 64, 64, 4)[0]
    wide = attention(1024, 1024, 64, 256, 4)[0]
    assert attention_smem(wide["BLOCK_M"], wide["BLOCK_N"], 64, 256, wide["num_stages"], 4) <= ATTENTION_SMEM_BUDGET
    assert (wide["BLOCK_N"], wide["num_stages"]) != (narrow["BLOCK_N"], narrow["num_stages"]) or wide["BLOCK_M"] < narrow[
        "BLOCK_M"
    ]
