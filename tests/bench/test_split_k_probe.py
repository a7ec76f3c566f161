"""``bench/split_k_probe.py``'s ``serving-split`` set: each shape is one Triton group of the
product it names, and K is split only for products of a few waves of 128 x 128 tiles, each
slice at least a K block long."""

from __future__ import annotations

import torch

from bench.split_k_probe import FEW_WAVES, SHAPE_SETS, SPLIT_BASES, SPLITS, prepared, split_configs
from dnnc.backends.triton.skeleton import GroupInfo, product_sizes


def test_the_serving_shapes_are_one_group_each_with_the_product_they_name() -> None:
    sizes = {}
    for name, ir in SHAPE_SETS["serving-split"].items():
        group, operands, want = prepared(name, ir, torch.device("cpu"), "ohwi")
        sizes[name] = product_sizes(GroupInfo.of(group).anchor)[:3]
        assert len(operands) == len(group.operands) and want.dtype == torch.float16
    assert sizes["stage3-3x3-b32"] == (32 * 14 * 14, 256, 9 * 256)
    assert sizes["stage4-reduce-b32"] == (32 * 7 * 7, 512, 2048)


def test_k_is_split_only_for_few_tiles_and_slices_of_a_block_or_more() -> None:
    few = split_configs(32 * 7 * 7, 512, 9 * 512)
    assert len(few) == len(SPLIT_BASES) * len(SPLITS)
    assert {c["SPLIT_K"] for c in few} == set(SPLITS)
    assert split_configs(32 * 56 * 56, 64, 9 * 64) == []  # 784 tiles: more than FEW_WAVES
    assert FEW_WAVES < 32 * 56 * 56 // 128
    short = split_configs(1024, 256, 128)  # K of two blocks: two slices at most
    assert short and all(128 // c["SPLIT_K"] >= c["BLOCK_K"] for c in short)


def test_the_grid_cuts_rows_to_16_and_keeps_each_slice_a_block_long() -> None:
    from bench.split_k_probe import GRID_SPLITS, grid_configs

    stage4 = grid_configs(49, 512, 9 * 512)
    assert {c["BLOCK_M"] for c in stage4} == {16, 32, 64} and {c["SPLIT_K"] for c in stage4} == set(GRID_SPLITS)
    assert all((9 * 128) // c["SPLIT_K"] >= c["BLOCK_K"] for c in grid_configs(784, 128, 9 * 128))
    assert len(grid_configs(784, 128, 9 * 128)) < len(stage4), "K = 1152 is cut into 32 slices of 64 at most"
    assert sorted(SHAPE_SETS["split-grid"]) == ["stage2-3x3-b1", "stage3-3x3-b1", "stage4-3x3-b1"]
