"""Shape ranges and the buckets that cover them: which input dimensions vary, over
which range, the concrete sizes compiled (buckets), and how an input of any size in
the range is padded up to a bucket and its outputs cut back.

Pure data and torch tensor arithmetic: used by the compile (``bucket_compile``), by
the module that runs the buckets (``bucketed``) and by the artifact's manifest, and
imports nothing of the compiler.

Named dimensions sit at fixed places: ``batch`` is dimension 0 of every input,
``seq`` dimension 1 of every input of rank 2 or more. Padding is at the end (rows
after the batch, positions after the sequence) and filled with zeros: a padded row
is computed apart from the real ones, and a padded position is one an attention
mask of zeros hides.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from dnnc.errors import DnncError, InputError, OutOfRangeError

AXES = {"batch": 0, "seq": 1}
"""Each named dimension and the input dimension it is."""


def dimension_at(axes: set[int]) -> str | None:
    """The named dimension a symbolic size found at exactly these input dimensions is
    (``AXES``), or None."""
    return next((name for name, axis in AXES.items() if axes == {axis}), None)


MIN_RANK = {"batch": 1, "seq": 2}
MAX_BUCKETS = 64


def axis_text() -> str:
    return "batch (dimension 0 of every input) and seq (dimension 1 of every input of rank 2 or more)"


@dataclass(frozen=True)
class DimRange:
    name: str
    low: int
    high: int

    def text(self) -> str:
        return f"{self.name}={self.low}..{self.high}"


def parse_range(text: str) -> DimRange:
    """``batch=1..64`` (the CLI's spelling)."""
    match = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*=\s*(\d+)\s*\.\.\s*(\d+)\s*", text)
    if match is None:
        raise DnncError(f"--dynamic {text!r}: expected NAME=LOW..HIGH, like batch=1..64 or seq=16..512")
    return checked_range(match[1], int(match[2]), int(match[3]))


def checked_range(name: str, low: Any, high: Any) -> DimRange:
    if name not in AXES:
        raise DnncError(f"dynamic dimension {name!r} is not one dnnc knows; it knows {axis_text()}")
    if not (isinstance(low, int) and isinstance(high, int)) or isinstance(low, bool) or isinstance(high, bool):
        raise DnncError(f"dynamic {name}: the range must be two integers (low, high), got ({low!r}, {high!r})")
    if not 1 <= low <= high:
        raise DnncError(f"dynamic {name}={low}..{high}: a range runs from 1 or more up to at least its low end")
    return DimRange(name, low, high)


def ranges_of(dynamic: Mapping[str, Any] | Sequence[str]) -> dict[str, DimRange]:
    """``{"batch": (1, 64)}`` (the API's spelling) or ``["batch=1..64"]`` (the CLI's)."""
    if isinstance(dynamic, Mapping):
        out = {}
        for name, bounds in dynamic.items():
            if not isinstance(bounds, (tuple, list, range)) or (len(bounds) != 2 and not isinstance(bounds, range)):
                raise DnncError(f"dynamic {name}: expected (low, high), like {{'batch': (1, 64)}}, got {bounds!r}")
            low, high = (bounds.start, bounds.stop - 1) if isinstance(bounds, range) else bounds
            out[name] = checked_range(name, low, high)
        return out
    ranges = [parse_range(t) for t in dynamic]
    names = [r.name for r in ranges]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise DnncError(f"--dynamic names {repeated[0]} twice")
    return {r.name: r for r in ranges}


def default_sizes(r: DimRange) -> list[int]:
    """Powers of two inside the range, below its high end, then the high end."""
    sizes, p = [], 1
    while p < r.high:
        if p >= r.low:
            sizes.append(p)
        p *= 2
    return [*sizes, r.high]


def parse_sizes(text: str, ranges: Mapping[str, DimRange]) -> dict[str, list[int]]:
    """``1,8,32,64`` (one dynamic dimension) or ``batch=1,8,64`` (the CLI's ``--buckets``)."""
    name, _, values = text.rpartition("=")
    if not name:
        if len(ranges) != 1:
            raise DnncError(f"--buckets {text!r}: name the dimension (like batch=1,8,64): {len(ranges)} are dynamic")
        name = next(iter(ranges))
    try:
        sizes = [int(v) for v in values.split(",") if v.strip()]
    except ValueError:
        raise DnncError(f"--buckets {text!r}: expected sizes separated by commas, like 1,8,32,64") from None
    return {name.strip(): sizes}


def bucket_sizes(
    ranges: Mapping[str, DimRange], chosen: Mapping[str, Sequence[int]] | Sequence[int] | None
) -> dict[str, list[int]]:
    """Each dimension's bucket sizes: those chosen (a list where one dimension is
    dynamic, else by name) or the default; the range's high end is always one, so
    every size in the range has a bucket."""
    if chosen is None:
        chosen = {}
    elif not isinstance(chosen, Mapping):
        if len(ranges) != 1:
            raise DnncError(f"buckets: name each dimension's sizes ({{'batch': [...]}}): {len(ranges)} are dynamic")
        chosen = {next(iter(ranges)): list(chosen)}
    for name in chosen:
        if name not in ranges:
            raise DnncError(f"buckets for {name!r}, which is not dynamic (dynamic: {', '.join(ranges) or 'nothing'})")
    out = {}
    for name, r in ranges.items():
        sizes = sorted(set(chosen.get(name) or default_sizes(r)))
        outside = [s for s in sizes if not r.low <= s <= r.high]
        if outside:
            raise DnncError(f"bucket {name}={outside[0]} is outside the range {r.text()}")
        if sizes[-1] != r.high:
            sizes.append(r.high)
        out[name] = sizes
    count = math.prod(len(sizes) for sizes in out.values())
    if count > MAX_BUCKETS:
        raise DnncError(
            f"{count} buckets ({' x '.join(str(len(s)) for s in out.values())}); at most {MAX_BUCKETS}: choose fewer sizes"
        )
    return out


Key = tuple[int, ...]
"""A bucket: one size per dynamic dimension, in the order of ``BucketPlan.names``."""


@dataclass
class BucketPlan:
    """The ranges, the buckets, and where each named dimension is in every input and output."""

    ranges: dict[str, DimRange]
    sizes: dict[str, list[int]]
    input_axes: list[dict[str, int]]
    """Per flat input: dimension name -> axis."""
    output_axes: list[dict[str, int]] = field(default_factory=list)
    """Per flat output: dimension name -> axis (outputs whose size follows the input's)."""

    @property
    def names(self) -> list[str]:
        return list(self.ranges)

    def buckets(self) -> list[Key]:
        """Every bucket, the largest first."""
        grid = itertools.product(*(self.sizes[n] for n in self.names))
        return sorted(grid, key=lambda k: (math.prod(k), k), reverse=True)

    def label(self, key: Key) -> str:
        return ",".join(f"{n}={s}" for n, s in zip(self.names, key))

    def key_of(self, label: str) -> Key:
        parts = dict(p.split("=", 1) for p in label.split(","))
        return tuple(int(parts[n]) for n in self.names)

    def measure(self, inputs: Sequence[torch.Tensor]) -> Key:
        """The size of each dynamic dimension in these inputs; an ``InputError`` where
        inputs disagree or a size is outside its range."""
        if len(inputs) != len(self.input_axes):
            raise InputError(f"expected {len(self.input_axes)} input(s), got {len(inputs)}")
        found: dict[str, tuple[int, int]] = {}
        for i, (x, axes) in enumerate(zip(inputs, self.input_axes)):
            if not isinstance(x, torch.Tensor):
                raise InputError(f"input {i}: expected a tensor, got {type(x).__name__}")
            for name, axis in axes.items():
                if x.dim() <= axis:
                    raise InputError(f"input {i}: expected {name} at dimension {axis}, got shape {list(x.shape)}")
                size = x.shape[axis]
                if name in found and found[name][1] != size:
                    j, other = found[name]
                    raise InputError(f"inputs disagree on {name}: input {j} has {other}, input {i} has {size}")
                found[name] = (i, size)
        key = []
        for name in self.names:
            size = found[name][1]
            r = self.ranges[name]
            if not r.low <= size <= r.high:
                raise OutOfRangeError(f"{name} {size} is outside the compiled range {r.text()}")
            key.append(size)
        return tuple(key)

    def bucket_for(self, sizes: Key) -> Key:
        """The smallest bucket at or above each size."""
        return tuple(next(b for b in self.sizes[n] if b >= s) for n, s in zip(self.names, sizes))

    def to_json(self) -> dict[str, Any]:
        return {
            "ranges": {n: [r.low, r.high] for n, r in self.ranges.items()},
            "sizes": self.sizes,
            "input_axes": self.input_axes,
            "output_axes": self.output_axes,
        }

    @classmethod
    def from_json(cls, data: Any, where: str) -> BucketPlan:
        """A plan read back from a manifest, every field checked."""
        try:
            ranges = {n: checked_range(n, lo, hi) for n, (lo, hi) in data["ranges"].items()}
            sizes = {n: [int(s) for s in data["sizes"][n]] for n in ranges}
            plan = cls(ranges, bucket_sizes(ranges, sizes), _axes(data["input_axes"], ranges), _axes(data["output_axes"], ranges))
        except DnncError as e:
            raise DnncError(f"{where}: {e}") from None
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise DnncError(f"{where}: expected {{ranges, sizes, input_axes, output_axes}}, got {data!r} ({e})") from None
        if plan.sizes != sizes:
            raise DnncError(f"{where}: sizes {sizes} do not end at their ranges' high ends")
        return plan


def _axes(data: Any, ranges: Mapping[str, DimRange]) -> list[dict[str, int]]:
    out = []
    for entry in data:
        axes = {str(n): int(a) for n, a in entry.items()}
        if any(n not in ranges or a < 0 for n, a in axes.items()):
            raise ValueError(f"axes {entry!r} name a dimension that is not dynamic, or a negative axis")
        out.append(axes)
    return out


def input_axes(names: Sequence[str], inputs: Sequence[Any]) -> list[dict[str, int]]:
    """Where each named dimension is in each input (``AXES``); an error where an input
    that must carry one cannot (a scalar given for a batch)."""
    out = []
    for i, x in enumerate(inputs):
        if not isinstance(x, torch.Tensor):
            raise DnncError(f"dynamic shapes: example input {i} is a {type(x).__name__}; dynamic dimensions need tensor inputs")
        out.append({n: AXES[n] for n in names if x.dim() >= MIN_RANK[n]})
    for n in names:
        if not any(n in axes for axes in out):
            shapes = ", ".join(str(list(x.shape)) for x in inputs)
            raise DnncError(f"dynamic {n}: no input has dimension {AXES[n]} ({shapes})")
    return out


def resized(x: torch.Tensor, axes: Mapping[str, int], sizes: Mapping[str, int]) -> torch.Tensor:
    """``x`` with each named dimension at the given size, its entries repeated
    cyclically (token ids stay valid ids, masks stay masks)."""
    for name, axis in axes.items():
        n = sizes[name]
        if x.shape[axis] != n:
            index = torch.arange(n, device=x.device) % x.shape[axis]
            x = x.index_select(axis, index)
    return x


def copy_padded(
    into: torch.Tensor, x: torch.Tensor, axes: Mapping[str, int], previous: tuple[int, ...] | None
) -> tuple[int, ...]:
    """Copy ``x`` into the front of the bucket-sized ``into`` and zero what lies past it.
    ``into`` held an input of extent ``previous`` (per axis of ``axes``) with zeros past it,
    so only the part of that extent past ``x``'s is zeroed. Returns ``x``'s extent."""
    extent = tuple(x.shape[a] for a in axes.values())
    front = into
    for axis, n in zip(axes.values(), extent):
        front = front.narrow(axis, 0, n)
    front.copy_(x)
    stale = previous if previous is not None else tuple(into.shape[a] for a in axes.values())
    for axis, n, old in zip(axes.values(), extent, stale):
        if old > n:
            into.narrow(axis, n, old - n).zero_()
    return extent


def shape_at(shape: Sequence[int], axes: Mapping[str, int], sizes: Mapping[str, int]) -> tuple[int, ...]:
    """``shape`` with each named dimension at the given size."""
    out = list(shape)
    for name, axis in axes.items():
        if axis < len(out):
            out[axis] = sizes[name]
    return tuple(out)


def shape_problem(what: str, shape: Sequence[int], expected: Sequence[int], axes: Mapping[str, int]) -> str | None:
    """Why a tensor of ``shape`` cannot stand for one of ``expected`` whose named
    dimensions (``axes``) vary, as ``input 0: expected shape [batch, 3, 6, 6], got
    [2, 3, 5, 6]``; None where it can."""
    varying = {axis: name for name, axis in axes.items()}
    if len(shape) == len(expected) and all(a in varying or s == e for a, (s, e) in enumerate(zip(shape, expected))):
        return None
    shown = ", ".join(varying.get(a, str(d)) for a, d in enumerate(expected))
    return f"{what}: expected shape [{shown}], got {list(shape)}"


def cut(t: torch.Tensor, axes: Mapping[str, int], sizes: Mapping[str, int]) -> torch.Tensor:
    """An output of a padded call cut back to the real sizes (a view)."""
    for name, axis in axes.items():
        if t.shape[axis] != sizes[name]:
            t = t.narrow(axis, 0, sizes[name])
    return t
