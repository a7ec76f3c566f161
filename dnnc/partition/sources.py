"""Where each backend's candidate groups come from (``partition.backends`` names one
source per backend): cuDNN's from its patterns, Triton's from its fusion.

A source takes the graph's nodes, their indices, and the candidates the library
backends found (a generator forms its groups around each way they could take their
roots; a library ignores them)."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Block, Operation

from dnnc.backends.cudnn import accepted_pattern, group_label, grow_epilogue, takes_epilogue
from dnnc.backends.triton import fusion_groups, kind_of
from dnnc.ir import tcp
from dnnc.ir.analysis import is_output_view
from dnnc.ir.work import boundary_values
from dnnc.partition.candidates import Candidate, Role


def cudnn_candidates(nodes: Sequence[Operation], index: dict[Operation, int], libraries: Sequence[Candidate]) -> list[Candidate]:
    """At every root a cuDNN pattern accepts, the root alone and, where it takes one
    (``takes_epilogue``), with each longer prefix of its epilogue."""
    out = []
    for root in nodes:
        pattern = accepted_pattern(root, "partition")
        if pattern is None:
            continue
        steps = grow_epilogue(root.results[0]) if pattern.epilogue and takes_epilogue(root) else []
        members: list[Operation] = [root]
        for k in range(len(steps) + 1):
            if k:
                step = steps[k - 1]
                if step.absorbed_broadcast is not None:
                    members.append(step.absorbed_broadcast)
                members.append(step.op)
            covers = frozenset(index[m] for m in members if m in index and _only_used_by(m, members))
            out.append(Candidate("cudnn", group_label(pattern.kind, steps[:k]), tuple(members), covers, Role.LIBRARY))
    return out


def _only_used_by(op: Operation, members: Sequence[Operation]) -> bool:
    inside = set(members)
    return all(use.operation in inside for r in op.results for use in r.uses) or op is members[-1]


def triton_candidates(nodes: Sequence[Operation], index: dict[Operation, int], libraries: Sequence[Candidate]) -> list[Candidate]:
    """The groups Triton's fusion forms when the libraries take nothing, when they take
    every root alone, every root with its whole epilogue, or every root with the first
    k epilogue ops, and the same with products (matmul, conv) left out; so the ops
    around each library choice have the kernels that would really surround it. Every
    tcp node is also a kernel of its own."""
    if not nodes:
        return []
    block = nodes[0].parent_block()
    assert block is not None
    scenarios: list[frozenset[Operation]] = [frozenset()]
    if libraries:
        by_root: dict[int, list[Candidate]] = {}
        for c in libraries:
            by_root.setdefault(min(c.covers), []).append(c)
        longest = max(len(v) for v in by_root.values())
        for k in range(longest):
            taken = [v[min(k, len(v) - 1)] for v in by_root.values()]
            scenarios.append(frozenset(op for c in taken for op in c.ops if index.get(op) in c.covers))
    return _fusion_candidates(block, nodes, index, scenarios)


def _fusion_candidates(
    block: Block, nodes: Sequence[Operation], index: dict[Operation, int], scenarios: Sequence[frozenset[Operation]]
) -> list[Candidate]:
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
        if (
            frozenset({op}) not in seen
            and isinstance(op, tcp.TcpOp)
            and not isinstance(op, tcp.IsolatedGroupOp | tcp.ReshapeOp)
            and not is_output_view(op)
        ):
            out.append(_triton([op], index, fusion=False))
    return out


def _triton(ops: list[Operation], index: dict[Operation, int], fusion: bool) -> Candidate:
    _, writes = boundary_values(ops)
    covers = frozenset(index[op] for op in ops if op in index)
    return Candidate("triton", kind_of(ops, writes), tuple(ops), covers, Role.GENERATOR, fusion=fusion)
