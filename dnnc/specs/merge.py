"""One library from many: the records that apply, in precedence order, written
as a single ``replace`` library, and a report of matchers that overlap (some group
matches both; found by meaning, not by name): with the same decision the lower
one is redundant where both match, with different decisions it is a conflict the
higher one wins."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dnnc.specs.format import Record
from dnnc.specs.library import record_label


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
    lines = [
        "# merged by `dnnc spec merge`: the records in precedence order; the first match wins",
        "schema = 1",
        'mode = "replace"',
    ]
    for r in records:
        lines += ["", "[[record]]"]
        table: dict[str, Any] = {"name": r.name or r.source, "match": r.matcher.to_toml()}
        target = {k: v for k, v in (("arch", r.target.arch), ("sku", r.target.sku)) if v is not None}
        if target:
            table["target"] = target
        if r.versions:
            table["versions"] = {k: str(v) for k, v in r.versions.items()}
        d = r.decision
        decision: dict[str, Any] = {"backend": d.backend}
        if d.backend == "cudnn":
            decision |= {k: v for k, v in (("engine", d.engine), ("tag", d.tag)) if v is not None}
            if d.knobs:
                decision["knobs"] = dict(d.knobs)
        else:
            decision["config"] = dict(d.config)
        table["decision"] = decision
        table["provenance"] = {**r.provenance, "merged_from": r.source}
        lines += [f"{key} = {_value(value)}" for key, value in table.items()]
    return "\n".join(lines) + "\n"


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} to a spec")


def _key(k: str) -> str:
    return k if k.replace("_", "").isalnum() else _value(k)
