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

from safetensors import SafetensorError
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors

from dnnc.artifact.archive import MANIFEST, Archive, check_name, sha256, write_archive
from dnnc.artifact.kernels import EXTERN_PREFIX, read_kernel_records, records_member
from dnnc.artifact.manifest import FORMAT, SCHEMA_VERSION, Manifest, parse_manifest, spec_json
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


def save_artifact(contents: ArtifactContents, path: str | Path) -> Path:
    path = Path(path)
    program = contents.program
    program.prune_params()
    members = {
        PROGRAM: program.text().encode(),
        PARAMS: save_safetensors({k: v.detach().contiguous().clone() for k, v in program.params.items()}),
        METADATA: json.dumps(program.metadata, indent=1, sort_keys=True).encode(),
    }
    if contents.target != "cpu":
        from dnnc.runtime.kernel_backends import recording_backends

        for backend in recording_backends():
            records = contents.kernels.get(backend.name, [])
            members[records_member(contents.target, backend.name)] = json.dumps(records, indent=1).encode()
    members.update(contents.files)
    manifest = {
        "format": FORMAT,
        "schema": SCHEMA_VERSION,
        "dnnc": __version__,
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "versions": library_versions(),
        "target": contents.target,
        "inputs": [spec_json(s, n) for s, n in zip(specs_of(program.input_types), input_names(program))],
        "outputs": [
            spec_json(s, n)
            for s, n in zip(specs_of(program.output_types), output_names(contents.structure, len(program.output_types)))
        ],
        "structure": contents.structure,
        "summary": contents.summary,
        "members": {name: sha256(data) for name, data in members.items()},
    }
    members[MANIFEST] = json.dumps(manifest, indent=1, sort_keys=True).encode()
    write_archive(path, members)
    return path


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
        for name in REQUIRED:
            if name not in listed:
                raise ArtifactError(f"artifact {path}: manifest field 'members' does not list {name!r}")
        for name in listed:
            check_name(path, name)
            if not _known_member(name, manifest.target):
                raise ArtifactError(
                    f"artifact {path}: manifest field 'members' lists {name!r}, which is not a member dnnc writes "
                    f"({', '.join(REQUIRED)}, {records_member('<target>', '<backend>')}, {EXTERN_PREFIX}<kernel>/<object>)"
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


def _known_member(name: str, target: str) -> bool:
    if name in REQUIRED:
        return True
    if target != "cpu" and name in _records_members(target):
        return True
    return bool(_EXTERN_MEMBER.match(name))


def _records_members(target: str) -> list[str]:
    from dnnc.runtime.kernel_backends import recording_backends

    return [records_member(target, b.name) for b in recording_backends()]


def read_artifact(path: str | Path) -> ArtifactContents:
    """Every member present and unchanged, the IR verified against its parameters and the manifest."""
    path = Path(path)
    archive, manifest = _open(path)
    try:
        with ThreadPoolExecutor(1) as pool:
            # The parameters (most of the file) are read and hashed beside the program's
            # parse: reading, zip's CRC and SHA-256 let go of the GIL, the parse holds it.
            params_read = pool.submit(archive.read, PARAMS, manifest.members[PARAMS])
            data = {name: archive.read(name, digest) for name, digest in manifest.members.items() if name != PARAMS}
            metadata = _json(data[METADATA], METADATA, path)
            if not isinstance(metadata, dict):
                raise ArtifactError(
                    f"artifact {path}: member {METADATA!r} must hold a JSON object, got {type(metadata).__name__}"
                )
            module = _module(data[PROGRAM], path)
            data[PARAMS] = params_read.result()
    finally:
        archive.close()
    program = Program(module, _params(data[PARAMS], path), metadata)
    try:
        program.verify(f"{path}:{PROGRAM}")
    except DnncError as e:
        raise ArtifactError(f"artifact {path}: {e}") from None
    _check_signature(manifest, program, path)
    kernels: dict[str, Any] = {}
    records: dict[str, dict[int, Any]] = {}
    if manifest.target != "cpu":  # malformed records fail here, not when a kernel is built
        kernels, records = read_kernel_records(
            lambda name: _json(data[name], name, path) if name in data else None, manifest.target, str(path)
        )
    summary = manifest.data.get("summary") or {}
    files = {name: blob for name, blob in data.items() if name.startswith(EXTERN_PREFIX)}
    return ArtifactContents(program, manifest.target, manifest.data["structure"], kernels, summary, manifest, files, records)


def _module(raw: bytes, path: Path) -> Any:
    try:
        return parse_ir(raw.decode(), f"{path}:{PROGRAM}", verify=False)  # ``Program.verify`` checks it, once
    except UnicodeDecodeError as e:
        raise ArtifactError(f"artifact {path}: member {PROGRAM!r} is not UTF-8 text: {e}") from None
    except DnncError as e:
        raise ArtifactError(f"artifact {path}: {e}") from None


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


def _check_signature(manifest: Manifest, program: Program, path: Path) -> None:
    for field_name, listed, actual in (
        ("inputs", manifest.inputs, specs_of(program.input_types)),
        ("outputs", manifest.outputs, specs_of(program.output_types)),
    ):
        if listed != actual:
            shown = ", ".join(s.describe() for s in actual)
            raise ArtifactError(f"artifact {path}: manifest field {field_name!r} does not match {PROGRAM} ({shown})")
