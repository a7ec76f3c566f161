"""Which device a program runs on, as the user asked for it (or ``auto``)."""

from __future__ import annotations

import torch

from dnnc import knobs
from dnnc.errors import DnncError
from dnnc.log import say_once


def resolve_device(device: str | None) -> str:
    """Where the program runs: ``auto`` takes the GPU when there is one and says
    once when it runs on the CPU reference backend instead."""
    device = device or knobs.get().device
    if device == "cpu":
        return "cpu"
    if device == "cuda":
        if not torch.cuda.is_available():
            raise DnncError("device='cuda' but torch sees no CUDA GPU; use device='cpu' (the reference backend)")
        return "cuda"
    if device != "auto":
        raise DnncError(f"unknown device {device!r}: expected 'auto', 'cpu' or 'cuda'")
    if torch.cuda.is_available():
        return "cuda"
    say_once("dnnc: no GPU found; running on the CPU reference backend")
    return "cpu"
