"""One library from many: the records that apply, in precedence order, written
as a single ``replace`` library, and a report of matchers that overlap (some group
matches both; found by meaning, not by name): with the same decision the lower
one is redundant where both match, with different decisions it is a conflict the
higher one wins."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dnnc.specs.format import Record
from dnnc.specs.library import record_label
from dnnc.specs.write import library_toml


@dataclass(frozen=True)
class Overlap:
    winner: Record
    loser: Record
    conflict: bool

    def text(self) -> str:
        what = "conflict" if self.conflict else "redundant"
        return (
            f"{what}: {self.loser.source} ({record_label(self.loser)}, {self.loser.matcher.describe()}) is shadowed by "
            f"{self.winner.source} ({record_label(self.winner)}, {self.winner.matcher.describe()}) where both match"
            + (f"; they decide {self.winner.decision.describe()} vs {self.loser.decision.describe()}" if self.conflict else "")
        )


def overlaps(records: Sequence[Record]) -> list[Overlap]:
    """Every pair (earlier, later) in precedence order whose matchers overlap."""
    found = []
    for i, a in enumerate(records):
        for b in records[i + 1 :]:
            if a.target == b.target and a.matcher.overlaps(b.matcher):
                found.append(Overlap(a, b, conflict=a.decision != b.decision))
    return found


def to_toml(records: Sequence[Record]) -> str:
    """The records as one library (``mode = "replace"``: it stands for every layer it merged)."""
    comments = ["merged by `dnnc spec merge`: the records in precedence order; the first match wins"]
    return library_toml(records, comments, "replace", lambda r: {"merged_from": r.source})
