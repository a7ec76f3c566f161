"""Records back to spec text (TOML), the one writer ``dnnc spec merge`` and
``dnnc tune`` share, so what they write parses back to the same records."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dnnc.specs.format import SCHEMA, Record


def library_toml(
    records: Sequence[Record],
    comments: Sequence[str] = (),
    mode: str | None = None,
    provenance: Callable[[Record], Mapping[str, Any]] | None = None,
) -> str:
    """One library; ``provenance(record)`` is added to each record's own."""
    lines = [f"# {c}" for c in comments] + [f"schema = {SCHEMA}"]
    if mode is not None:
        lines.append(f'mode = "{mode}"')
    for r in records:
        lines += ["", "[[record]]"]
        table: dict[str, Any] = {"name": r.name or r.source, "match": r.matcher.to_toml()}
        target = {k: v for k, v in (("arch", r.target.arch), ("sku", r.target.sku)) if v is not None}
        if target:
            table["target"] = target
        if r.versions:
            table["versions"] = {k: str(v) for k, v in r.versions.items()}
        table["decision"] = {"backend": r.decision.backend, **{k: v for k, v in r.decision.choice.items() if v not in (None, {})}}
        table["provenance"] = {**r.provenance, **(provenance(r) if provenance else {})}
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
