"""A GPT-2-style decoder: token and position embeddings, causal attention blocks, LM head."""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from dnnc.models._init import randomize_norm_affine, seeded


class CausalSelfAttention(nn.Module):
    """GPT-2's attention: one fused qkv projection and a lower-triangular mask buffer."""

    def __init__(self, dim: int, heads: int, max_len: int):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(dim, 3 * dim)
        self.c_proj = nn.Linear(dim, dim)
        self.register_buffer("bias", torch.tril(torch.ones(max_len, max_len)).view(1, 1, max_len, max_len))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.c_attn(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, d))


class MLP(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.c_fc = nn.Linear(dim, 4 * dim)
        self.c_proj = nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, dim: int, heads: int, max_len: int):
        super().__init__()
        self.ln_1 = nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads, max_len)
        self.ln_2 = nn.LayerNorm(dim)
        self.mlp = MLP(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    def __init__(self, vocab: int, max_len: int, dim: int, depth: int, heads: int):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(max_len, dim)
        self.h = nn.Sequential(*[Block(dim, heads, max_len) for _ in range(depth)])
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, 0.0, 0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.normal_(module.bias, 0.0, 0.02)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(idx.shape[1], dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(positions)
        return self.lm_head(self.ln_f(self.h(x)))


def gpt2_block(
    batch: int = 1,
    seq: int = 128,
    vocab: int = 50257,
    dim: int = 768,
    depth: int = 1,
    heads: int = 12,
    max_len: int = 1024,
    seed: int = 0,
) -> tuple[nn.Module, tuple[torch.Tensor]]:
    """GPT-2-small-sized decoder (one block by default): embeddings, causal attention, LM head."""
    with seeded(seed):
        model = GPT2(vocab, max_len, dim, depth, heads)
        randomize_norm_affine(model)
        tokens = torch.randint(0, vocab, (batch, seq))
    return model.eval(), (tokens,)
