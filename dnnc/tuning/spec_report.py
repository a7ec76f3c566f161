"""Which record of a spec library decides each decision site of a program, and which
records never decide anything there: shadowed (they match, but an earlier record
always wins) or unused (they match no site)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from dnnc.ir.program import Program
from dnnc.partition.spec_facts import Site, first_match, sites
from dnnc.specs.format import Record
from dnnc.specs.library import record_label


@dataclass(frozen=True)
class SiteDecision:
    site: Site
    record: Record | None
    """The first record whose matcher takes one of the site's groups; None: the cost model decides."""
    kind: str | None = None
    """The kind of the group that record matched."""

    def text(self) -> str:
        if self.record is None:
            return f"{self.site.label:28s} no record (cost model decides)"
        r = self.record
        return f"{self.site.label:28s} {self.kind} -> {r.decision.describe()}  ({r.source}, {record_label(r)})"


@dataclass
class SpecReport:
    decisions: list[SiteDecision] = field(default_factory=list)
    idle: list[tuple[str, Record]] = field(default_factory=list)
    """Records that decide nothing here, in precedence order: ``unused`` or ``shadowed``."""

    @property
    def unmatched(self) -> list[Site]:
        return [d.site for d in self.decisions if d.record is None]

    def lines(self) -> list[str]:
        why = {"unused": "matches no group of this model", "shadowed": "matches, but an earlier record always wins"}
        return [
            *(d.text() for d in self.decisions),
            *(f"{state}: {r.source} ({record_label(r)}) {why[state]}" for state, r in self.idle),
        ]


def spec_report(program: Program, records: Sequence[Record]) -> SpecReport:
    """``program``: canonical tcp; ``records``: in precedence order (``specs.resolve``)."""
    report = SpecReport()
    won: set[int] = set()
    matched: set[int] = set()
    for site in sites(program):
        matched.update(id(r) for r in records if any(r.matcher.matches(f) for f in site.facts))
        found = first_match(records, site.prefixes)
        if found is None:
            report.decisions.append(SiteDecision(site, None))
            continue
        record, group = found
        won.add(id(record))
        report.decisions.append(SiteDecision(site, record, group.kind))
    report.idle = [("unused" if id(r) not in matched else "shadowed", r) for r in records if id(r) not in won]
    return report
