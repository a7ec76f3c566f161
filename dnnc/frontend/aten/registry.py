"""The table of import rules and how a rule receives its arguments.

A rule is ``fn(em, **args)`` where ``args`` are the ATen op's schema arguments by
name, defaults filled in; it returns a tcp value, or a tuple for multi-output ops.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch._ops import OpOverload

from dnnc.frontend.emitter import Emitter
from dnnc.rules import RuleTable

Rule = Callable[..., Any]
IMPORT_RULES: RuleTable[OpOverload, Rule] = RuleTable("ATen import")

aten = torch.ops.aten

# Ops that only assert metadata or sequence effects; they produce no value.
IGNORED: set[object] = {aten._assert_tensor_metadata.default, aten._assert_scalar.default}


rule = IMPORT_RULES.rule


def bind_args(target: OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """Schema-named arguments with defaults, so rules read like the ATen signature."""
    bound: dict[str, Any] = {}
    for i, spec in enumerate(target._schema.arguments):
        if i < len(args) and not spec.kwarg_only:
            bound[spec.name] = args[i]
        elif spec.name in kwargs:
            bound[spec.name] = kwargs[spec.name]
        elif spec.has_default_value():
            bound[spec.name] = spec.default_value
        else:
            bound[spec.name] = None
    return bound


def normalize_axis(em: Emitter, axis: int, rank: int) -> int:
    if not -max(rank, 1) <= axis < max(rank, 1):
        em.unsupported(f"dimension {axis} is out of range for rank {rank}")
    return axis % max(rank, 1)


def normalize_axes(em: Emitter, axes: Any, rank: int) -> list[int]:
    """Sorted unique non-negative axes; None or [] means all of them (ATen's rule)."""
    if axes is None or (isinstance(axes, (list, tuple)) and len(axes) == 0):
        return list(range(rank))
    if isinstance(axes, int):
        axes = [axes]
    return sorted({normalize_axis(em, a, rank) for a in axes})
