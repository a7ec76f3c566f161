"""What the suite runs: each workload is a model from ``dnnc.models`` (the
repository's own) or ``dnnc.models.zoo`` (timm, transformers and diffusers models
built from their libraries' code) with its arguments, fp16, and the unit its
throughput is counted in."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch


@dataclass(frozen=True)
class Workload:
    name: str
    model: str
    """``dnnc.models.FACTORIES`` key (also the ``jax_nets.NETS`` key), or ``dnnc.models.zoo.ZOO`` key."""
    args: dict[str, Any] = field(default_factory=dict)
    unit: str = "images"
    """``images`` (per batch element) or ``tokens`` (batch x sequence)."""

    def build(self) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
        from dnnc.models import FACTORIES
        from dnnc.models.zoo import ZOO

        return (FACTORIES.get(self.model) or ZOO[self.model])(**self.args)

    @property
    def zoo(self) -> bool:
        from dnnc.models import FACTORIES

        return self.model not in FACTORIES

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
"""The repository's models: the documents' block at batch 1 and 32, ResNet-50 at
1/32/128, MobileNetV2 at 32, the GPT-2 block (with embeddings and LM head) and a
BERT-base layer at sequence 128 and 512, batch 8; then the zoo at batch 1 and a
serving batch (32 images, 8 x 128 tokens)."""

_IMAGES = ("timm_resnet50", "efficientnet_b0", "mobilenetv3_large_100", "convnext_tiny", "vit_small_patch16_224")
_TEXT = ("bert", "gpt2", "llama", "t5_encoder")
ZOO_WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        *(Workload(f"{m}-b{b}", m, {"batch": b}) for m in _IMAGES for b in (1, 32)),
        *(Workload(f"{m}-b{b}-s128", m, {"batch": b, "seq": 128}, unit="tokens") for m in _TEXT for b in (1, 8)),
        Workload("whisper_encoder-b1", "whisper_encoder", {"batch": 1}, unit="clips"),
        Workload("unet2d-b1", "unet2d", {"batch": 1}),
        Workload("unet2d-b8", "unet2d", {"batch": 8}),
    )
}
WORKLOADS |= ZOO_WORKLOADS


def select(names: str | None) -> list[Workload]:
    """Comma-separated workload names (all when empty); an unknown name is an error."""
    if not names:
        return list(WORKLOADS.values())
    chosen = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in chosen if n not in WORKLOADS]
    if unknown:
        raise SystemExit(f"unknown workload {unknown[0]!r}; known: {', '.join(WORKLOADS)}")
    return [WORKLOADS[n] for n in chosen]
