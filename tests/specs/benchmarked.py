"""The fp16 models the benchmark suite compiles (``bench/suite/workloads.py``) that the
shipped sm_90 tuning specs decide completely. ResNet-50 at batch 32 and 128 is not among
them: a compile that measures beats its tuned records there (``dnnc/specs/defaults/README.md``)."""

from __future__ import annotations

from typing import Any

import pytest

BENCHMARKED: list[tuple[str, dict[str, Any], int]] = [
    ("resnet50", {"batch": 1}, 54),
    ("conv_block", {"batch": 1}, 1),
    ("mobilenet_v2", {"batch": 32}, 53),
    ("gpt2_block", {}, 10),
    ("bert_layer", {"batch": 8, "seq": 128}, 10),
    ("bert_layer", {"batch": 8, "seq": 512}, 10),
]
"""(factory, its arguments, how many cuDNN-rootable groups (tuning sites) it has)."""

each_benchmarked_model = pytest.mark.parametrize(
    ("factory", "args", "site_count"),
    BENCHMARKED,
    ids=["-".join([factory, *(f"{k}{v}" for k, v in args.items())]) for factory, args, _ in BENCHMARKED],
)


def fp16_program(factory: str, args: dict[str, Any]) -> Any:
    """The model in canonical tcp, cast to fp16 as the suite compiles it."""
    from dnnc.models import FACTORIES
    from dnnc.pipeline import to_canonical_tcp

    model, inputs = FACTORIES[factory](**args)
    return to_canonical_tcp(model.half().eval(), tuple(x.half() if x.is_floating_point() else x for x in inputs))
