"""What the suite runs: each workload is a model from ``dnnc.models`` with its
arguments, fp16, and the unit its throughput is counted in."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch


@dataclass(frozen=True)
class Workload:
    name: str
    model: str
    """``dnnc.models.FACTORIES`` key (also the ``jax_nets.NETS`` key)."""
    args: dict[str, Any] = field(default_factory=dict)
    unit: str = "images"
    """``images`` (per batch element) or ``tokens`` (batch x sequence)."""

    def build(self) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
        from dnnc.models import FACTORIES

        return FACTORIES[self.model](**self.args)

    def items(self, inputs: tuple[torch.Tensor, ...]) -> int:
        """Images or tokens in one call."""
        shape = inputs[0].shape
        return int(shape[0] * shape[1]) if self.unit == "tokens" else int(shape[0])


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload("conv-block-b1", "conv_block", {"batch": 1}),
        Workload("conv-block-b32", "conv_block", {"batch": 32}),
        Workload("resnet50-b1", "resnet50", {"batch": 1}),
        Workload("resnet50-b32", "resnet50", {"batch": 32}),
        Workload("resnet50-b128", "resnet50", {"batch": 128}),
        Workload("mobilenet-b32", "mobilenet_v2", {"batch": 32}),
        Workload("gpt2-block", "gpt2_block", {"batch": 1, "seq": 128}, unit="tokens"),
        Workload("bert-s128-b8", "bert_layer", {"batch": 8, "seq": 128}, unit="tokens"),
        Workload("bert-s512-b8", "bert_layer", {"batch": 8, "seq": 512}, unit="tokens"),
    )
}
"""The issue's list: the documents' block at batch 1 and 32, ResNet-50 at 1/32/128,
MobileNetV2 at 32, the GPT-2 block (with embeddings and LM head) and a BERT-base
layer at sequence 128 and 512, batch 8."""


def select(names: str | None) -> list[Workload]:
    """Comma-separated workload names (all when empty); an unknown name is an error."""
    if not names:
        return list(WORKLOADS.values())
    chosen = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in chosen if n not in WORKLOADS]
    if unknown:
        raise SystemExit(f"unknown workload {unknown[0]!r}; known: {', '.join(WORKLOADS)}")
    return [WORKLOADS[n] for n in chosen]
