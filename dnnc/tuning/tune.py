"""``dnnc tune``: turn what one measured compile decided into a tuning spec.

The partitioner marks every cuDNN-rootable op with what a spec would match there
(``SITE_ATTR``, ``facts.mark_sites``). After a compile that measured its choices
(``auto``, times and plans tuned on this GPU), each marked site of the built program
gives one record: the group's kind, element type and exact shapes, and the decision
it got, down to the cuDNN plan (engine, knobs) or the Triton config the kernel was
built with. Provenance says what was measured, against what, where and when.

Sites with identical facts that were decided differently cannot both be written
(the first match wins when the spec is applied); ``Tuned.conflicts`` names them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from packaging.specifiers import SpecifierSet
from xdsl.ir import Operation

from dnnc.errors import DnncError
from dnnc.ir.program import Program
from dnnc.partition.spec_apply import only_specs
from dnnc.partition.spec_facts import marked_sites
from dnnc.runtime.kernel_backends import backend_of
from dnnc.specs.format import CHOICES, LIBRARIES, Decision, Record, Target
from dnnc.specs.match import GroupFacts, parse_matcher
from dnnc.specs.write import library_toml


@dataclass(frozen=True)
class BuiltSite:
    """One marked site of a built program and the decision it got."""

    facts: GroupFacts
    group: int
    """Its group in the decision record."""
    decision: Decision | None
    """None: nothing known to write (a generated kernel not built here)."""
    kernel_ms: float | None = None
    """The chosen plan's or config's own time where it was tuned, else None."""
    backend: str = ""
    """The backend that took the site."""


def built_sites(program: Program, kernels: Mapping[Operation, Any] | None = None) -> list[BuiltSite]:
    """The marked sites of ``program`` in program order; ``kernels``: the built kernel
    of each op. The backend that takes the op reads its decision off the kernel (a
    cuDNN plan, a Triton config); an op without a kernel has what a spec put on it."""
    found: list[BuiltSite] = []
    for op, facts, group in marked_sites(program):
        kernel = (kernels or {}).get(op)
        backend = backend_of(op)
        assert backend is not None and backend.spec is not None, f"a site on {op.name}, which no spec can choose"
        choice = backend.spec.of_kernel(op, kernel)
        decision = Decision(backend.name, choice) if choice is not None else None
        found.append(BuiltSite(facts, group, decision, getattr(kernel, "tuned_ms", None), backend.name))
    return found


def sites_of(compiled: Any) -> list[BuiltSite]:
    """``built_sites`` of a ``CompiledModule`` built on the GPU, with its kernels."""
    return built_sites(compiled.program, compiled.kernels())


@dataclass
class Tuned:
    records: list[Record]
    conflicts: list[str] = field(default_factory=list)
    """Sites whose facts equal an earlier site's but whose decision differs."""
    skipped: list[str] = field(default_factory=list)
    """Sites with no decision to write (a generated kernel not built here)."""
    sites: int = 0


def records_from(
    sites: Sequence[BuiltSite],
    decisions: Mapping[str, Any] | None,
    target: Target,
    versions: Mapping[str, str],
    provenance: Mapping[str, Any],
) -> Tuned:
    """One record per distinct site; ``decisions``: the decision record (measured
    times for provenance); ``versions``: installed ``cudnn`` and ``triton`` (records
    hold only for the same cuDNN minor release and Triton major release)."""
    groups = (decisions or {}).get("groups", [])
    tuned = Tuned([], sites=len(sites))
    by_matcher: dict[str, Record] = {}
    for site in sites:
        label = _label(site.facts)
        if site.decision is None:
            tuned.skipped.append(f"{label}: a {site.backend or 'kernel'} group not built here (no choice known to write)")
            continue
        matcher = parse_matcher(_match_table(site.facts))
        key = matcher.describe()
        earlier = by_matcher.get(key)
        if earlier is not None:
            if earlier.decision != site.decision:
                tuned.conflicts.append(
                    f"{label} (group {site.group}) was tuned to {site.decision.describe()}, but an identical group "
                    f"to {earlier.decision.describe()}; the spec keeps the first"
                )
            continue
        group = groups[site.group] if 0 <= site.group < len(groups) else {}
        record = Record(
            matcher,
            site.decision,
            target,
            _ranges(site.decision, versions),
            {**provenance, **_times(site, group)},
            label,
            "dnnc tune",
        )
        by_matcher[key] = record
        tuned.records.append(record)
    return tuned


def _label(facts: GroupFacts) -> str:
    shapes = " ".join(f"{k} {'x'.join(map(str, v))}" for k, v in facts.shapes.items())
    return f"{facts.kind} {facts.dtype} {shapes}".strip()


def _match_table(facts: GroupFacts) -> dict[str, object]:
    return {"kind": facts.kind, "dtype": [facts.dtype], **{k: list(v) for k, v in facts.shapes.items()}}


def _ranges(decision: Decision, versions: Mapping[str, str]) -> dict[str, SpecifierSet]:
    """The installed release range of the library the choice depends on (a cuDNN plan:
    one minor release; a Triton config: one major release); none for a bare choice of
    the backend."""
    spec = CHOICES[decision.backend]
    found = versions.get(spec.library)
    held = spec.holds_for(decision.choice, found) if found else None
    return {spec.library: SpecifierSet(held)} if held else {}


def _times(site: BuiltSite, group: Mapping[str, Any]) -> dict[str, Any]:
    """The group's measured time, the best measured way the other backend ran the same
    ops' root, and the kernel's own tuned time."""
    out: dict[str, Any] = {}
    if group.get("measured_ms") is not None:
        out["measured_ms"] = round(float(group["measured_ms"]), 5)
    others = [
        a["measured_ms"]
        for a in group.get("alternatives", [])
        if a.get("measured_ms") is not None and a.get("backend") != site.decision.backend  # type: ignore[union-attr]
    ]
    if others:
        out["baseline_ms"] = round(float(min(others)), 5)
    if site.kernel_ms is not None:
        out["kernel_ms"] = round(float(site.kernel_ms), 5)
    return out


def spec_text(tuned: Tuned, model: str, device: str) -> str:
    comments = [
        f"written by `dnnc tune` for {model} on {device}, {dt.date.today().isoformat()}",
        "one record per distinct cuDNN-rootable group: its kind, element type and exact shapes, and what won there",
    ]
    return library_toml(tuned.records, comments)


def default_provenance(device: str, versions: Mapping[str, str | None]) -> dict[str, Any]:
    from dnnc.version import __version__

    return {
        "by": "dnnc tune",
        "dnnc": __version__,
        "device": device,
        "date": dt.date.today().isoformat(),
        **{k: v for k, v in versions.items() if k in LIBRARIES and v},
    }


@dataclass
class TuneRun:
    compiled: Any
    """The measured compile (a ``CompiledModule`` on the GPU)."""
    tuned: Tuned
    seconds: float
    device: Any
    """``library.Device``: where it was measured."""


def tune(module: Any, inputs: Sequence[Any], sku: bool = False) -> TuneRun:
    """Compile with ``auto`` on this GPU, measuring (no spec consulted, not even the
    shipped ones), and turn what it chose into records targeted at this GPU's
    architecture (and its name, with ``sku``)."""
    import time

    import dnnc
    from dnnc import knobs
    from dnnc.specs.library import local_device
    from dnnc.version import library_versions

    device = local_device(required=False)
    if device.arch is None:
        raise DnncError("dnnc tune measures on a GPU, and none is visible here")
    started = time.perf_counter()
    from dnnc.backends import cudnn

    everything = {"tune_floor_us": 0.0, "runtime_compiled_plans": cudnn.MAX_TIMED_PLANS}  # every config and plan timed
    with knobs.override(partition="auto", measure=True, **everything, **only_specs("")):
        compiled = dnnc.compile(module, inputs, device="cuda")
    seconds = time.perf_counter() - started
    target = Target(device.arch, device.name if sku else None)
    provenance = default_provenance(device.name, {**library_versions(), **device.versions})
    tuned = records_from(sites_of(compiled), compiled.program.metadata.get("decisions"), target, device.versions, provenance)
    return TuneRun(compiled, tuned, seconds, device)


def reproduce(module: Any, inputs: Sequence[Any], spec: str, cache_dir: Any) -> tuple[Any, float]:
    """Compile again with only ``spec`` (``auto``, a fresh ``cache_dir``): when the spec
    decides every cuDNN-rootable group, nothing is measured."""
    import time

    import dnnc
    from dnnc import knobs

    started = time.perf_counter()
    with knobs.override(partition="auto", cache_dir=cache_dir, **only_specs(spec)):
        compiled = dnnc.compile(module, inputs, device="cuda")
    return compiled, time.perf_counter() - started


@dataclass
class GroupComparison:
    """Two decision records' groups (backend, kind, ops covered) side by side."""

    tuned_only: list[tuple[str, str, tuple[int, ...]]]
    applied_only: list[tuple[str, str, tuple[int, ...]]]

    @property
    def same(self) -> bool:
        return not self.tuned_only and not self.applied_only

    @property
    def swapped(self) -> bool:
        """The same groups, placed at other but identical sites (two equal convolutions
        feeding one residual add: which one takes the add is a tie)."""
        key = lambda g: (g[0], g[1], len(g[2]))  # noqa: E731
        return not self.same and sorted(map(key, self.tuned_only)) == sorted(map(key, self.applied_only))

    def lines(self) -> list[str]:
        return [f"tuned only: {g[0]} {g[1]} at {list(g[2])}" for g in self.tuned_only] + [
            f"with the spec only: {g[0]} {g[1]} at {list(g[2])}" for g in self.applied_only
        ]


def compare_groups(tuned: Mapping[str, Any], applied: Mapping[str, Any]) -> GroupComparison:
    def groups(record: Mapping[str, Any]) -> set[tuple[str, str, tuple[int, ...]]]:
        return {(g["backend"], g["kind"], tuple(g["nodes"])) for g in record.get("groups", [])}

    a, b = groups(tuned), groups(applied)
    return GroupComparison(sorted(a - b, key=lambda g: g[2]), sorted(b - a, key=lambda g: g[2]))


def decision_differences(tuned: Sequence[BuiltSite], applied: Sequence[BuiltSite]) -> list[str]:
    """Sites decided differently (plan, config or backend) in two built programs."""

    def described(sites: Sequence[BuiltSite]) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for s in sites:
            out.setdefault(_label(s.facts), set()).add(s.decision.describe() if s.decision else f"{s.backend} (choice unknown)")
        return out

    a, b = described(tuned), described(applied)
    return [
        f"{label}: tuned {sorted(a.get(label, ()))}, with the spec {sorted(b.get(label, ()))}"
        for label in sorted(set(a) | set(b))
        if a.get(label) != b.get(label)
    ]


@dataclass
class SpecCheck:
    """A tuned compile against a compile with only the spec it wrote, on a fresh cache."""

    seconds: float
    """The compile with the spec alone."""
    decisions: Mapping[str, Any]
    """That compile's decision record."""
    groups: GroupComparison
    differences: list[str]
    """Sites where the spec's compile decided otherwise than the tuned one."""
    times: dict[str, float]
    """Median ms of each program: ``tuned`` and ``with the spec``."""


def check_spec(run: TuneRun, module: Any, inputs: Sequence[Any], spec: str) -> SpecCheck:
    """Compile again with only ``spec`` on a fresh cache, compare the decisions and
    time both programs (100 calls each)."""
    import tempfile
    from pathlib import Path

    from dnnc.runtime.bench import bench

    with tempfile.TemporaryDirectory(prefix="dnnc-tune-check-") as fresh:
        applied, seconds = reproduce(module, inputs, spec, Path(fresh))
        decisions = applied.program.metadata.get("decisions") or {}
        groups = compare_groups(run.compiled.program.metadata.get("decisions") or {}, decisions)
        differences = decision_differences(sites_of(run.compiled), sites_of(applied))
        times = {label: bench(c, iterations=100).median_ms for label, c in (("tuned", run.compiled), ("with the spec", applied))}
    return SpecCheck(seconds, decisions, groups, differences, times)
