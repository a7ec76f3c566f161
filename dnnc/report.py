"""What a compile did, stage by stage: how long each took and how many ops it left.
Shared by the compiler (which fills it) and loaded programs (which carry one)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dnnc.ir.program import Program


@dataclass(frozen=True)
class StageRecord:
    name: str
    seconds: float
    ops: int


@dataclass
class CompileReport:
    stages: list[StageRecord] = field(default_factory=list)

    def add(self, name: str, started: float, program: Program | None) -> None:
        ops = count_ops(program) if program is not None else 0
        self.stages.append(StageRecord(name, time.perf_counter() - started, ops))


def count_ops(program: Program) -> int:
    return sum(1 for op in program.entry.body.walk()) - 1  # not the terminator
