"""The manifest: what an artifact holds, what built it, and for which target.

Compatibility policy: the ``schema`` number decides whether this dnnc can read an
artifact, so a different schema is refused. The dnnc version that wrote it is
checked too: another major or minor version is refused (the IR dialects may have
changed), another patch version loads with a warning.
"""

from __future__ import annotations

import functools
import json
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from dnnc.errors import ArtifactError, ArtifactWarning
from dnnc.runtime.signature import TensorSpec
from dnnc.version import __version__

FORMAT = "dnnc-artifact"
SCHEMA_VERSION = 1
_TARGET = re.compile(r"^(cpu|sm_\d+)$")
_DTYPES = {
    str(d).removeprefix("torch."): d for d in (torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.bool)
}


def spec_json(spec: TensorSpec, name: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"shape": list(spec.shape), "dtype": str(spec.dtype).removeprefix("torch.")}
    if name is not None:
        out["name"] = name
    return out


@dataclass
class Manifest:
    data: dict[str, Any]
    source: Path

    @property
    def target(self) -> str:
        return self.data["target"]

    @property
    def members(self) -> dict[str, str]:
        return self.data["members"]

    @property
    def inputs(self) -> list[TensorSpec]:
        return self._specs("inputs")

    @property
    def outputs(self) -> list[TensorSpec]:
        return self._specs("outputs")

    def names(self, field: str) -> list[str | None]:
        """The ``inputs``' or ``outputs``' names (None where the artifact has none)."""
        return [s.get("name") for s in self.data[field]]

    def _specs(self, field: str) -> list[TensorSpec]:
        return specs_from_json(self.data[field])

    @functools.cached_property
    def plan(self) -> Any:
        """A bucketed artifact's ``BucketPlan``; None for one shape."""
        from dnnc.buckets import BucketPlan

        buckets = self.data.get("buckets")
        return None if buckets is None else BucketPlan.from_json(buckets["plan"], f"artifact {self.source}")

    def bucket_entries(self) -> list[tuple[str, str]]:
        """(label, member prefix) of every bucket, the largest first; one unnamed entry
        with no prefix for an artifact of one shape."""
        buckets = self.data.get("buckets")
        if buckets is None:
            return [("", "")]
        return [(e["label"], e["prefix"]) for e in buckets["entries"]]

    def bucket_field(self, index: int) -> dict[str, Any]:
        """The ``inputs``, ``outputs`` and ``summary`` of bucket ``index`` (the manifest's own for one shape)."""
        buckets = self.data.get("buckets")
        return self.data if buckets is None else buckets["entries"][index]


def specs_from_json(specs: list[dict[str, Any]]) -> list[TensorSpec]:
    return [TensorSpec(tuple(s["shape"]), _DTYPES[s["dtype"]]) for s in specs]


def _field_error(source: Path, field: str, expected: str, got: Any) -> ArtifactError:
    return ArtifactError(f"artifact {source}: manifest field {field!r} must be {expected}, got {got!r}")


def _require(data: dict[str, Any], source: Path, field: str, kind: type | tuple[type, ...], expected: str) -> Any:
    if field not in data:
        raise ArtifactError(f"artifact {source}: manifest has no field {field!r}")
    if not isinstance(data[field], kind):
        raise _field_error(source, field, expected, data[field])
    return data[field]


def _check_specs(data: dict[str, Any], source: Path, field: str, within: str = "") -> None:
    for i, s in enumerate(_require(data, source, field, list, "a list of {shape, dtype}")):
        ok = (
            isinstance(s, dict)
            and isinstance(s.get("shape"), list)
            and all(isinstance(d, int) and d >= 0 for d in s["shape"])
            and s.get("dtype") in _DTYPES
            and isinstance(s.get("name", ""), str)
        )
        if not ok:
            raise _field_error(
                source,
                f"{within + '.' if within else ''}{field}[{i}]",
                f"{{shape: [ints], dtype: one of {', '.join(_DTYPES)}, name: an optional string}}",
                s,
            )


_SUMMARY_FIELDS: dict[str, tuple[tuple[type, ...], str]] = {
    "memory_peak_bytes": ((int, type(None)), "an integer or null"),
    "device_name": ((str, type(None)), "a string or null"),
    "fallbacks": ((list,), "a list of objects"),
    "user_kernels": ((dict,), "an object of kernel name -> variant"),
    "steps": ((dict,), "an object of backend -> count"),
}


def _check_summary(data: dict[str, Any], source: Path) -> None:
    """The facts ``dnnc inspect`` shows are of the types it formats (the field is optional)."""
    summary = data.get("summary")
    if summary is None:
        return
    if not isinstance(summary, dict):
        raise _field_error(source, "summary", "an object", summary)
    for name, (kinds, expected) in _SUMMARY_FIELDS.items():
        if name in summary and not isinstance(summary[name], kinds):
            raise _field_error(source, f"summary.{name}", expected, summary[name])
    if not all(isinstance(f, dict) for f in summary.get("fallbacks", [])):
        raise _field_error(source, "summary.fallbacks", "a list of objects", summary["fallbacks"])


def _check_buckets(data: dict[str, Any], source: Path) -> None:
    """A bucketed artifact's plan and entries: one entry per bucket of the plan, the
    largest first with the top-level program, each other under ``buckets/<label>/``."""
    from dnnc.buckets import BucketPlan
    from dnnc.errors import DnncError

    buckets = data["buckets"]
    if not isinstance(buckets, dict) or not isinstance(buckets.get("entries"), list):
        raise _field_error(source, "buckets", "an object {plan, entries}", buckets)
    try:
        plan = BucketPlan.from_json(buckets.get("plan"), f"artifact {source}: manifest field 'buckets.plan'")
    except DnncError as e:
        raise ArtifactError(str(e)) from None
    labels = [plan.label(k) for k in plan.buckets()]
    entries = buckets["entries"]
    for i, entry in enumerate(entries):
        where = f"buckets.entries[{i}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("label"), str):
            raise _field_error(source, where, "an object {label, prefix, inputs, outputs, summary}", entry)
        expected = "" if i == 0 else f"buckets/{entry['label']}/"
        if entry.get("prefix") != expected:
            raise _field_error(source, f"{where}.prefix", repr(expected), entry.get("prefix"))
        _check_specs(entry, source, "inputs", where)
        _check_specs(entry, source, "outputs", where)
        _check_summary(entry, source)
    if [e["label"] for e in entries] != labels:
        raise _field_error(
            source, "buckets.entries", f"one entry per bucket, in the order {labels}", [e["label"] for e in entries]
        )


def _check_dnnc_version(written: str, source: Path) -> None:
    theirs, ours = written.split("."), __version__.split(".")
    if theirs[:2] != ours[:2]:
        raise ArtifactError(
            f"artifact {source} was written by dnnc {written}; this is dnnc {__version__}, which loads artifacts of "
            f"dnnc {'.'.join(ours[:2])}.x only: compile the model again"
        )
    if theirs != ours:
        warnings.warn(
            f"artifact {source} was written by dnnc {written}; loading it with dnnc {__version__}", ArtifactWarning, stacklevel=3
        )


def parse_manifest(raw: bytes, source: Path) -> Manifest:
    """Validate the manifest's JSON, schema, versions and field types; errors name the field."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise ArtifactError(f"artifact {source}: manifest.json is not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise ArtifactError(f"artifact {source}: manifest.json must hold a JSON object, got {type(data).__name__}")
    if data.get("format") != FORMAT:
        raise _field_error(source, "format", repr(FORMAT), data.get("format"))
    schema = _require(data, source, "schema", int, "an integer")
    if schema != SCHEMA_VERSION:
        raise ArtifactError(
            f"artifact {source}: manifest field 'schema' is {schema}, but this dnnc ({__version__}) reads schema "
            f"{SCHEMA_VERSION} only: compile the model again with this dnnc"
        )
    written = _require(data, source, "dnnc", str, "a version string like '0.1.0'")
    target = _require(data, source, "target", str, "'cpu' or 'sm_<capability>' like 'sm_90'")
    if not _TARGET.match(target):
        raise _field_error(source, "target", "'cpu' or 'sm_<capability>' like 'sm_90'", target)
    _check_specs(data, source, "inputs")
    _check_specs(data, source, "outputs")
    members = _require(data, source, "members", dict, "an object of member name -> SHA-256")
    if not all(isinstance(v, str) for v in members.values()):
        raise _field_error(source, "members", "an object of member name -> SHA-256", members)
    _require(data, source, "structure", dict, "an object")
    if not isinstance(data.get("versions", {}), dict):
        raise _field_error(source, "versions", "an object of library -> version", data["versions"])
    _check_summary(data, source)
    if "buckets" in data:
        _check_buckets(data, source)
    _check_dnnc_version(written, source)
    return Manifest(data, source)


def capability_of(target: str) -> int | None:
    return None if target == "cpu" else int(target.removeprefix("sm_"))
