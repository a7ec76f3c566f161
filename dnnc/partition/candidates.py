"""Overlapping candidate groups for the partitioner, each tied to a backend.

The graph's *nodes* are the top-level compute ops of the entry block (sources
such as parameters and constants are not: every group reads them for free).

* **cuDNN**: at every root a pattern accepts (conv, matmul, layer norm), the root
  alone and the root with each longer prefix of its elementwise epilogue
  (conv, conv+bias, conv+bias+add, conv+bias+add+relu ...).
* **Triton**: the groups Triton's fusion forms when cuDNN takes nothing, when it
  takes every root alone, every root with its whole epilogue, or every root with
  the first k epilogue ops, and the same with products (matmul, conv) left out;
  so the ops around each cuDNN choice have the Triton kernels that would
  really surround it. Every node is also a Triton kernel of its own, so a cover
  always exists.
* **view**: a lone reshape moves no data (the executor takes a view).
* **torch**: where Triton is not among the backends, each node as a torch op.
* Groups outlined before partitioning (``cudnn-attention``) are fixed.

Policies filter them: ``triton-only`` drops cuDNN; ``cudnn-only`` keeps no Triton
kernel that contains an op cuDNN could root (Triton still generates what cuDNN
has no graph for: pooling, softmax, ...).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.ir import Block, Operation

from dnnc.backends.cudnn import accepted_pattern, group_label, grow_epilogue
from dnnc.backends.interface import GROUP_BACKEND_ATTR, GROUP_KIND_ATTR, group_attr
from dnnc.backends.triton import fusion_groups, kind_of
from dnnc.ir import extern, tcp
from dnnc.ir.analysis import compile_time_values
from dnnc.partition.cost import boundary_values

log = logging.getLogger("dnnc.partition")

POLICIES = ("auto", "cudnn-only", "triton-only")


@dataclass
class Candidate:
    backend: str
    kind: str
    ops: tuple[Operation, ...]
    """Members in program order (cloned broadcasts included)."""
    covers: frozenset[int]
    """Node indices the group takes over (a broadcast also used elsewhere is cloned, not taken)."""
    fixed: bool = False
    fusion: bool = False
    """A group Triton's fusion forms in some scenario (not a lone op added for coverage)."""
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
    """The cuDNN plan (``PlanRecord`` JSON) that record chose, if any."""

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


def enumerate_candidates(nodes: Sequence[Operation], backends: Sequence[str], policy: str) -> list[Candidate]:
    if policy not in POLICIES:
        raise ValueError(f"unknown partition policy {policy!r}: expected one of {', '.join(POLICIES)}")
    index = {op: i for i, op in enumerate(nodes)}
    block = nodes[0].parent_block() if nodes else None
    out: list[Candidate] = []
    fixed = {i for i, op in enumerate(nodes) if isinstance(op, tcp.IsolatedGroupOp | extern.DispatchOp)}
    for i in sorted(fixed):
        op = nodes[i]
        if isinstance(op, extern.DispatchOp):  # a user kernel runs as the user wrote it
            out.append(Candidate("extern", op.kernel_name, (op,), frozenset({i}), fixed=True))
            continue
        out.append(
            Candidate(
                group_attr(op, GROUP_BACKEND_ATTR) or "torch",
                group_attr(op, GROUP_KIND_ATTR) or "group",
                (op,),
                frozenset({i}),
                fixed=True,
            )
        )
    cudnn = _cudnn_candidates(nodes, index) if "cudnn" in backends and policy != "triton-only" else []
    out += cudnn
    roots = {min(c.covers) for c in cudnn}
    if "triton" in backends and block is not None:
        for c in _triton_candidates(block, nodes, index, cudnn):
            if policy == "cudnn-only" and c.covers & roots:
                continue
            out.append(c)
    elif "triton" not in backends:
        out += [
            Candidate("torch", op.name.removeprefix("tcp."), (op,), frozenset({i}))
            for i, op in enumerate(nodes)
            if i not in fixed
        ]
    out += [Candidate("view", "reshape", (op,), frozenset({i})) for i, op in enumerate(nodes) if isinstance(op, tcp.ReshapeOp)]
    return _dedupe(out)


def _cudnn_candidates(nodes: Sequence[Operation], index: dict[Operation, int]) -> list[Candidate]:
    out = []
    for root in nodes:
        pattern = accepted_pattern(root, "partition")
        if pattern is None:
            continue
        steps = grow_epilogue(root.results[0]) if pattern.epilogue else []
        members: list[Operation] = [root]
        for k in range(len(steps) + 1):
            if k:
                step = steps[k - 1]
                if step.absorbed_broadcast is not None:
                    members.append(step.absorbed_broadcast)
                members.append(step.op)
            covers = frozenset(index[m] for m in members if m in index and _only_used_by(m, members))
            out.append(Candidate("cudnn", group_label(pattern.kind, steps[:k]), tuple(members), covers))
    return out


def _only_used_by(op: Operation, members: Sequence[Operation]) -> bool:
    inside = set(members)
    return all(use.operation in inside for r in op.results for use in r.uses) or op is members[-1]


def _triton_candidates(
    block: Block, nodes: Sequence[Operation], index: dict[Operation, int], cudnn: list[Candidate]
) -> list[Candidate]:
    scenarios: list[frozenset[Operation]] = [frozenset()]
    if cudnn:
        by_root: dict[int, list[Candidate]] = {}
        for c in cudnn:
            by_root.setdefault(min(c.covers), []).append(c)
        longest = max(len(v) for v in by_root.values())
        for k in range(longest):
            taken = [v[min(k, len(v) - 1)] for v in by_root.values()]
            scenarios.append(frozenset(op for c in taken for op in c.ops if index.get(op) in c.covers))
    position = {op: i for i, op in enumerate(block.ops)}
    seen: set[frozenset[Operation]] = set()
    out = []
    for products in (True, False):
        for exclude in scenarios:
            for group in fusion_groups(block, products, exclude):
                key = frozenset(group)
                if key in seen:
                    continue
                seen.add(key)
                if any(op in index for op in group):
                    out.append(_triton(sorted(group, key=position.__getitem__), index, fusion=True))
    for op in nodes:
        if frozenset({op}) not in seen and isinstance(op, tcp.TcpOp) and not isinstance(op, tcp.IsolatedGroupOp | tcp.ReshapeOp):
            out.append(_triton([op], index, fusion=False))
    return out


def _triton(ops: list[Operation], index: dict[Operation, int], fusion: bool) -> Candidate:
    _, writes = boundary_values(ops)
    return Candidate("triton", kind_of(ops, writes), tuple(ops), frozenset(index[op] for op in ops if op in index), fusion=fusion)


def _dedupe(candidates: list[Candidate]) -> list[Candidate]:
    seen: set[tuple[str, str, frozenset[int]]] = set()
    out = []
    for c in candidates:
        key = (c.backend, c.kind, c.covers)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out
