"""How the IR says that Triton runs a group: each of its ops carries the group's
number (``dnnc.part``), so ``triton-fuse`` builds exactly that kernel."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.ir import Operation

from dnnc.backends.interface import GROUP_BACKEND_ATTR, group_attr
from dnnc.backends.triton.fusion import PART_ATTR
from dnnc.ir import tcp
from dnnc.ir.attrs import int_attr


def mark_group(ops: Sequence[Operation], kind: str, number: int, plan: str | None = None) -> None:
    """``kind`` and ``plan`` are unused: fusion derives the kernel's kind from its ops."""
    for op in ops:
        op.attributes[PART_ATTR] = int_attr(number)


def is_triton_group(op: Operation) -> bool:
    """Whether ``op`` is a group ``triton-fuse`` made (a kernel Triton builds)."""
    return isinstance(op, tcp.IsolatedGroupOp) and group_attr(op, GROUP_BACKEND_ATTR) == "triton"


def not_lowered(ops: Sequence[Operation]) -> str | None:
    """Triton takes every marked group."""
    return None


def precompile_lowered(ops: Sequence[Operation], device: Any) -> None:
    """Compile side by side every Triton kernel among lowered programs' top-level
    ``ops`` (``launch.precompile_groups``), before they are built one by one."""
    groups = [op for op in ops if is_triton_group(op)]
    if groups:
        from dnnc.backends.triton.launch import precompile_groups

        precompile_groups(groups, device)
