"""Small models the serving tests compile (factories for ``dnnc compile``)."""

from __future__ import annotations

import torch
from torch import nn


class ImageNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.head = nn.Linear(4, 5)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.conv(image)).mean((2, 3)))


def image_net(batch: int = 2) -> tuple[nn.Module, tuple[torch.Tensor]]:
    torch.manual_seed(0)
    return ImageNet().eval(), (torch.randn(batch, 3, 6, 6),)


class TokenNet(nn.Module):
    """Token ids through an embedding: an id past the table is an error of its request."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(10, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.embed(ids)).sum(1)


def token_net(batch: int = 2) -> tuple[nn.Module, tuple[torch.Tensor]]:
    torch.manual_seed(0)
    return TokenNet().eval(), (torch.randint(0, 10, (batch, 4)),)
