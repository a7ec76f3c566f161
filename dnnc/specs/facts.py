"""The groups of a program a spec can speak about, and what matching sees of each:
at every op cuDNN can root (convolution, matmul, layer norm), the root with each
prefix of its epilogue, labelled as the partitioner labels them
(``conv``, ``conv_bias``, ``conv_bias_relu`` ...), with the element type and the
root's input, weight and output shapes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.ir import Operation

from dnnc.ir.program import Program
from dnnc.ir.types import element_of, shape_of
from dnnc.partition.candidates import Candidate, enumerate_candidates, graph_nodes
from dnnc.specs.format import Record
from dnnc.specs.match import GroupFacts

_DTYPE_NAMES = {"f16": "f16", "bf16": "bf16", "f32": "f32"}


@dataclass(frozen=True)
class Site:
    """One root and its cuDNN candidates (one per epilogue prefix), longest first."""

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


def cudnn_prefixes(candidates: Sequence[Candidate]) -> dict[Operation, list[Candidate]]:
    """The cuDNN candidates by root op (in the candidates' order), longest prefix first."""
    by_root: dict[Operation, list[Candidate]] = {}
    for c in candidates:
        if c.backend == "cudnn" and not c.fixed:
            by_root.setdefault(c.ops[0], []).append(c)
    return {root: sorted(cands, key=lambda c: -len(c.ops)) for root, cands in by_root.items()}


def sites(program: Program) -> list[Site]:
    """Every cuDNN root of the program's entry block, in program order."""
    nodes = graph_nodes(program.entry.body.block)
    order = {op: i for i, op in enumerate(nodes)}
    by_root = cudnn_prefixes(enumerate_candidates(nodes, ("cudnn",), "auto"))
    return [Site(root, order[root], tuple(by_root[root])) for root in sorted(by_root, key=order.__getitem__)]


def first_match(records: Sequence[Record], prefixes: Sequence[Candidate]) -> tuple[Record, Candidate] | None:
    """The first record (in precedence order) matching any prefix, the longest prefix first."""
    facts = [facts_of(c) for c in prefixes]
    for record in records:
        for c, f in zip(prefixes, facts):
            if record.matcher.matches(f):
                return record, c
    return None
