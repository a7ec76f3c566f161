"""What a record matches: a group's kind (a glob over labels such as
``conv_bias_relu``), its element type, and per-dimension predicates on its root's
input, weight and output shapes: an exact size, ``"*"`` (any), ``"a..b"``
(inclusive range) or ``"%k"`` (a multiple of k). Two matchers *overlap* when some
group could match both; merging reports those, by meaning rather than by name."""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

SHAPES = ("input", "weight", "output")
DTYPES = ("f16", "bf16", "f32")


@dataclass(frozen=True)
class GroupFacts:
    """What matching looks at in one group."""

    kind: str
    dtype: str
    shapes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Dim:
    """One dimension's predicate: ``lo..hi`` (inclusive, None open) and a multiple."""

    lo: int | None = None
    hi: int | None = None
    multiple: int = 1

    def accepts(self, n: int) -> bool:
        return (self.lo is None or n >= self.lo) and (self.hi is None or n <= self.hi) and n % self.multiple == 0

    def overlaps(self, other: Dim) -> bool:
        lo = max(x for x in (self.lo, other.lo, 0) if x is not None)
        hi = min((x for x in (self.hi, other.hi) if x is not None), default=None)
        step = math.lcm(self.multiple, other.multiple)
        first = -(-lo // step) * step
        return hi is None or first <= hi

    def to_toml(self) -> int | str:
        text = self.text()
        return int(text) if text.isdigit() else text

    def text(self) -> str:
        if self.lo is not None and self.lo == self.hi:
            return str(self.lo)
        if self.multiple > 1:
            return f"%{self.multiple}"
        if self.lo is None and self.hi is None:
            return "*"
        return f"{self.lo if self.lo is not None else ''}..{self.hi if self.hi is not None else ''}"


_RANGE = re.compile(r"^(\d*)\.\.(\d*)$")


def parse_dim(value: object) -> Dim:
    """An int, ``"*"``, ``"a..b"`` / ``"a.."`` / ``"..b"`` or ``"%k"``; ValueError otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a size")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"size {value} is negative")
        return Dim(value, value)
    if isinstance(value, str):
        text = value.strip()
        if text == "*":
            return Dim()
        if text.startswith("%") and text[1:].isdigit() and int(text[1:]) > 0:
            return Dim(multiple=int(text[1:]))
        m = _RANGE.match(text)
        if m and (m.group(1) or m.group(2)):
            lo = int(m.group(1)) if m.group(1) else None
            hi = int(m.group(2)) if m.group(2) else None
            if lo is not None and hi is not None and lo > hi:
                raise ValueError(f"range {text!r} is empty")
            return Dim(lo, hi)
    raise ValueError(f"{value!r}: expected a size, '*', 'a..b' or '%k'")


@dataclass(frozen=True)
class Matcher:
    kind: str = "*"
    dtypes: tuple[str, ...] = ()
    """Empty: any element type."""
    shapes: Mapping[str, tuple[Dim, ...]] = field(default_factory=dict)

    def matches(self, facts: GroupFacts) -> bool:
        if not fnmatch.fnmatchcase(facts.kind, self.kind):
            return False
        if self.dtypes and facts.dtype not in self.dtypes:
            return False
        for name, dims in self.shapes.items():
            shape = facts.shapes.get(name)
            if shape is None or len(shape) != len(dims) or not all(d.accepts(n) for d, n in zip(dims, shape)):
                return False
        return True

    def overlaps(self, other: Matcher) -> bool:
        if not _globs_overlap(self.kind, other.kind):
            return False
        if self.dtypes and other.dtypes and not set(self.dtypes) & set(other.dtypes):
            return False
        for name in set(self.shapes) & set(other.shapes):
            a, b = self.shapes[name], other.shapes[name]
            if len(a) != len(b) or not all(x.overlaps(y) for x, y in zip(a, b)):
                return False
        return True

    def to_toml(self) -> dict[str, object]:
        out: dict[str, object] = {"kind": self.kind}
        if self.dtypes:
            out["dtype"] = list(self.dtypes)
        out |= {name: [d.to_toml() for d in dims] for name, dims in self.shapes.items()}
        return out

    def describe(self) -> str:
        parts = [f"kind {self.kind}"]
        if self.dtypes:
            parts.append("/".join(self.dtypes))
        parts += [f"{name} {'x'.join(d.text() for d in dims)}" for name, dims in self.shapes.items()]
        return ", ".join(parts)


def _globs_overlap(a: str, b: str) -> bool:
    """Whether some label matches both globs: exact when either is a plain label;
    two patterns with wildcards are taken to overlap unless their fixed prefixes differ."""
    wild = set("*?[")
    if not wild & set(a):
        return fnmatch.fnmatchcase(a, b)
    if not wild & set(b):
        return fnmatch.fnmatchcase(b, a)
    pa, pb = re.split(r"[*?\[]", a)[0], re.split(r"[*?\[]", b)[0]
    return pa.startswith(pb) or pb.startswith(pa)


def parse_matcher(table: Mapping[str, object]) -> Matcher:
    """From a record's ``match`` table; ValueError names the offending key."""
    unknown = set(table) - {"kind", "dtype", *SHAPES}
    if unknown:
        raise ValueError(f"match.{sorted(unknown)[0]}: unknown key (expected kind, dtype, {', '.join(SHAPES)})")
    kind = table.get("kind", "*")
    if not isinstance(kind, str) or not kind:
        raise ValueError("match.kind: expected a label or glob such as 'conv_bias_relu' or 'conv*'")
    dtypes = table.get("dtype", [])
    dtypes = [dtypes] if isinstance(dtypes, str) else dtypes
    if not isinstance(dtypes, list) or any(d not in DTYPES for d in dtypes):
        raise ValueError(f"match.dtype: expected some of {', '.join(DTYPES)}, got {table.get('dtype')!r}")
    shapes = {}
    for name in SHAPES:
        if name in table:
            dims = table[name]
            if not isinstance(dims, Sequence) or isinstance(dims, str):
                raise ValueError(f"match.{name}: expected a list of sizes")
            try:
                shapes[name] = tuple(parse_dim(d) for d in dims)
            except ValueError as e:
                raise ValueError(f"match.{name}: {e}") from None
    return Matcher(kind, tuple(dtypes), shapes)
