"""The backends the partitioner chooses among, as a table: the role that says how
their groups are found, priced and filtered (``candidates.Role``), where their
candidates come from (``sources``), how a chosen group is written into the IR
(``mark``), the passes that lower a program so marked (``stage``), and whether the
lowering kept a group (``not_lowered``). The partitioner iterates over it and never
branches on a backend's name; what is particular to a backend stays in its package."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass

from xdsl.ir import Operation

from dnnc.backends import cudnn, triton
from dnnc.partition.candidates import Candidate, Role
from dnnc.partition.sources import cudnn_candidates, triton_candidates
from dnnc.passes.stages import PARTITIONED, TRITON_ALONE_STAGE

Source = Callable[[Sequence[Operation], dict[Operation, int], Sequence[Candidate]], list[Candidate]]
"""(the graph's nodes, their indices, the library backends' candidates) -> this backend's."""


@dataclass(frozen=True)
class ChoosableBackend:
    name: str
    role: Role
    candidates: Source
    mark: Callable[[Sequence[Operation], str, int, str | None], None]
    """(the group's ops, its kind, its number among the chosen, a spec's plan)."""
    stage: str
    """Lowers a program whose groups of this backend are marked, as the whole program is."""
    not_lowered: Callable[[Sequence[Operation]], str | None]
    """Given the lowered program's top-level ops: why the group is not this backend's."""
    marks_fixed: bool
    """Whether a group the program already holds (``Candidate.fixed``) is marked again."""
    available: Callable[[], bool] = lambda: True
    """Whether this machine can build the backend's kernels (its library installed)."""
    first_stages: Callable[[], Sequence[str]] = lambda: ()
    """Stages (``passes.stages.STAGES``) that run before any other backend's or the
    partitioner's: cuDNN's fused attention (what the settings give it outright), Triton's
    split of reductions whose few rows would leave most of the GPU idle."""
    channels_last_convs: bool = False
    """Its convolutions run channels-last, so one at the program's NCHW edge pays a
    transpose (``cost.layout_conversion_ms``)."""


BACKENDS: dict[str, ChoosableBackend] = {
    "triton": ChoosableBackend(
        "triton",
        Role.GENERATOR,
        triton_candidates,
        triton.mark_group,
        TRITON_ALONE_STAGE,
        triton.not_lowered,
        marks_fixed=True,
        first_stages=lambda: ["gpu-triton-split-reductions"],
    ),
    "cudnn": ChoosableBackend(
        "cudnn",
        Role.LIBRARY,
        cudnn_candidates,
        cudnn.mark_group,
        PARTITIONED,
        cudnn.not_lowered,
        marks_fixed=False,
        available=cudnn.has_cudnn_frontend,
        first_stages=lambda: ["gpu-cudnn-attention"],
        channels_last_convs=True,
    ),
}
"""In marking order: Triton's numbers are written before cuDNN's groups are outlined."""


_ELSEWHERE: ContextVar[bool] = ContextVar("dnnc_built_elsewhere", default=False)


@contextlib.contextmanager
def built_elsewhere() -> Iterator[None]:
    """Lower for a GPU that is not here (``dnnc.compile(..., target=)``): every backend
    counts as available, since the machine that builds the kernels installs dnnc[cuda],
    whatever this one has."""
    token = _ELSEWHERE.set(True)
    try:
        yield
    finally:
        _ELSEWHERE.reset(token)


def building_elsewhere() -> bool:
    """Whether the program is lowered for a GPU that is not here (``built_elsewhere``)."""
    return _ELSEWHERE.get()


def usable(name: str) -> bool:
    """Whether the backend of the table named ``name`` can be lowered for (its library
    here, or a program built for another machine, ``built_elsewhere``)."""
    return building_elsewhere() or BACKENDS[name].available()


def role_of(backend: str) -> Role | None:
    """The role of a backend the table names (None: a view, a torch op, a user kernel)."""
    entry = BACKENDS.get(backend)
    return entry.role if entry is not None else None


def names_of(role: Role) -> tuple[str, ...]:
    return tuple(name for name, b in BACKENDS.items() if b.role is role)
