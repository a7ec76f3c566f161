"""Which records apply, in which order.

Libraries come in layers, highest precedence first: ``user`` (``--tuning-spec``),
``project`` (the search path), ``sku`` (a GPU model), ``arch`` (an architecture,
``sm_90``), ``generic``. A library's ``layer`` key overrides where it was loaded
from. Layers are applied from the lowest up: ``append`` puts a library's records
in front of what the layers below gave, ``replace`` drops what they gave, and
``disable`` drops it and adds nothing. Within one layer, a library given earlier
takes precedence over one given later. Records for another architecture or GPU
are left out; records whose library-version range excludes the installed version
are left out with a warning (one per reason, with a count). A record that needs a
library whose version is not known here (not installed, not named) is left out when
specs are applied, and kept but listed as unchecked when a library is merged for a
target (``unknown_versions="keep"``). For a group, the first record that matches decides.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from packaging.version import InvalidVersion, Version

from dnnc.specs.format import LAYER_NAMES, Library, Record
from dnnc.specs.match import GroupFacts

LAYERS = LAYER_NAMES
"""Highest precedence first."""


@dataclass(frozen=True)
class Device:
    arch: str | None
    """``sm_90``; None (no GPU here): records of every target apply."""
    name: str
    """The GPU's name, e.g. ``NVIDIA H100 80GB HBM3``."""
    versions: Mapping[str, str] = field(default_factory=dict)
    """Installed library versions by name (``cudnn``, ``triton``)."""


@dataclass
class Resolved:
    records: list[Record]
    """Applicable records, the first match wins."""
    warnings: list[str]
    other_target: list[Record]
    """Records for another architecture or GPU (reported, never applied)."""
    unchecked: dict[str, list[Record]] = field(default_factory=dict)
    """Kept records whose version range could not be checked, by the library whose
    version is unknown here (only with ``unknown_versions="keep"``)."""

    def decide(self, facts: GroupFacts) -> Record | None:
        return next((r for r in self.records if r.matcher.matches(facts)), None)


def resolve(libraries: Sequence[tuple[str, Library]], device: Device, unknown_versions: str = "skip") -> Resolved:
    """``libraries``: (the layer it was loaded as, the library), in the order given.
    ``unknown_versions``: ``skip`` or ``keep`` the records that need a library whose
    version ``device`` does not know."""
    if unknown_versions not in ("skip", "keep"):
        raise ValueError(f"unknown_versions={unknown_versions!r}: expected skip or keep")
    for layer, _ in libraries:
        if layer not in LAYERS:
            raise ValueError(f"layer {layer!r}: expected one of {', '.join(LAYERS)}")
    placed = [(lib.layer or layer, lib) for layer, lib in libraries]
    active: list[Record] = []
    for layer in reversed(LAYERS):
        for _, lib in reversed([p for p in placed if p[0] == layer]):
            if lib.mode == "append":
                active = [*lib.records, *active]
            elif lib.mode == "replace":
                active = list(lib.records)
            else:
                active = []
    applicable: list[Record] = []
    other: list[Record] = []
    skipped: dict[str, list[Record]] = {}
    unchecked: dict[str, list[Record]] = {}
    for record in active:
        if not _for_device(record, device):
            other.append(record)
            continue
        unknown = [lib for lib in record.versions if lib not in device.versions]
        if unknown and unknown_versions == "keep":
            unchecked.setdefault(unknown[0], []).append(record)
            applicable.append(record)
            continue
        problem = _version_problem(record, device)
        if problem:
            skipped.setdefault(problem, []).append(record)
            continue
        applicable.append(record)
    return Resolved(applicable, [_skipped_text(p, rs) for p, rs in skipped.items()], other, unchecked)


def _skipped_text(problem: str, records: list[Record]) -> str:
    first = records[0]
    if len(records) == 1:
        return f"{first.source}: {record_label(first)} skipped: {problem}"
    return f"{len(records)} records skipped: {problem} (the first: {first.source}, {record_label(first)})"


def _for_device(record: Record, device: Device) -> bool:
    t = record.target
    if device.arch is None:
        return True
    return (t.arch is None or t.arch == device.arch) and (t.sku is None or t.sku.lower() in device.name.lower())


def _version_problem(record: Record, device: Device) -> str | None:
    for library, wanted in record.versions.items():
        installed = device.versions.get(library)
        if installed is None:
            return f"needs {library} {wanted}, which is not installed"
        try:
            if Version(installed) not in wanted:
                return f"needs {library} {wanted}, installed {installed}"
        except InvalidVersion:
            return f"needs {library} {wanted}, installed {installed!r} (not a version)"
    return None


def record_label(record: Record) -> str:
    return f"record {record.name!r}" if record.name else "record"


def local_device(
    arch: str | None = None, name: str | None = None, versions: Mapping[str, str] | None = None, required: bool = True
) -> Device:
    """The GPU here (or the one named) and the installed cuDNN and Triton versions;
    what is given overrides what is found. Without a GPU and without ``arch``: ValueError
    when ``required``, else a device of unknown architecture (every target applies)."""
    import torch

    from dnnc.version import library_versions

    if arch is not None and not re.fullmatch(r"sm_\d{2,3}a?", arch):
        raise ValueError(f"--arch {arch!r}: expected an architecture like sm_90")
    installed = library_versions()
    found: dict[str, str] = {}
    if installed["cudnn"]:
        v = int(installed["cudnn"])
        found["cudnn"] = f"{v // 10000}.{v % 10000 // 100}.{v % 100}"
    if installed["triton"]:
        found["triton"] = installed["triton"]
    found |= dict(versions or {})
    if arch is None or name is None:
        if not torch.cuda.is_available():
            if arch is None and required:
                raise ValueError("no GPU here: name the target with --arch (like sm_90)")
        else:
            major, minor = torch.cuda.get_device_capability(0)
            arch = arch or f"sm_{major}{minor}"
            name = name or torch.cuda.get_device_name(0)
    return Device(arch, name or "", found)
