"""The kernels an artifact records, as data.

Each backend's kernels record what rebuilds them without tuning (``GroupKernel.record``:
a cuDNN plan's engine and knobs, a Triton kernel's config and the source generated
from it), one member per backend (``kernels/<target>/<backend>.json``), each record
keyed by its op's position among that backend's ops. Loading hands each op its
record (``backends.interface.Recorded``); how a backend rebuilds from it, and what it
does with a record that does not fit, is the backend's (``kernel_backend`` in its
package). User kernels' objects are members of their own, named by the program's
``extern.kernel`` ops.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from dnnc.ir import extern

log = logging.getLogger("dnnc.artifact")

EXTERN_PREFIX = "kernels/extern/"
"""Where a user kernel's compiled objects are stored in an artifact, per kernel and target."""


def kernel_records(executor: Any) -> dict[str, list[dict[str, Any]]]:
    """Backend name -> the JSON records of the kernels an executor built, each with
    its op's ordinal; every recording backend has a list, empty or not."""
    from dnnc.runtime.kernel_backends import recording_backends

    records: dict[str, list[dict[str, Any]]] = {b.name: [] for b in recording_backends()}
    for step in executor.steps:
        ordinal = executor.ordinals.get(step.op)
        if step.kernel is None or ordinal is None or step.backend not in records:
            continue
        record = step.kernel.record()
        if record is not None:
            records[step.backend].append({"ordinal": ordinal, **record})
    return records


def target_records(program: Any, capability: int) -> dict[str, list[dict[str, Any]]]:
    """Backend name -> the JSON records of a lowered program's kernels built for
    ``sm_<capability>`` without that GPU (``KernelBackend.records_for_target``); a
    backend that builds nothing ahead has an empty list."""
    from dnnc.runtime.kernel_backends import ordinals, recording_backends

    positions = ordinals(program.entry.body.block)
    records: dict[str, list[dict[str, Any]]] = {}
    for backend in recording_backends():
        ops = [(n, op) for op, n in positions.items() if backend.takes(op)]
        build = backend.records_for_target
        records[backend.name] = build(ops, capability) if build is not None and ops else []
    return records


def read_kernel_records(
    read: Callable[[str], Any | None], target: str, where: str
) -> tuple[dict[str, Any], dict[str, dict[int, Any]]]:
    """Each recording backend's member, as JSON and parsed (backend name -> ordinal ->
    record); ``read`` gives a member's JSON, None where the artifact lacks it (no
    records). A malformed record is an ``ArtifactError`` naming the member."""
    from dnnc.runtime.kernel_backends import recording_backends

    raw, parsed = {}, {}
    for backend in recording_backends():
        name = records_member(target, backend.name)
        records = read(name)
        if records is not None:
            assert backend.parse_records is not None
            raw[backend.name] = records
            parsed[backend.name] = backend.parse_records(records, f"{where}:{name}")
    return raw, parsed


def records_member(target: str, backend: str) -> str:
    return f"kernels/{target}/{backend}.json"


def embed_user_kernels(program: Any, steps: list[Any]) -> tuple[Any, dict[str, bytes]]:
    """The program as an artifact stores it, with its user kernels' objects as members:
    each ``extern.kernel`` names the members that hold every object it had (built from
    source or prebuilt), so loading builds nothing. The compiled program is left as is."""
    from dataclasses import replace

    from dnnc.ir.program import Program

    loaded = {s.op.kernel_name: s.kernel.loaded for s in steps if isinstance(s.op, extern.DispatchOp) and s.kernel is not None}
    if not loaded:
        return program, {}
    module = program.module.clone()
    files: dict[str, bytes] = {}
    for op in module.ops:
        if not isinstance(op, extern.KernelOp) or op.kernel_name not in loaded:
            continue
        objects = []
        for obj in loaded[op.kernel_name].objects:
            name = f"{EXTERN_PREFIX}{op.kernel_name}/{obj.target}.{obj.kind}"
            if name in files:  # a prebuilt object and a build for one target
                name = name.replace(f".{obj.kind}", f"-{len(objects)}.{obj.kind}")
            files[name] = obj.data
            objects.append((obj.target, name))
        decl = replace(op.declaration(), source=None, archs=(), flags=(), include_dirs=(), objects=tuple(objects))
        op.attributes.clear()
        op.attributes.update(extern.KernelOp(decl).attributes)
    return Program(module, program.params, program.metadata), files


def portable_kernels(program: Any) -> Any:
    """The program with its user kernels' files named by file name only (a
    file-based reference, the source; no include directories): an artifact carries
    no path of the compiling machine. The program given is left as is."""
    from dataclasses import replace
    from pathlib import Path

    from dnnc.ir.program import Program
    from dnnc.kernels.reference import portable

    def stripped(decl: Any) -> Any:
        return replace(
            decl,
            reference=None if decl.reference is None else portable(decl.reference),
            source=None if decl.source is None else Path(decl.source).name,
            include_dirs=(),
        )

    declared = [op.declaration() for op in program.module.walk() if isinstance(op, extern.KernelOp)]
    if all(stripped(decl) == decl for decl in declared):
        return program
    module = program.module.clone()
    for op in module.walk():
        if isinstance(op, extern.KernelOp):
            decl = stripped(op.declaration())
            op.attributes.clear()
            op.attributes.update(extern.KernelOp(decl).attributes)
    return Program(module, program.params, program.metadata)
