"""A BERT-base-sized encoder layer and the documents' convolution block, for the
benchmark suite: small enough to time one layer, shaped like the real thing."""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from dnnc.models._init import randomize_norm_affine, seeded


class EncoderLayer(nn.Module):
    """BERT's post-norm layer: self-attention (over the positions ``attention_mask``
    marks with 1, where one is given), residual + LayerNorm, a GELU feed-forward,
    residual + LayerNorm."""

    def __init__(self, dim: int, heads: int, ffn: int):
        super().__init__()
        self.heads = heads
        self.query, self.key, self.value = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.attn_out = nn.Linear(dim, dim)
        self.attn_norm = nn.LayerNorm(dim, eps=1e-12)
        self.intermediate = nn.Linear(dim, ffn)
        self.output = nn.Linear(ffn, dim)
        self.out_norm = nn.LayerNorm(dim, eps=1e-12)

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        b, s, d = x.shape

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(b, s, self.heads, d // self.heads).transpose(1, 2)

        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        if attention_mask is not None:  # as transformers' BERT: masked keys get the dtype's lowest value
            scores = scores + (1.0 - attention_mask[:, None, None, :]) * torch.finfo(scores.dtype).min
        att = F.softmax(scores, dim=-1)
        ctx = (att @ v).transpose(1, 2).reshape(b, s, d)
        x = self.attn_norm(x + self.attn_out(ctx))
        return self.out_norm(x + self.output(F.gelu(self.intermediate(x))))


def bert_layer(
    batch: int = 1, seq: int = 128, dim: int = 768, heads: int = 12, ffn: int = 3072, seed: int = 0, masked: bool = False
) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """One BERT-base encoder layer (768 wide, 12 heads, 3072 feed-forward) on hidden
    states; ``masked``: also an attention mask (batch x seq, 1 for the positions
    attended to), the input that lets a sequence be padded."""
    with seeded(seed):
        model = EncoderLayer(dim, heads, ffn)
        randomize_norm_affine(model)
        x = torch.randn(batch, seq, dim)
    if masked:
        return model.eval(), (x, torch.ones(batch, seq))
    return model.eval(), (x,)


def conv_block(batch: int = 1, channels: int = 64, size: int = 56, seed: int = 0) -> tuple[nn.Module, tuple[torch.Tensor]]:
    """The documents' block: a 3x3 convolution with bias, then ReLU (64 -> 64 channels, 56x56)."""
    with seeded(seed):
        model = nn.Sequential(nn.Conv2d(channels, channels, 3, padding=1), nn.ReLU())
        x = torch.randn(batch, channels, size, size)
    return model.eval(), (x,)
