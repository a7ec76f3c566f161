"""``bench/resnet50_floors.py`` counts ResNet-50's layers and their work as the network
has them, and chaining a block's expansion into the next block's reduction only removes
the read of the residual-width tensor; one kernel per block moves only its edges."""

from __future__ import annotations

from bench.resnet50_floors import chained, floor_ms, layers, per_block


def test_the_layers_are_resnet50s() -> None:
    found = layers(2)
    convs = [x for x in found if x.name not in ("pool", "fc")]
    assert len(convs) == 1 + 16 * 3 + 4  # the stem, three per block, four downsamplings
    stem = found[0]
    assert stem.flops == 2.0 * 2 * 112 * 112 * 64 * 4 * 7 * 7
    total = sum(x.flops for x in found)
    assert 2 * 7.9e9 < total < 2 * 8.4e9  # about 4.1 GMACs an image (the stem on 4 channels)


def test_chaining_drops_only_the_reads_of_the_residual_stream() -> None:
    found = layers(32)
    fused = chained(found, 32)
    assert len(found) - len(fused) == 2 + 3 + 5 + 2  # blocks after the first, per stage
    assert sum(x.flops for x in fused) == sum(x.flops for x in found)
    saved = sum(x.bytes for x in found) - sum(x.bytes for x in fused)
    assert saved == 2.0 * 32 * (2 * 56 * 56 * 256 + 3 * 28 * 28 * 512 + 5 * 14 * 14 * 1024 + 2 * 7 * 7 * 2048)
    assert sum(floor_ms(x, 671, 4192) for x in fused) < sum(floor_ms(x, 671, 4192) for x in found)


def test_one_kernel_per_block_moves_only_each_blocks_edges() -> None:
    found = layers(32)
    blocks = per_block(found, 32)
    assert [x.name for x in blocks][:2] == ["stem+pool", "s1b0"] and blocks[-1].name == "fc"
    assert len(blocks) == 1 + 16 + 1
    assert sum(x.flops for x in blocks) == sum(x.flops for x in found)
    first = blocks[1]  # stage 1's first block: 64 channels in at 56x56, 256 out, with its downsample
    weights = 64 * 64 + 64 * 64 * 9 + 64 * 256 + 64 * 256
    assert first.bytes == 2.0 * (32 * 56 * 56 * 64 + 32 * 56 * 56 * 256 + weights)
    assert sum(x.bytes for x in blocks) < sum(x.bytes for x in chained(found, 32))
