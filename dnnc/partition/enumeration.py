"""Every candidate group of a graph, for a policy: the fixed ones, each backend's from
its source (``partition.backends``; the libraries' first, since the generators form
their groups around them), views, and torch ops where no generator runs."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Operation

from dnnc.backends.interface import GROUP_BACKEND_ATTR, GROUP_KIND_ATTR, group_attr
from dnnc.ir import extern, tcp
from dnnc.ir.analysis import is_output_view
from dnnc.partition.backends import BACKENDS
from dnnc.partition.candidates import POLICIES, Candidate, Role, policy_candidates


def enumerate_candidates(nodes: Sequence[Operation], backends: Sequence[str], policy: str) -> list[Candidate]:
    """``backends``: names in the partitioner's table to find groups for (others are ignored)."""
    if policy not in POLICIES:
        raise ValueError(f"unknown partition policy {policy!r}: expected one of {', '.join(POLICIES)}")
    prefer = POLICIES[policy]
    index = {op: i for i, op in enumerate(nodes)}
    out = _fixed(nodes)
    taking = [
        b
        for b in BACKENDS.values()
        if b.name in backends and not (prefer is not None and prefer.runs_every_op and b.role is not prefer)
    ]
    libraries = [c for b in taking if b.role is Role.LIBRARY for c in b.candidates(nodes, index, ())]
    out += libraries
    for b in taking:
        if b.role is not Role.LIBRARY:
            out += b.candidates(nodes, index, libraries)
    if not any(b.role.runs_every_op for b in taking):
        fixed = {min(c.covers) for c in out if c.fixed}
        out += [
            Candidate("torch", op.name.removeprefix("tcp."), (op,), frozenset({i}))
            for i, op in enumerate(nodes)
            if i not in fixed
        ]
    out += [Candidate("view", "reshape", (op,), frozenset({i})) for i, op in enumerate(nodes) if isinstance(op, tcp.ReshapeOp)]
    out += [Candidate("view", "slice", (op,), frozenset({i})) for i, op in enumerate(nodes) if is_output_view(op)]
    return policy_candidates(_dedupe(out), policy)


def _fixed(nodes: Sequence[Operation]) -> list[Candidate]:
    """Groups outlined before partitioning and user kernels: each runs as it is."""
    out = []
    for i, op in enumerate(nodes):
        if isinstance(op, extern.DispatchOp):  # a user kernel runs as the user wrote it
            out.append(Candidate("extern", op.kernel_name, (op,), frozenset({i}), fixed=True))
        elif isinstance(op, tcp.IsolatedGroupOp):
            backend = group_attr(op, GROUP_BACKEND_ATTR) or "torch"
            out.append(Candidate(backend, group_attr(op, GROUP_KIND_ATTR) or "group", (op,), frozenset({i}), fixed=True))
    return out


def _dedupe(candidates: list[Candidate]) -> list[Candidate]:
    seen: set[tuple[str, str, frozenset[int]]] = set()
    out = []
    for c in candidates:
        key = (c.backend, c.kind, c.covers)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out
