"""The fp16 models the benchmark suite compiles (``bench/suite/workloads.py``), which
the shipped sm_90 tuning specs are meant to decide completely."""

from __future__ import annotations

from typing import Any

import pytest

BENCHMARKED: list[tuple[str, dict[str, Any]]] = [
    ("resnet50", {"batch": 1}),
    ("resnet50", {"batch": 32}),
    ("resnet50", {"batch": 128}),
    ("conv_block", {"batch": 1}),
    ("mobilenet_v2", {"batch": 32}),
    ("gpt2_block", {}),
    ("bert_layer", {"batch": 8, "seq": 128}),
    ("bert_layer", {"batch": 8, "seq": 512}),
]

each_benchmarked_model = pytest.mark.parametrize(
    ("factory", "args"),
    BENCHMARKED,
    ids=lambda v: v if isinstance(v, str) else "-".join(f"{k}{x}" for k, x in v.items()),
)


def fp16_program(factory: str, args: dict[str, Any]) -> Any:
    """The model in canonical tcp, cast to fp16 as the suite compiles it."""
    from dnnc.models import FACTORIES
    from dnnc.pipeline import to_canonical_tcp

    model, inputs = FACTORIES[factory](**args)
    return to_canonical_tcp(model.half().eval(), tuple(x.half() if x.is_floating_point() else x for x in inputs))
