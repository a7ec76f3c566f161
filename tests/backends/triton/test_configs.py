"""The configs a launch-bound kernel times (``launch_bound_pair``) and the floor that
decides which kernels are launch-bound (``roofline.floor_us``)."""

from __future__ import annotations

import pytest

from dnnc.backends.triton.configs import launch_bound_pair, pointwise, product, rows
from dnnc.ir.work import Work
from dnnc.roofline import H100, floor_us


@pytest.mark.parametrize(
    ("configs", "parallel"),
    [
        (product(32, 96, 576), {"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 256}),  # few rows: the narrowest tile
        (product(2, 1000, 1280), {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 256}),  # a GEMV: the narrowest tile
        (pointwise(6144), {"BLOCK": 512}),
        (rows(600, 16), {"BLOCK_M": 128, "BLOCK_R": 16}),
    ],
)
def test_the_pair_is_the_first_and_the_most_parallel(configs: list[dict[str, int]], parallel: dict[str, int]) -> None:
    pair = launch_bound_pair(configs)
    assert pair[0] == configs[0] and len(pair) == 2
    assert parallel.items() <= pair[1].items()
    assert pair[1] in configs
    split = [c for c in configs if "SPLIT_K" in c]
    if split:  # a GEMV's K of 1280 over 16 tiles: its most-split config comes first
        assert pair[0] == max(split, key=lambda c: c["SPLIT_K"])


def test_a_config_list_whose_first_is_the_most_parallel_times_it_alone() -> None:
    first = {"BLOCK": 256, "num_warps": 4}
    assert launch_bound_pair([first, {"BLOCK": 1024, "num_warps": 4}]) == [first]


def test_the_floor_is_bytes_at_the_copy_rate_or_flops_at_the_tensor_rate() -> None:
    copy = Work(flops=0.0, bytes=3.004e6, tensor_core=False, fp32=False)  # 3 MB at 3004 GB/s: 1 us
    assert floor_us(copy, H100) == pytest.approx(1.0)
    gemm = Work(flops=7.45e9, bytes=1e3, tensor_core=True, fp32=False)  # 7.45 GFLOP at 745 TFLOP/s: 10 us
    assert floor_us(gemm, H100) == pytest.approx(10.0)
    assert floor_us(Work(7.45e9, 1e3, tensor_core=True, fp32=True), H100) == pytest.approx(20.0), "fp32 runs as TF32"


def test_a_row_kernel_reading_across_its_rows_tries_two_warps_first() -> None:
    """ResNet-50's global mean of an NHWC map (2048 channels of 7 x 7 at batch 32): its
    rows are contiguous in memory, its columns 2048 apart."""
    across = rows(32 * 2048, 49, across_rows=True)
    assert across[0] == {"BLOCK_M": 128, "BLOCK_R": 64, "num_warps": 2}
    assert rows(32 * 2048, 49) == [c for c in across if c["num_warps"] != 2], "the others stay as they were"
    assert all(c["num_warps"] != 2 for c in rows(32 * 2048, 49))
