"""Make the IR say what a cover chose: each chosen group is marked the way its
backend reads it (``partition.backends``: Triton numbers its ops, cuDNN outlines
them, with a tuning spec's plan); views and torch ops stay."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xdsl.ir import Operation

from dnnc.partition.backends import BACKENDS
from dnnc.partition.candidates import Candidate


def realize(chosen: Sequence[Candidate], ops: Mapping[Operation, Operation] | None = None) -> None:
    """``ops``: where the candidates' ops are, when realizing on a clone of their module."""
    for backend in BACKENDS.values():
        for number, c in enumerate(chosen):
            if c.backend == backend.name and (backend.marks_fixed or not c.fixed):
                members = [ops[op] for op in c.ops] if ops is not None else list(c.ops)
                backend.mark(members, c.kind, number, c.spec_plan)
