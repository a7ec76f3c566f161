"""ResNet-50's floor layer by layer: each convolution (with its epilogue) as a kernel of
its own needs at least its FLOPs at the fp16 matmul rate or its bytes (input, output,
residual, weights) at the copy rate, whichever is longer. The sum is what a program of one
kernel per layer can reach at best; the suite's floor (the whole network's FLOPs, or its
input, weights and output once) is below it, since no activation goes to memory there.
With ``chained``, each block's 1x1 expansion and the next block's 1x1 reduction inside a
stage count as one kernel (``bench/chain_probe.py``): the residual-width tensor is not read
back. With ``per block``, each bottleneck block (its reduction, 3x3, downsample and expansion
with the residual) and the stem with its pool count as one kernel each: only a block's
input, output and weights go through memory, the floor of fusing across layers.

    python bench/resnet50_floors.py [--tflops 671] [--gbs 4192]   # the H200's measured ceilings
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

STAGES = [(3, 64, 256, 56), (4, 128, 512, 28), (6, 256, 1024, 14), (3, 512, 2048, 7)]
"""(blocks, width, output channels, output size) of ResNet-50's stages (v1.5: the stride on the 3x3)."""
STEM_CHANNELS = 4
"""The image's 3 channels padded to 4, as dnnc runs the stem."""


@dataclass(frozen=True)
class Layer:
    name: str
    flops: float
    bytes: float


def _conv(name: str, n: int, size: int, cin: int, cout: int, k: int, stride: int, residual: bool = False) -> Layer:
    out = size // stride
    flops = 2.0 * n * out * out * cout * cin * k * k
    moved = 2.0 * (n * size * size * cin + n * out * out * cout * (2 if residual else 1) + cout * cin * k * k)
    return Layer(name, flops, moved)


def bottlenecks() -> list[tuple[str, int, int, int, int, int]]:
    """Each bottleneck block, in order: its name (``s<stage>b<block>``), input size and
    channels, width, output channels and output size."""
    found, cin, size = [], 64, 56
    for s, (blocks, width, cout, out) in enumerate(STAGES, start=1):
        for b in range(blocks):
            here, into = (size, cin) if b == 0 else (out, cout)
            found.append((f"s{s}b{b}", here, into, width, cout, out))
        cin, size = cout, out
    return found


def layers(n: int) -> list[Layer]:
    """Every convolution (bias and ReLU fused, residual read by each block's expansion),
    the max pool and the classifier, in order, at batch ``n``."""
    found = [_conv("stem", n, 224, STEM_CHANNELS, 64, 7, 2), Layer("pool", 0.0, 2.0 * n * 64 * (112 * 112 + 56 * 56))]
    for name, here, into, width, cout, out in bottlenecks():
        stride = here // out
        found.append(_conv(f"{name}.reduce", n, here, into, width, 1, 1))
        found.append(_conv(f"{name}.3x3", n, here, width, width, 3, stride))
        if into != cout:  # each stage's first block: its downsample
            found.append(_conv(f"{name}.down", n, here, into, cout, 1, stride))
        found.append(_conv(f"{name}.expand", n, out, width, cout, 1, 1, residual=True))
    found.append(Layer("fc", 2.0 * n * 2048 * 1000, 2.0 * (2048 * 1000 + n * 2048 + n * 1000)))
    return found


def floor_ms(layer: Layer, tflops: float, gbs: float) -> float:
    return max(layer.flops / (tflops * 1e9), layer.bytes / (gbs * 1e6))


def chained(found: list[Layer], n: int) -> list[Layer]:
    """``found`` with each expansion and the next block's reduction in its stage as one
    layer: their FLOPs and bytes, less the reduction's read of the expansion's output."""
    by_name = {layer.name: layer for layer in found}
    out, taken = [], set()
    for layer in found:
        if layer.name in taken:
            continue
        stage, _, part = layer.name.partition(".")
        following = f"{stage.split('b')[0]}b{int(stage.split('b')[1]) + 1}.reduce" if part == "expand" else None
        if following in by_name:
            s = int(stage[1])
            _, _, cout, size = STAGES[s - 1]
            reduction = by_name[following]
            taken.add(following)
            read_back = 2.0 * n * size * size * cout
            out.append(Layer(f"{layer.name}+reduce", layer.flops + reduction.flops, layer.bytes + reduction.bytes - read_back))
        else:
            out.append(layer)
    return out


def per_block(found: list[Layer], n: int) -> list[Layer]:
    """``found`` with each bottleneck block, and the stem with its pool, as one layer: their
    FLOPs, and as bytes only what enters and leaves (the block's input, which its residual
    is, its output and its weights); the classifier as it is."""
    moved = {"stem+pool": 2.0 * (n * 224 * 224 * STEM_CHANNELS + n * 56 * 56 * 64 + 64 * STEM_CHANNELS * 7 * 7)}
    for name, here, into, width, cout, out in bottlenecks():
        weights = into * width + width * width * 9 + width * cout + (into * cout if into != cout else 0)
        moved[name] = 2.0 * (n * here * here * into + n * out * out * cout + weights)
    flops: dict[str, float] = {}
    for layer in found:
        key = "stem+pool" if layer.name in ("stem", "pool") else layer.name.partition(".")[0]
        flops[key] = flops.get(key, 0.0) + layer.flops
    return [Layer(key, f, moved[key]) if key in moved else next(x for x in found if x.name == key) for key, f in flops.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tflops", type=float, default=671.0, help="fp16 matmul rate (the H200's, measured in the suite)")
    parser.add_argument("--gbs", type=float, default=4192.0, help="copy rate, GB/s (the H200's, measured in the suite)")
    args = parser.parse_args()
    print(f"at {args.tflops:g} TFLOP/s and {args.gbs:g} GB/s, ms:")
    print(
        "| batch | one kernel per layer | expansion + next reduction chained | one kernel per block | FLOPs alone | bytes alone |"
    )
    print("|---|---|---|---|---|---|")
    for n in (1, 32, 128):
        found = layers(n)
        apart = sum(floor_ms(x, args.tflops, args.gbs) for x in found)
        fused = sum(floor_ms(x, args.tflops, args.gbs) for x in chained(found, n))
        blocks = sum(floor_ms(x, args.tflops, args.gbs) for x in per_block(found, n))
        flops = sum(x.flops for x in found) / (args.tflops * 1e9)
        moved = sum(x.bytes for x in found) / (args.gbs * 1e6)
        print(f"| {n} | {apart:.3f} | {fused:.3f} | {blocks:.3f} | {flops:.3f} | {moved:.3f} |")


if __name__ == "__main__":
    main()
