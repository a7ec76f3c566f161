"""The groups of a program a spec can speak about, and what matching sees of each:
at every op a library backend (cuDNN) can root (convolution, matmul, layer norm), the root with each
prefix of its epilogue, labelled as the partitioner labels them
(``conv``, ``conv_bias``, ``conv_bias_relu`` ...), with the element type and the
root's input, weight and output shapes."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Operation

from dnnc.backends.interface import SITE_ATTR
from dnnc.ir.program import Program
from dnnc.ir.types import element_of, shape_of
from dnnc.partition.backends import names_of
from dnnc.partition.candidates import Candidate, Role, graph_nodes
from dnnc.partition.enumeration import enumerate_candidates
from dnnc.specs.format import Record
from dnnc.specs.match import GroupFacts

_DTYPE_NAMES = {"f16": "f16", "bf16": "bf16", "f32": "f32"}


@dataclass(frozen=True)
class Site:
    """One root and its library candidates (one per epilogue prefix), longest first."""

    root: Operation
    index: int
    prefixes: tuple[Candidate, ...]

    @property
    def facts(self) -> tuple[GroupFacts, ...]:
        return tuple(facts_of(c) for c in self.prefixes)

    @property
    def label(self) -> str:
        return f"#{self.index} {self.prefixes[0].kind}"


def facts_of(c: Candidate) -> GroupFacts:
    root = c.ops[0]
    shapes = {"input": shape_of(root.operands[0]), "output": shape_of(root.results[0])}
    if len(root.operands) > 1:
        shapes["weight"] = shape_of(root.operands[1])
    dtype = str(element_of(root.results[0]))
    return GroupFacts(c.kind, _DTYPE_NAMES.get(dtype, dtype), shapes)


def library_prefixes(candidates: Sequence[Candidate]) -> dict[Operation, list[Candidate]]:
    """The library backends' candidates by root op (in the candidates' order), longest prefix first."""
    by_root: dict[Operation, list[Candidate]] = {}
    for c in candidates:
        if c.role is Role.LIBRARY:
            by_root.setdefault(c.ops[0], []).append(c)
    return {root: sorted(cands, key=lambda c: -len(c.ops)) for root, cands in by_root.items()}


def library_roots(nodes: Sequence[Operation]) -> dict[Operation, list[Candidate]]:
    """Every op a library backend could root among ``nodes``, with its prefixes (whatever
    the policy or the backends asked for: sites are where specs speak, not what a compile uses)."""
    return library_prefixes(enumerate_candidates(nodes, names_of(Role.LIBRARY), "auto"))


def sites(program: Program) -> list[Site]:
    """Every library root of the program's entry block, in program order."""
    nodes = graph_nodes(program.entry.body.block)
    order = {op: i for i, op in enumerate(nodes)}
    by_root = library_roots(nodes)
    return [Site(root, order[root], tuple(by_root[root])) for root in sorted(by_root, key=order.__getitem__)]


def first_match(records: Sequence[Record], prefixes: Sequence[Candidate]) -> tuple[Record, Candidate] | None:
    """The first record (in precedence order) matching any prefix, the longest prefix first."""
    facts = [facts_of(c) for c in prefixes]
    for record in records:
        for c, f in zip(prefixes, facts):
            if record.matcher.matches(f):
                return record, c
    return None


def site_json(facts: GroupFacts, group: int) -> str:
    """``SITE_ATTR``'s text: the facts a record would match, and the decision group."""
    return json.dumps({"group": group, "kind": facts.kind, "dtype": facts.dtype, **{k: list(v) for k, v in facts.shapes.items()}})


def parse_site(text: str) -> tuple[GroupFacts, int]:
    data: dict[str, Any] = json.loads(text)
    shapes = {k: tuple(data[k]) for k in ("input", "weight", "output") if k in data}
    return GroupFacts(data["kind"], data["dtype"], shapes), int(data["group"])


def marked_sites(program: Program) -> Iterator[tuple[Operation, GroupFacts, int]]:
    """The sites ``mark_sites`` left in a lowered program, in program order: the
    ``cudnn.graph`` or Triton ``tcp.isolated_group`` holding each, its facts and its
    decision group."""
    from dnnc.backends.triton import is_triton_group
    from dnnc.ir import cudnn

    for op in program.entry.body.block.ops:
        if isinstance(op, cudnn.GraphOp) and SITE_ATTR in op.attributes:
            holders = [op]
        elif is_triton_group(op):
            holders = [inner for inner in op.body.block.ops if SITE_ATTR in inner.attributes]
        else:
            continue
        for holder in holders:
            yield (op, *parse_site(holder.attributes[SITE_ATTR].data))  # type: ignore[attr-defined]


def mark_sites(
    chosen: Sequence[Candidate],
    prefixes: Mapping[Operation, Sequence[Candidate]],
    ops: Mapping[Operation, Operation] | None = None,
) -> None:
    """Before ``realize``: on every op a library can root, what a spec would match there
    and which chosen group runs it. In a library group the root carries the facts of
    the group itself (``lower-cudnn`` moves them onto the ``cudnn.graph``); in a
    generated (Triton) group each such root carries its own facts alone (a Triton
    record there drops every cuDNN prefix of that root). ``ops``: where the candidates'
    ops are, when marking a clone of their module."""
    at = (lambda op: ops[op]) if ops is not None else (lambda op: op)
    for number, c in enumerate(chosen):
        if c.role is Role.LIBRARY and c.ops[0] in prefixes:
            at(c.ops[0]).attributes[SITE_ATTR] = StringAttr(site_json(facts_of(c), number))
        elif c.role is Role.GENERATOR:
            for op in c.ops:
                if op in prefixes:
                    at(op).attributes[SITE_ATTR] = StringAttr(site_json(facts_of(prefixes[op][-1]), number))
