"""Spec decisions inside the partitioner: for every group cuDNN could root, the
first record that matches (``facts.first_match``) decides instead of the cost model.

* ``cudnn``: Triton loses that root. The matched group (that epilogue prefix) stays,
  and so does every other prefix there that some cuDNN record matches; prefixes no
  record speaks of are dropped. Each kept prefix takes its own record's plan: an
  engine id / tag becomes the graph's plan (``SPEC_PLAN_ATTR``), rebuilt at build time
  without tuning. A record's ``provenance.measured_ms`` (``dnnc tune`` writes it) is
  the prefix's price, so where several prefixes stay the cover chooses among them as
  the measured compile did: two identical convolutions feeding one residual add, say,
  of which only one can take the add.
* ``triton``: cuDNN candidates at the root are dropped; a config given is put on the
  root op (``SPEC_CONFIG_ATTR``) and the Triton kernel that holds it uses it, untuned.

Spec-decided candidates are not timed. The decision record names the record that
decided each group, so artifacts carry it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Operation

from dnnc import knobs
from dnnc.backends.interface import SPEC_CONFIG_ATTR
from dnnc.partition.backends import role_of
from dnnc.partition.candidates import Candidate, Role
from dnnc.partition.spec_facts import facts_of, first_match, library_prefixes
from dnnc.specs.format import Library, Record, load_library
from dnnc.specs.library import Device, Resolved, local_device, record_label, resolve


@dataclass
class Applied:
    """What the specs decided: candidates kept, the record per decided root, Triton configs."""

    candidates: list[Candidate]
    by_root: dict[Operation, Record] = field(default_factory=dict)
    configs: dict[Operation, dict[str, int]] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)
    """Decisions the policy cannot follow (Triton under ``cudnn-only``)."""
    complete: bool = False
    """A record decided every cuDNN-rootable group (nothing is left to measure)."""

    def source_of(self, c: Candidate) -> str | None:
        for op in c.ops:
            if op in self.by_root:
                r = self.by_root[op]
                return f"{r.source} ({record_label(r)})"
        return None


DEFAULTS = Path(__file__).parents[1] / "specs" / "defaults"
"""The libraries shipped with dnnc (see its README)."""


def configured_libraries(defaults: Path = DEFAULTS) -> list[tuple[str, Library]]:
    """The user layer (``knobs.tuning_specs``), the project layer
    (``knobs.tuning_spec_path``), then the shipped libraries (``default_layer``)."""
    settings = knobs.get()
    out: list[tuple[str, Library]] = []
    for layer, paths in (("user", settings.tuning_specs), ("project", settings.tuning_spec_path)):
        for p in (x for x in paths.split(os.pathsep) if x.strip()):
            out += [(layer, lib) for lib in load_library(Path(p))]
    if settings.tuning_spec_defaults and defaults.is_dir():
        out += [(default_layer(lib), lib) for lib in load_library(defaults)]
    return out


def only_specs(paths: str) -> dict[str, object]:
    """Knob settings under which exactly the specs at ``paths`` (the OS path
    separator between them; empty: none) are in force, as the user layer."""
    return {"tuning_specs": paths, "tuning_spec_path": "", "tuning_spec_defaults": False}


def default_layer(lib: Library) -> str:
    """``sku`` for a library whose records target a GPU model, ``arch`` for an
    architecture, ``generic`` otherwise (a ``layer`` key in the file wins)."""
    if lib.layer is not None:
        return lib.layer
    if any(r.target.sku for r in lib.records):
        return "sku"
    return "arch" if any(r.target.arch for r in lib.records) else "generic"


_TARGET: ContextVar[tuple[Device, str] | None] = ContextVar("dnnc_spec_target", default=None)


@contextlib.contextmanager
def specs_for(device: Device, unknown_versions: str = "skip") -> Iterator[None]:
    """Resolve the specs for ``device`` (its architecture, GPU name and library
    versions) instead of the GPU and libraries here: ``dnnc spec verify --model`` with
    ``--arch`` / ``--cudnn`` checks the decisions that machine would take, a build for
    another GPU (``cross_compile``) takes them. ``unknown_versions``: ``keep`` applies
    the records that need a library whose version ``device`` does not know (the one
    where the program will run), as ``specs.library.resolve`` does."""
    token = _TARGET.set((device, unknown_versions))
    try:
        yield
    finally:
        _TARGET.reset(token)


def active() -> tuple[Resolved, str] | None:
    """The resolved specs for the GPU here (or the one ``specs_for`` names) and a
    fingerprint of their text and that target (None: no specs)."""
    libraries = configured_libraries()
    if not libraries:
        return None
    named = _TARGET.get()
    if named is None:
        resolved = resolve(libraries, local_device(required=False))
    else:
        resolved = resolve(libraries, named[0], unknown_versions=named[1])
    digest = hashlib.sha256()
    for layer, lib in libraries:
        digest.update(f"{layer}\0{lib.path}\0{lib.sha256}\0".encode())
    if named is not None:
        target, unknown = named
        digest.update(repr((target.arch, target.name, sorted(target.versions.items()), unknown)).encode())
    return resolved, digest.hexdigest()


def apply_specs(candidates: Sequence[Candidate], resolved: Resolved) -> Applied:
    dropped: set[int] = set()
    applied = Applied([])
    roots = library_prefixes(candidates)
    for root, cands in roots.items():
        found = first_match(resolved.records, cands)
        if found is None:
            continue
        record, chosen = found
        root_index = min(chosen.covers)
        decided = record.decision.backend
        if not any(c.backend == decided and root_index in c.covers for c in candidates):
            applied.ignored.append(
                f"{record.source} ({record_label(record)}): this policy gives {decided} no group at {chosen.label}"
            )
            continue
        applied.by_root[root] = record
        if role_of(decided) is Role.LIBRARY:
            dropped |= {id(c) for c in candidates if c.role is not None and c.backend != decided and root_index in c.covers}
            for c in cands:
                own = record if c is chosen else _first_record_for(resolved.records, c)
                if own is None:
                    dropped.add(id(c))
                    continue
                c.spec = own.source
                c.spec_plan = own.decision.applied
                if isinstance(own.provenance.get("measured_ms"), int | float):
                    c.measured_ms = float(own.provenance["measured_ms"])
        else:
            dropped |= {id(c) for c in cands}
            config = record.decision.applied
            if config:
                applied.configs[root] = config
    applied.candidates = [c for c in candidates if id(c) not in dropped]
    applied.complete = bool(roots) and set(roots) <= set(applied.by_root)
    return applied


def _first_record_for(records: Sequence[Record], c: Candidate) -> Record | None:
    """The first record that puts exactly this prefix on its backend, if any."""
    facts = facts_of(c)
    return next((r for r in records if r.decision.backend == c.backend and r.matcher.matches(facts)), None)


def mark_configs(configs: dict[Operation, dict[str, int]], ops: dict[Operation, Operation] | None = None) -> None:
    """Put each spec-chosen Triton config on its root op (on a clone: through ``ops``)."""
    for op, config in configs.items():
        (ops[op] if ops is not None else op).attributes[SPEC_CONFIG_ATTR] = StringAttr(json.dumps(config, sort_keys=True))
