"""What a compile did, stage by stage: how long each took and how many ops it left.
Shared by the compiler (which fills it) and loaded programs (which carry one). Each
stage is also logged as it ends (``DNNC_LOG_LEVEL=INFO``), so a long compile shows
where its time goes while it runs."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dnnc.ir.program import Program

log = logging.getLogger("dnnc.compile")


@dataclass(frozen=True)
class StageRecord:
    name: str
    seconds: float
    ops: int


@dataclass
class CompileReport:
    stages: list[StageRecord] = field(default_factory=list)
    reused: bool = False
    """The compile was an earlier one's, found in the compile cache (``compile_cache``)."""

    def add(self, name: str, started: float, program: Program | None) -> None:
        ops = count_ops(program) if program is not None else 0
        record = StageRecord(name, time.perf_counter() - started, ops)
        self.stages.append(record)
        log.info("stage %s: %.2f s, %d ops after it", record.name, record.seconds, record.ops)


def count_ops(program: Program) -> int:
    return sum(1 for op in program.entry.body.walk()) - 1  # not the terminator
