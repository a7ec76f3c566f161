"""Saving a compiled module as one ``.dnnc`` file and reading one back.

Members (README.md, "Artifacts"): ``manifest.json``, ``program.mlir`` (the IR of
the final stage), ``params.safetensors``,
``metadata.json`` (``Program.metadata`` verbatim, e.g. the partitioner's
decisions) and, for GPU targets, each backend's kernel records
(``kernels/<target>/<backend>.json``, ``artifact.kernels``) and every user kernel's
objects under ``kernels/extern/``.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors
from xdsl.dialects.builtin import SymbolRefAttr

from dnnc.artifact.archive import MANIFEST, Archive, check_name, sha256, write_archive
from dnnc.artifact.kernels import EXTERN_PREFIX, read_kernel_records, records_member
from dnnc.artifact.manifest import FORMAT, SCHEMA_VERSION, Manifest, parse_manifest, spec_json
from dnnc.artifact.mapped import tensors as mapped_tensors
from dnnc.errors import ArtifactError, DnncError
from dnnc.ir.params import ParamStore
from dnnc.ir.program import Program
from dnnc.ir.text import parse_ir
from dnnc.runtime.signature import specs_of
from dnnc.version import __version__, library_versions

PROGRAM = "program.mlir"
PARAMS = "params.safetensors"
METADATA = "metadata.json"
REQUIRED = (PROGRAM, PARAMS, METADATA)
BUCKETS_DIR = "buckets/"
"""Each bucket but the largest has its program, metadata and kernel records under
``buckets/<label>/`` (``batch=8/``); the largest's are the top-level ones."""


_EXTERN_MEMBER = re.compile(r"^kernels/extern/[^/]+/[^/]+$")


@dataclass
class ArtifactContents:
    """What a compiled module needs to be saved, or what a read artifact holds."""

    program: Program
    target: str
    structure: dict[str, Any] = field(default_factory=dict)
    """``in_spec`` / ``out_spec`` (pytree specs as JSON strings, or None) and ``positional``."""
    kernels: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Backend name -> its kernels' records (JSON), as ``artifact.kernels`` writes them."""
    summary: dict[str, Any] = field(default_factory=dict)
    """Facts for ``dnnc inspect``: ``steps`` per backend, ``memory_peak_bytes``, device name."""
    manifest: Manifest | None = None
    files: dict[str, bytes] = field(default_factory=dict)
    """User kernels' objects, by member name (``kernels/extern/<kernel>/<target>.<kind>``);
    the program's ``extern.kernel`` ops name them."""
    records: dict[str, dict[int, Any]] = field(default_factory=dict)
    """A read artifact's ``kernels`` parsed by their backends: name -> ordinal -> record."""
    buckets: list[tuple[str, ArtifactContents]] | None = None
    """A read bucketed artifact's buckets by label, the largest (this one) first."""


def save_artifact(
    contents: ArtifactContents, path: str | Path, buckets: tuple[dict[str, Any], list[tuple[str, ArtifactContents]]] | None = None
) -> Path:
    """Write ``contents`` as an artifact. ``buckets``: a bucketed module's plan
    (``BucketPlan.to_json``) and every bucket's contents by label, the largest first
    and the same as ``contents``; the others' programs go under ``buckets/<label>/``
    and every bucket's weights into the one ``params.safetensors``."""
    path = Path(path)
    entries = buckets[1] if buckets is not None else [("", contents)]
    params: dict[str, torch.Tensor] = {}
    members: dict[str, bytes] = {}
    listed = []
    for index, (label, entry) in enumerate(entries):
        prefix = "" if index == 0 else bucket_prefix(label)
        program = _with_shared_params(entry.program, params, label) if buckets is not None else entry.program
        program.prune_params()
        params.update(program.params.items())
        members.update(_program_members(program, entry, prefix))
        members.update(entry.files)
        listed.append((label, prefix, program, entry))
    members[PARAMS] = save_safetensors({k: v.detach().contiguous().clone() for k, v in params.items()})
    top = listed[0][2]
    manifest = {
        "format": FORMAT,
        "schema": SCHEMA_VERSION,
        "dnnc": __version__,
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "versions": library_versions(),
        "target": contents.target,
        **_signature(top, contents.structure),
        "structure": contents.structure,
        "summary": contents.summary,
        "members": {name: sha256(data) for name, data in members.items()},
    }
    if buckets is not None:
        manifest["buckets"] = {
            "plan": buckets[0],
            "entries": [
                {"label": label, "prefix": prefix, **_signature(program, entry.structure), "summary": entry.summary}
                for label, prefix, program, entry in listed
            ],
        }
    members[MANIFEST] = json.dumps(manifest, indent=1, sort_keys=True).encode()
    write_archive(path, members)
    return path


def bucket_prefix(label: str) -> str:
    return f"{BUCKETS_DIR}{label}/"


def _signature(program: Program, structure: dict[str, Any]) -> dict[str, Any]:
    return {
        "inputs": [spec_json(s, n) for s, n in zip(specs_of(program.input_types), input_names(program))],
        "outputs": [
            spec_json(s, n) for s, n in zip(specs_of(program.output_types), output_names(structure, len(program.output_types)))
        ],
    }


def _program_members(program: Program, contents: ArtifactContents, prefix: str) -> dict[str, bytes]:
    members = {
        prefix + PROGRAM: program.text().encode(),
        prefix + METADATA: json.dumps(program.metadata, indent=1, sort_keys=True).encode(),
    }
    if contents.target != "cpu":
        from dnnc.runtime.kernel_backends import recording_backends

        for backend in recording_backends():
            records = contents.kernels.get(backend.name, [])
            members[prefix + records_member(contents.target, backend.name)] = json.dumps(records, indent=1).encode()
    return members


def _with_shared_params(program: Program, params: dict[str, torch.Tensor], label: str) -> Program:
    """A copy of ``program`` whose parameters are named so that one store holds every
    bucket's: a weight equal to one stored under its name is shared, a different one
    stored under a new name (``<name>.<label>``)."""
    from dnnc.ir.tcp import ParamOp

    module = program.module.clone()
    store = ParamStore()
    renamed: dict[str, str] = {}
    for op in [op for op in module.walk() if isinstance(op, ParamOp)]:
        name = op.param_name
        if name not in renamed:
            value = program.params[name]
            held = params.get(name)
            if held is None or (held.shape == value.shape and held.dtype == value.dtype and torch.equal(held, value)):
                renamed[name] = name
            else:
                fresh, i = f"{name}.{label}", 1
                while fresh in params:
                    fresh, i = f"{name}.{label}.{i}", i + 1
                renamed[name] = fresh
            store.add(renamed[name], value)
        if renamed[name] != name:
            op.properties["name"] = SymbolRefAttr(renamed[name])
    return Program(module, store, program.metadata, program.base_dir)


def input_names(program: Program) -> list[str]:
    """The program's inputs by the names the model's ``forward`` gave them (the entry
    function's arguments keep them from the export), ``input_<i>`` where none is known."""
    args = program.entry.body.block.args
    return [a.name_hint or f"input_{i}" for i, a in enumerate(args)]


def output_names(structure: dict[str, Any], count: int) -> list[str]:
    """Each returned tensor by its place in what the model returns: ``logits``, ``0``,
    ``hidden_states.3`` (a ``ModelOutput``'s fields, a tuple's positions), from the pytree
    spec saved in ``structure``; ``output_<i>`` where there is none."""
    import torch.utils._pytree as pytree

    fallback = [f"output_{i}" for i in range(count)]
    text = structure.get("out_spec")
    if text is None:
        return fallback
    try:
        spec = pytree.treespec_loads(text)
        if spec.num_leaves != count:
            return fallback
        paths, _ = pytree.tree_flatten_with_path(pytree.tree_unflatten(list(range(count)), spec))
    except Exception:  # a container pytree cannot rebuild: the names are positional
        return fallback
    names = []
    for i, (path, _) in enumerate(paths):
        parts = [str(getattr(k, "key", getattr(k, "idx", getattr(k, "name", k)))) for k in path]
        names.append(".".join(parts) or f"output_{i}")
    return names


def read_manifest(path: str | Path) -> Manifest:
    archive, manifest = _open(Path(path))
    archive.close()
    return manifest


def _open(path: Path) -> tuple[Archive, Manifest]:
    """The archive and its manifest, with every member one the manifest lists and of a
    kind dnnc writes: an artifact carries nothing that loading would not check."""
    archive = Archive(path)
    try:
        manifest = parse_manifest(archive.raw(MANIFEST), path)
        listed = manifest.members
        prefixes = [prefix for _, prefix in manifest.bucket_entries()]
        records = set(_records_members(manifest.target)) if manifest.target != "cpu" else set()
        for name in [PARAMS] + [p + n for p in prefixes for n in (PROGRAM, METADATA)]:
            if name not in listed:
                raise ArtifactError(f"artifact {path}: manifest field 'members' does not list {name!r}")
        for name in listed:
            check_name(path, name)
            if not _known_member(name, records, prefixes):
                raise ArtifactError(
                    f"artifact {path}: manifest field 'members' lists {name!r}, which is not a member dnnc writes "
                    f"({', '.join(REQUIRED)}, {records_member('<target>', '<backend>')}, {EXTERN_PREFIX}<kernel>/<object>, "
                    f"and those of the buckets the manifest's 'buckets' field lists under {BUCKETS_DIR}<label>/)"
                )
        unknown = sorted(archive.names - {MANIFEST} - set(listed))
        if unknown:
            raise ArtifactError(
                f"artifact {path}: member {unknown[0]!r} is not listed in the manifest; unknown members are refused"
            )
    except BaseException:
        archive.close()
        raise
    return archive, manifest


def _known_member(name: str, records: set[str], prefixes: list[str]) -> bool:
    """``records``: the kernel-record members of the artifact's target (none for ``cpu``)."""
    if name == PARAMS or _EXTERN_MEMBER.match(name):
        return True
    for prefix in prefixes:
        inside = name.removeprefix(prefix) if name.startswith(prefix) else None
        if inside in (PROGRAM, METADATA) or inside in records:
            return True
    return False


def _records_members(target: str) -> list[str]:
    from dnnc.runtime.kernel_backends import recording_backends

    return [records_member(target, b.name) for b in recording_backends()]


def read_artifact(path: str | Path) -> ArtifactContents:
    """Every member present and unchanged, the IR verified against its parameters and
    the manifest. A bucketed artifact's buckets are in ``buckets`` (the largest first,
    the same as what is returned), all of them holding the same weight tensors."""
    path = Path(path)
    archive, manifest = _open(path)
    try:
        with ThreadPoolExecutor(1) as pool:
            # The parameters (most of the file) are read and hashed beside the programs'
            # parse: reading, zip's CRC and SHA-256 let go of the GIL, the parse holds it.
            params_read = pool.submit(_read_params, archive, manifest.members[PARAMS], path)
            data = {name: archive.read(name, digest) for name, digest in manifest.members.items() if name != PARAMS}
            modules = {prefix: _module(data[prefix + PROGRAM], path, prefix) for _, prefix in manifest.bucket_entries()}
            params = params_read.result()
    finally:
        archive.close()
    files = {name: blob for name, blob in data.items() if name.startswith(EXTERN_PREFIX)}
    entries = []
    for index, (label, prefix) in enumerate(manifest.bucket_entries()):
        listed = manifest.bucket_field(index)
        metadata = _json(data[prefix + METADATA], prefix + METADATA, path)
        if not isinstance(metadata, dict):
            raise ArtifactError(
                f"artifact {path}: member {prefix + METADATA!r} must hold a JSON object, got {type(metadata).__name__}"
            )
        program = Program(modules[prefix], ParamStore(params), metadata)
        program.prune_params()
        try:
            program.verify(f"{path}:{prefix}{PROGRAM}")
        except DnncError as e:
            raise ArtifactError(f"artifact {path}: {e}") from None
        _check_signature(listed, program, path, prefix)
        kernels: dict[str, Any] = {}
        records: dict[str, dict[int, Any]] = {}
        if manifest.target != "cpu":  # malformed records fail here, not when a kernel is built
            kernels, records = read_kernel_records(
                lambda name, p=prefix: _json(data[p + name], p + name, path) if p + name in data else None,
                manifest.target,
                str(path),
            )
        summary = listed.get("summary") or {}
        entries.append(
            (
                label,
                ArtifactContents(
                    program, manifest.target, manifest.data["structure"], kernels, summary, manifest, files, records
                ),
            )
        )
    top = entries[0][1]
    if manifest.plan is not None:
        top.buckets = entries
    return top


def _module(raw: bytes, path: Path, prefix: str = "") -> Any:
    member = prefix + PROGRAM
    try:
        return parse_ir(raw.decode(), f"{path}:{member}", verify=False)  # ``Program.verify`` checks it, once
    except UnicodeDecodeError as e:
        raise ArtifactError(f"artifact {path}: member {member!r} is not UTF-8 text: {e}") from None
    except DnncError as e:
        raise ArtifactError(f"artifact {path}: {e}") from None


def _read_params(archive: Archive, digest: str, path: Path) -> ParamStore:
    """The weights, as views of the mapped file where it is aligned (``mapped``), else read."""
    view = archive.mapped(PARAMS, digest)
    if view is not None:
        return ParamStore(mapped_tensors(view, f"artifact {path}: member {PARAMS!r}"))
    return _params(archive.read(PARAMS, digest), path)


def _params(raw: bytes, path: Path) -> ParamStore:
    try:
        return ParamStore(load_safetensors(raw))
    except (SafetensorError, ValueError) as e:
        raise ArtifactError(f"artifact {path}: member {PARAMS!r} is not a readable safetensors file: {e}") from None


def _json(raw: bytes, member: str, path: Path) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise ArtifactError(f"artifact {path}: member {member!r} is not valid JSON: {e}") from None


def _check_signature(listed: dict[str, Any], program: Program, path: Path, prefix: str = "") -> None:
    from dnnc.artifact.manifest import specs_from_json

    where = "manifest field" if not prefix else f"manifest field 'buckets' entry {prefix.rstrip('/')!r}, field"
    for field_name, actual in (("inputs", specs_of(program.input_types)), ("outputs", specs_of(program.output_types))):
        if specs_from_json(listed[field_name]) != actual:
            shown = ", ".join(s.describe() for s in actual)
            raise ArtifactError(f"artifact {path}: {where} {field_name!r} does not match {prefix}{PROGRAM} ({shown})")
