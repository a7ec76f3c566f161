"""``decide``: the partitioner as the compiler calls it. The program's groups are
outlined and marked for their backends (what ``PARTITIONED`` then lowers) and the
decision record comes back as data, with the contest's winner as built where one
ran; the ``partition`` pass wraps the same work for pass pipelines and IR tests,
and leaves the record on the function instead."""

from __future__ import annotations

from collections.abc import Sequence

from dnnc.ir.program import Program
from dnnc.partition.partitioner import Partition, Partitioned


def decide(program: Program, policy: str = "auto", backends: Sequence[str] = ()) -> Partitioned | None:
    """Partition ``program``'s entry function in place; the decision record and any
    contest winner as built (None: nothing to decide). ``backends``: to choose among
    (empty: ``knobs.gpu_backends`` that can run here)."""
    return Partition(policy=policy, backends=tuple(backends)).partition_block(program.entry.body.block, program.params, program)
