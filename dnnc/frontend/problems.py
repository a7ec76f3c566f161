"""What the importer could not take, collected over the whole model and told at once:
each unsupported ATen op with how often it occurs, why, and where the user's code
first called it. One import of a model thus lists everything it still needs."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch.fx

from dnnc.errors import UnsupportedOpError
from dnnc.frontend.source_location import SourceLocation, locate

NO_RULE = "no import rule"
"""The reason given for an op the rule table has no entry for."""

WORKAROUNDS: dict[str, str] = {
    "transformers.grouped_mm_fallback.default": (
        "transformers' mixture-of-experts layers run their experts as a grouped matmul over data-dependent "
        'token counts (histc); dnnc compiles the batched form: call model.set_experts_implementation("batched_mm") '
        "before compiling"
    ),
}
"""What a user can do about an op dnnc does not take, where a library offers another form of the same model."""


@dataclass(frozen=True)
class UnsupportedOp:
    """One ATen op that cannot be imported for one reason, over all its occurrences."""

    op: str
    reason: str
    count: int
    first_at: SourceLocation | None

    def as_dict(self) -> dict[str, Any]:
        where = self.first_at
        return {
            "op": self.op,
            "count": self.count,
            "reason": self.reason,
            "first_at": None
            if where is None
            else {"file": where.file, "line": where.line, "code": where.code, "module": where.module},
        }


def op_name(node: torch.fx.Node) -> str:
    """The ATen op of a node; an output picked from a multi-result op is that op's."""
    if node.target is operator.getitem and isinstance(node.args[0], torch.fx.Node):
        return op_name(node.args[0])
    return str(node.target)


class Problems:
    """The refusals met during one import, grouped by op and reason in the order met."""

    def __init__(self) -> None:
        self._nodes: dict[tuple[str, str], list[torch.fx.Node]] = {}

    def add(self, node: torch.fx.Node, reason: str) -> None:
        self._nodes.setdefault((op_name(node), reason), []).append(node)

    def __bool__(self) -> bool:
        return bool(self._nodes)

    def summary(self) -> list[UnsupportedOp]:
        return [UnsupportedOp(op, reason, len(nodes), _first_location(nodes)) for (op, reason), nodes in self._nodes.items()]

    def error(self) -> UnsupportedOpError:
        ops = self.summary()
        return UnsupportedOpError(table(ops), tuple(ops))


def _first_location(nodes: Sequence[torch.fx.Node]) -> SourceLocation | None:
    return next((where for where in map(locate, nodes) if where is not None), None)


def table(ops: Sequence[UnsupportedOp]) -> str:
    """A header naming how many distinct ops are unsupported, then one line per op
    and reason: ``  aten.cumsum.default  x2  no import rule  (first at file:line: code)``."""
    distinct = len({o.op for o in ops})
    header = f"dnnc cannot import this model: {distinct} ATen op{' is' if distinct == 1 else 's are'} not supported"
    op_width = max((len(o.op) for o in ops), default=0)
    count_width = max((len(str(o.count)) for o in ops), default=0)
    rows = []
    for o in ops:
        where = f"  (first at {o.first_at.brief()})" if o.first_at is not None else ""
        rows.append(f"  {o.op:<{op_width}}  x{o.count:<{count_width}}  {o.reason}{where}")
    advice = [f"  {o.op}: {WORKAROUNDS[o.op]}" for o in {o.op: o for o in ops}.values() if o.op in WORKAROUNDS]
    return "\n".join([header, *rows, *(["what to do:", *advice] if advice else [])])
