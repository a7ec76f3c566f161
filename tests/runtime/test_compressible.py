"""Compressible memory is asked for only where the setting says so and a GPU can give
it: elsewhere an arena is ``torch.empty`` of the size asked, and the setting reads from
the environment like every other."""

from __future__ import annotations

import torch

from dnnc import knobs
from dnnc.runtime import compressible


def test_a_cpu_arena_is_plain_memory_of_the_size_asked_with_the_setting_on_or_off() -> None:
    for on in (False, True):
        with knobs.override(compressible_arena=on):
            held = compressible.arena(100, torch.device("cpu"))
        assert held.dtype == torch.uint8 and held.numel() == 100 and held.device.type == "cpu"
    assert compressible.arena(0, torch.device("cpu")).numel() == 1


def test_no_compressible_memory_off_the_gpu() -> None:
    assert compressible.empty_bytes(1 << 20, torch.device("cpu")) is None


def test_the_setting_reads_from_the_environment() -> None:
    assert knobs.from_env({"DNNC_COMPRESSIBLE_ARENA": "1"}).compressible_arena is True
    assert knobs.from_env({"DNNC_COMPRESSIBLE_ARENA": "off"}).compressible_arena is False
