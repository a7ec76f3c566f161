"""What the partitioner chooses among: candidate groups, each tied to a backend, and
the roles that say how a backend's groups are found, priced and filtered.

The graph's *nodes* are the top-level compute ops of the entry block (sources
such as parameters and constants are not: every group reads them for free).
Backends find their candidates (``partition.backends``, ``partition.sources``) by role:

* a **library** backend (cuDNN) at every root one of its patterns accepts (conv,
  matmul, layer norm): the root alone and with each longer prefix of its
  elementwise epilogue (conv, conv+bias, conv+bias+add, conv+bias+add+relu ...);
* a **generator** backend (Triton) the groups its fusion forms around each way the
  libraries could take their roots, and every node alone, so a cover always exists.

Beside them: a lone reshape is a **view** (the executor takes a view); where no
generator is among the backends, each node is a **torch** op; groups outlined
before partitioning (``cudnn-attention``) and user kernels are **fixed**.

A policy prefers a role (``POLICIES``): ``triton-only`` keeps no library group;
``cudnn-only`` keeps no generated kernel that contains an op a library could root
(generated kernels still run what no library has a graph for: pooling, softmax, ...).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.ir import Block, Operation

from dnnc.ir.analysis import compile_time_values


class Role(enum.Enum):
    LIBRARY = "library"
    """Calls a library at the sites its patterns accept. A library may have no engine
    for a graph, so each candidate is lowered alone before it is priced; a tuning spec
    may name its plan (engine and knobs)."""
    GENERATOR = "generator"
    """Generates a kernel for any group of ops, each op alone included."""

    @property
    def runs_every_op(self) -> bool:
        """Where this role is preferred, the other roles are never needed."""
        return self is Role.GENERATOR


POLICIES: dict[str, Role | None] = {"auto": None, "cudnn-only": Role.LIBRARY, "triton-only": Role.GENERATOR}
"""Each policy's preferred role (None: the cheapest cover, whoever runs it). The names
are the product's: cuDNN is the library, Triton the generator."""


@dataclass
class Candidate:
    backend: str
    kind: str
    ops: tuple[Operation, ...]
    """Members in program order (cloned broadcasts included)."""
    covers: frozenset[int]
    """Node indices the group takes over (a broadcast also used elsewhere is cloned, not taken)."""
    role: Role | None = None
    """How its backend finds and prices groups; None for fixed groups, views and torch ops."""
    fixed: bool = False
    fusion: bool = False
    """A group a generator's fusion forms in some scenario (not a lone op added for coverage)."""
    estimated_ms: float = 0.0
    measured_ms: float | None = None
    identity: tuple[str, str, str] | None = None
    """Set by ``pricing.identity`` (backend, kind, the group's name-free text)."""
    layout_ms: float = 0.0
    """Transposes at the program's edge that the candidate's layout forces (``cost``)."""
    cost_ms: float = 0.0
    """What the partitioner charges: measured, else the estimate corrected by
    calibration; plus ``layout_ms``."""
    notes: list[str] = field(default_factory=list)
    spec: str | None = None
    """The tuning-spec record (``file:line``) that chose this group; it is not timed."""
    spec_plan: str | None = None
    """The library plan (cuDNN: ``PlanRecord`` JSON) that record chose, if any."""

    @property
    def mask(self) -> int:
        return sum(1 << i for i in self.covers)

    @property
    def label(self) -> str:
        return f"{self.backend}:{self.kind}"


def graph_nodes(block: Block) -> list[Operation]:
    """Ops that compute from the inputs. Ops on compile-time values only (a bias
    broadcast) are not nodes: they are index arithmetic in whichever group reads them,
    and as independent nodes they would multiply the covered sets to search."""
    known = compile_time_values(block)
    return [op for op in block.ops if not isinstance(op, func.ReturnOp) and not all(r in known for r in op.results)]


def node_preds(nodes: Sequence[Operation]) -> list[int]:
    """For each node, the bitmask of nodes whose results it (or its region) reads."""
    index = {op: i for i, op in enumerate(nodes)}
    preds = []
    for op in nodes:
        mask = 0
        for inner in op.walk():
            for v in inner.operands:
                owner = v.owner
                if isinstance(owner, Operation) and owner in index and owner is not op:
                    mask |= 1 << index[owner]
        preds.append(mask)
    return preds


def policy_candidates(candidates: Sequence[Candidate], policy: str) -> list[Candidate]:
    """The candidates ``policy`` may use: where it prefers a role, other roles' groups
    keep away from every root the preferred role has a group at (and, where the
    preferred role runs every op, are not used at all). Fixed groups, views and
    torch ops have no role and are always kept."""
    prefer = POLICIES[policy]
    if prefer is None:
        return list(candidates)
    if prefer.runs_every_op:
        return [c for c in candidates if c.role in (None, prefer)]
    roots = {min(c.covers) for c in candidates if c.role is prefer}
    return [c for c in candidates if c.role in (None, prefer) or not c.covers & roots]
