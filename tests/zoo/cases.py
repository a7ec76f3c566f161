"""The zoo as the tests run it: each model from ``dnnc.models.zoo`` with the sizes
of the CPU tests (small: a few layers, short sequences, small images, so the
reference backend runs them in seconds) and of the GPU tests (the real depth and
width at a small batch)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import torch
from torch import nn

from dnnc.models import zoo


@dataclass(frozen=True)
class ZooCase:
    name: str
    library: str
    cpu: dict[str, Any]
    gpu: dict[str, Any] = field(default_factory=dict)
    slow: bool = False
    """Marked ``slow``: over ~15 s on the CPU reference backend."""

    @property
    def factory(self) -> Callable[..., tuple[nn.Module, tuple[torch.Tensor, ...]]]:
        return zoo.ZOO[self.name]

    def build(self, sizes: dict[str, Any]) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
        if self.library == "timm":
            from tests.zoo.torchvision_standin import import_timm

            import_timm()
        return self.factory(**sizes)


TEXT = {"layers": 2, "seq": 16}
CASES = [
    ZooCase("timm_resnet50", "timm", {"size": 64}, {"batch": 2}),
    ZooCase("efficientnet_b0", "timm", {"size": 64}, {"batch": 2}),
    ZooCase("mobilenetv3_large_100", "timm", {"size": 64}, {"batch": 2}),
    ZooCase("convnext_tiny", "timm", {"size": 64}, {"batch": 2}),
    ZooCase("vit_small_patch16_224", "timm", {"size": 64}, {"batch": 2}),
    ZooCase("bert", "transformers", TEXT, {"batch": 2, "seq": 128}),
    ZooCase("gpt2", "transformers", TEXT, {"batch": 2, "seq": 128}),
    ZooCase("llama", "transformers", TEXT, {"batch": 2, "seq": 128}),
    ZooCase("t5_encoder", "transformers", TEXT, {"batch": 2, "seq": 128}),
    ZooCase("whisper_encoder", "transformers", {"layers": 2, "frames": 200}, {"batch": 1, "frames": 3000}),
    ZooCase("unet2d", "diffusers", {"size": 32, "channels": (32, 64, 64), "groups": 8}, {"batch": 2, "size": 64}),
]


def available(library: str) -> bool:
    return importlib.util.find_spec(library) is not None


def params(device: str) -> list[Any]:
    """pytest params of the cases, skipped where their library is not installed."""
    out = []
    for case in CASES:
        marks = [pytest.mark.skipif(not available(case.library), reason=f"needs {case.library} (pip install 'dnnc[zoo]')")]
        if case.slow and device == "cpu":
            marks.append(pytest.mark.slow)
        out.append(pytest.param(case, id=case.name, marks=marks))
    return out
