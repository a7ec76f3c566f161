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
    if device == "cuda" or device.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise DnncError(f"device={device!r} but torch sees no CUDA GPU; use device='cpu' (the reference backend)")
        if device != "cuda":
            _check_index(device)
        return "cuda"
    if device != "auto":
        raise DnncError(f"unknown device {device!r}: expected 'auto', 'cpu', 'cuda' or 'cuda:<index>'")
    if torch.cuda.is_available():
        return "cuda"
    say_once("dnnc: no GPU found; running on the CPU reference backend")
    return "cpu"


def _check_index(device: str) -> None:
    """``cuda:<index>`` names a GPU this machine has, and the current one: programs are
    built and run on the current GPU (``torch.cuda.set_device`` or ``torch.cuda.device``
    picks it)."""
    index = device.removeprefix("cuda:")
    if not index.isdigit():
        raise DnncError(f"unknown device {device!r}: expected 'cuda:<index>', e.g. 'cuda:0'")
    count, current = torch.cuda.device_count(), torch.cuda.current_device()
    if int(index) >= count:
        raise DnncError(f"device={device!r} but this machine has {count} GPU(s): cuda:0 to cuda:{count - 1}")
    if int(index) != current:
        raise DnncError(
            f"device={device!r}: dnnc compiles for and runs on the current GPU (cuda:{current}); "
            f"make cuda:{index} current first (with torch.cuda.device({index}): ...)"
        )
