"""Which object a GPU of a given SM runs (no GPU needed: the rule itself)."""

from __future__ import annotations

import pytest

from dnnc.kernels.objects import KernelObject
from dnnc.kernels.select import ranked


def _objects(*pairs: str) -> list[KernelObject]:
    return [KernelObject(p.split()[0], p.split()[1], b"", p) for p in pairs]


@pytest.mark.parametrize(
    ("objects", "capability", "expected"),
    [
        # the highest cubin of the device's major that is not newer than the device
        (("sm_80 cubin", "sm_86 cubin", "sm_90 cubin", "sm_100 cubin"), 90, ["sm_90 cubin"]),
        (("sm_80 cubin", "sm_86 cubin", "sm_90 cubin"), 89, ["sm_86 cubin", "sm_80 cubin"]),
        # cubins never cross majors; PTX JITs forward, highest first, after every cubin
        (("sm_80 cubin", "sm_80 ptx", "sm_75 ptx"), 90, ["sm_80 ptx", "sm_75 ptx"]),
        (("sm_90 ptx", "sm_90 cubin", "sm_80 ptx"), 90, ["sm_90 cubin", "sm_90 ptx", "sm_80 ptx"]),
        # arch-specific code runs on its own SM only, and is preferred there
        (("sm_90a cubin", "sm_90 cubin"), 90, ["sm_90a cubin", "sm_90 cubin"]),
        (("sm_90a cubin", "sm_90a ptx"), 100, []),
        # nothing fits: the runtime falls back to the reference (GPU tests)
        (("sm_100 cubin", "sm_120 ptx"), 90, []),
    ],
)
def test_objects_are_ranked_best_first_for_the_device(objects: tuple[str, ...], capability: int, expected: list[str]) -> None:
    assert [o.describe() for o in ranked(_objects(*objects), capability)] == expected
