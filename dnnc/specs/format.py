"""The tuning-spec file: TOML, one library per file, validated when loaded, every
error naming the file and line.

    schema = 1
    layer = "user"              # user | project | sku | arch | generic (else: where it was loaded from)
    mode = "append"             # append | replace (the layers below are dropped) | disable (and nothing added)
    target = { arch = "sm_90", sku = "H100" }   # default for the records; sku: a part of the GPU name

    [[record]]
    name = "ResNet-50 stem"     # optional, for reports
    match = { kind = "conv_bias_relu", dtype = ["f16"], input = ["*", 3, 224, 224], weight = [64, 3, 7, 7] }
    versions = { cudnn = ">=9.0,<10" }          # library-version ranges (PEP 440); others: triton
    decision = { backend = "cudnn", engine = 32, knobs = { TILE_SIZE = 2 }, tag = "eng32_k2=2_k6=3" }
    # or decision = { backend = "triton", config = { BLOCK_M = 64, BLOCK_N = 64, BLOCK_K = 32, num_warps = 4 } }
    provenance = { by = "dnnc tune", measured_ms = 0.021, baseline_ms = 0.030, date = "2026-11-22" }
"""

from __future__ import annotations

import hashlib
import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from dnnc.errors import DnncError
from dnnc.runtime.kernel_backends import spec_choices
from dnnc.specs.match import Matcher, parse_matcher

SCHEMA = 1
LAYER_NAMES = ("user", "project", "sku", "arch", "generic")
MODES = ("append", "replace", "disable")
CHOICES = spec_choices()
"""Backend name -> what a decision for it may say (the backends a spec can choose)."""
LIBRARIES = tuple(dict.fromkeys(c.library for c in CHOICES.values()))
"""The libraries a record's ``versions`` may name."""


class SpecError(DnncError):
    """A tuning spec that cannot be used, with the file and line to look at."""


@dataclass(frozen=True)
class Target:
    arch: str | None = None
    """``sm_90``; None: any."""
    sku: str | None = None
    """A part of the GPU's name (``H100``); None: any."""


@dataclass(frozen=True)
class Decision:
    backend: str
    choice: Mapping[str, Any] = field(default_factory=dict)
    """The decision's other fields, as the backend's ``SpecChoice`` reads them (a plan,
    a config); empty: the backend alone is chosen."""

    def describe(self) -> str:
        """The backend and its choice in a few words (``cudnn eng32_k2=2``), for reports."""
        return f"{self.backend} {CHOICES[self.backend].describe(self.choice)}".strip()

    @property
    def applied(self) -> Any:
        """What the backend builds the chosen kernel from (a plan, a config), or None."""
        return CHOICES[self.backend].applied(self.choice)


@dataclass(frozen=True)
class Record:
    matcher: Matcher
    decision: Decision
    target: Target
    versions: Mapping[str, SpecifierSet]
    provenance: Mapping[str, Any]
    name: str
    source: str
    """``file:line`` of the record's ``[[record]]`` header."""


@dataclass(frozen=True)
class Library:
    path: str
    layer: str | None
    mode: str
    records: tuple[Record, ...]
    sha256: str = ""
    """Of the text it was parsed from (what a cache keyed by the specs in force hashes)."""


def load_library(path: str | Path) -> list[Library]:
    """A file, or every ``*.toml`` in a directory (in name order)."""
    p = Path(path)
    if p.is_dir():
        files = sorted(p.glob("*.toml"))
        if not files:
            raise SpecError(f"{p}: a directory of tuning specs, but it holds no *.toml file")
        return [lib for f in files for lib in load_library(f)]
    try:
        text = p.read_bytes().decode("utf-8")
    except OSError as e:
        raise SpecError(f"{p}: cannot read the tuning spec: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise SpecError(f"{p}: not UTF-8 text (byte {e.start}); a tuning spec is a TOML file") from None
    return [parse_library(text, str(p))]


def parse_library(text: str, path: str = "<spec>") -> Library:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"{path}: not valid TOML: {e}") from None
    lines = text.splitlines()
    at = _Locator(path, lines)
    schema = doc.get("schema")
    if schema != SCHEMA:
        raise SpecError(f"{at.key('schema')}: schema = {schema!r}: this dnnc reads schema {SCHEMA}")
    unknown = set(doc) - {"schema", "layer", "mode", "target", "record"}
    if unknown:
        raise SpecError(f"{at.key(sorted(unknown)[0])}: unknown key {sorted(unknown)[0]!r}")
    layer = doc.get("layer")
    if layer is not None and layer not in LAYER_NAMES:
        raise SpecError(f"{at.key('layer')}: layer = {layer!r}: expected one of {', '.join(LAYER_NAMES)}")
    mode = doc.get("mode", "append")
    if mode not in MODES:
        raise SpecError(f"{at.key('mode')}: mode = {mode!r}: expected one of {', '.join(MODES)}")
    default_target = _target(doc.get("target", {}), at.key("target"))
    raw = doc.get("record", [])
    if not isinstance(raw, list):
        raise SpecError(f"{at.key('record')}: records are [[record]] tables")
    headers = [i + 1 for i, line in enumerate(lines) if line.strip() == "[[record]]"]
    records = []
    for i, entry in enumerate(raw):
        line = headers[i] if i < len(headers) else None
        where = f"{path}:{line}" if line else path
        records.append(_record(entry, where, default_target, at.within(line, headers[i + 1] if i + 1 < len(headers) else None)))
    if mode == "disable" and records:
        raise SpecError(f"{at.key('mode')}: a library with mode = 'disable' adds no records (it has {len(records)})")
    return Library(path, layer, mode, tuple(records), hashlib.sha256(text.encode()).hexdigest())


class _Locator:
    """``file:line`` of a key (the first line that assigns it), for messages."""

    def __init__(self, path: str, lines: list[str], start: int | None = None, end: int | None = None):
        self.path, self.lines, self.start, self.end = path, lines, start or 1, end

    def key(self, name: str) -> str:
        pattern = re.compile(rf"^\s*{re.escape(name.split('.')[0])}\s*[=.]|\b{re.escape(name.split('.')[-1])}\s*=")
        stop = self.end - 1 if self.end else len(self.lines)
        for number in range(self.start, stop + 1):
            if pattern.search(self.lines[number - 1]):
                return f"{self.path}:{number}"
        return f"{self.path}:{self.start}" if self.start > 1 else self.path

    def within(self, start: int | None, end: int | None) -> _Locator:
        return _Locator(self.path, self.lines, start, end)


def _record(entry: Any, where: str, default: Target, at: _Locator) -> Record:
    name = entry.get("name", "") if isinstance(entry, dict) else ""
    label = f"record {name!r}" if name else "record"
    if not isinstance(entry, dict):
        raise SpecError(f"{where}: a record is a table")
    unknown = set(entry) - {"name", "match", "target", "versions", "decision", "provenance"}
    if unknown:
        key = sorted(unknown)[0]
        raise SpecError(f"{at.key(key)}: {label}: unknown key {key!r}")
    for required in ("match", "decision"):
        if not isinstance(entry.get(required), dict):
            raise SpecError(f"{where}: {label}: needs a {required} table")
    try:
        matcher = parse_matcher(entry["match"])
    except ValueError as e:
        raise SpecError(f"{at.key(str(e).split(':')[0])}: {label}: {e}") from None
    decision = _decision(entry["decision"], label, at)
    target = _target(entry["target"], at.key("target")) if "target" in entry else default
    versions = _versions(entry.get("versions", {}), label, at)
    provenance = entry.get("provenance", {})
    if not isinstance(provenance, dict):
        raise SpecError(f"{at.key('provenance')}: {label}: provenance is a table")
    for key in ("measured_ms", "baseline_ms"):
        value = provenance.get(key)
        if key in provenance and (
            not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value) or value < 0
        ):
            raise SpecError(
                f"{at.key(key)}: {label}: provenance.{key} = {value!r}: expected a finite, non-negative number of milliseconds"
            )
    return Record(matcher, decision, target, versions, provenance, name, where)


def _decision(table: Mapping[str, Any], label: str, at: _Locator) -> Decision:
    backend = table.get("backend")
    if backend not in CHOICES:
        raise SpecError(f"{at.key('backend')}: {label}: decision.backend = {backend!r}: expected one of {', '.join(CHOICES)}")
    spec = CHOICES[backend]
    extra = set(table) - {"backend", *spec.keys}
    if extra:
        key = sorted(extra)[0]
        raise SpecError(f"{at.key(key)}: {label}: decision.{key} does not apply to backend {backend!r}")
    choice = {k: table[k] for k in spec.keys if k in table}
    problem = spec.problem(choice)
    if problem is not None:
        key, message = problem
        raise SpecError(f"{at.key(key)}: {label}: {message}")
    return Decision(backend, choice)


def _target(table: Any, where: str) -> Target:
    if not isinstance(table, dict) or set(table) - {"arch", "sku"}:
        raise SpecError(f"{where}: target is a table of arch (like 'sm_90') and sku (part of the GPU name)")
    arch = table.get("arch")
    if arch is not None and not re.fullmatch(r"sm_\d{2,3}a?", str(arch)):
        raise SpecError(f"{where}: target.arch = {arch!r}: expected an architecture like 'sm_90'")
    sku = table.get("sku")
    if sku is not None and not isinstance(sku, str):
        raise SpecError(f"{where}: target.sku is a part of the GPU name, like 'H100'")
    return Target(arch, sku)


def _versions(table: Any, label: str, at: _Locator) -> dict[str, SpecifierSet]:
    if not isinstance(table, dict):
        raise SpecError(f"{at.key('versions')}: {label}: versions is a table of library ranges")
    out = {}
    for library, text in table.items():
        if library not in LIBRARIES:
            raise SpecError(f"{at.key(library)}: {label}: versions.{library}: expected one of {', '.join(LIBRARIES)}")
        try:
            out[library] = SpecifierSet(str(text))
        except InvalidSpecifier:
            raise SpecError(
                f"{at.key(library)}: {label}: versions.{library} = {text!r} is not a version range like '>=9.0,<10'"
            ) from None
    return out
