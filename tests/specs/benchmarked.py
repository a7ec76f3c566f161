"""The fp16 models the benchmark suite compiles (``bench/suite/workloads.py``) that the
shipped sm_90 tuning specs decide, completely or but for the groups named. ResNet-50 at
batch 32 and 128 is not among them: a compile that measures beats its tuned records there
(``dnnc/specs/defaults/README.md``). Two kinds of group appeared after the specs were tuned
(2026-11-23) and no record decides them, so the compile measures them: GPT-2's logits
product on its vocabulary padded to 50304 columns (``gpu-aligned-products``), and BERT's
query, key and value as one product (``gpu-merged-products``). ResNet-50's 1x1 expansions
and downsamples have had no record since 2026-11-28, so that its compile prices the kernel
that runs a block's expansion and downsample together (``ops.summed_products``), which no
record can name; its 3x3 convolutions of stages 2-4 none since 2026-11-29, so that it prices
Triton's split-K kernels for them (``configs.split_k``), nor its stem, so that it prices the
Gluon kernel on cells of the image (``backends/triton/stem.py``)."""

from __future__ import annotations

from typing import Any

import pytest

BENCHMARKED: list[tuple[str, dict[str, Any], int, tuple[str, ...]]] = [
    (
        "resnet50",
        {"batch": 1},
        54,
        (
            "conv_bias_relu 1x3x224x224 weight 64x3x7x7",
            *("conv_bias_add_relu 1x64x56x56 weight 256x64x1x1",) * 4,
            "conv_bias_add_relu 1x256x56x56 weight 512x256x1x1",
            "conv_bias_relu 1x128x56x56 weight 128x128x3x3",
            *(
                "conv_bias_add_relu 1x128x28x28 weight 512x128x1x1",
                "conv_bias_relu 1x128x28x28 weight 128x128x3x3",
            )
            * 3,
            "conv_bias_add_relu 1x128x28x28 weight 512x128x1x1",
            "conv_bias_add_relu 1x512x28x28 weight 1024x512x1x1",
            "conv_bias_relu 1x256x28x28 weight 256x256x3x3",
            *(
                "conv_bias_add_relu 1x256x14x14 weight 1024x256x1x1",
                "conv_bias_relu 1x256x14x14 weight 256x256x3x3",
            )
            * 5,
            "conv_bias_add_relu 1x256x14x14 weight 1024x256x1x1",
            "conv_bias_add_relu 1x1024x14x14 weight 2048x1024x1x1",
            "conv_bias_relu 1x512x14x14 weight 512x512x3x3",
            *("conv_bias_add_relu 1x512x7x7 weight 2048x512x1x1", "conv_bias_relu 1x512x7x7 weight 512x512x3x3") * 2,
            "conv_bias_add_relu 1x512x7x7 weight 2048x512x1x1",
        ),
    ),
    ("conv_block", {"batch": 1}, 1, ()),
    ("mobilenet_v2", {"batch": 32}, 53, ()),
    ("gpt2_block", {}, 10, ("matmul 128x768 weight 768x50304",)),
    ("bert_layer", {"batch": 8, "seq": 128}, 8, ("matmul_bias 1024x768 weight 768x2304",)),
    ("bert_layer", {"batch": 8, "seq": 512}, 8, ("matmul_bias 4096x768 weight 768x2304",)),
]
"""(factory, its arguments, how many cuDNN-rootable groups (tuning sites) it has, the
groups no record decides: the longest at the site, its kind, input and weight)."""

each_benchmarked_model = pytest.mark.parametrize(
    ("factory", "args", "site_count", "undecided"),
    BENCHMARKED,
    ids=["-".join([factory, *(f"{k}{v}" for k, v in args.items())]) for factory, args, _, _ in BENCHMARKED],
)


def fp16_program(factory: str, args: dict[str, Any]) -> Any:
    """The model cast to fp16 as the suite compiles it, through the stages every GPU
    program gets first (``pipeline.common_gpu_stages``: products merged and aligned). The
    backends' own stages before the partitioner (cuDNN's attention) are left out: they
    depend on what this machine has installed, and the sites counted here must not."""
    from dnnc.models import FACTORIES
    from dnnc.pipeline import common_gpu_stages, run_stage, to_canonical_tcp

    model, inputs = FACTORIES[factory](**args)
    inputs = tuple(x.half() if x.is_floating_point() else x for x in inputs)
    program = to_canonical_tcp(model.half().eval(), inputs)
    for stage in common_gpu_stages():
        run_stage(program, stage)
    return program
