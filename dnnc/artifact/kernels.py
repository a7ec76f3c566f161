"""The kernels an artifact records, and how a loaded program gets them back
without tuning, and without running anything the file carries.

* Triton: the config chosen for every compiled group (block sizes, warps, stages),
  keyed by the group's position among the program's Triton groups, and the source
  generated from it. Load generates the kernel again from the program's IR and the
  recorded config with dnnc's own emitter and compiles that (no config is timed);
  the recorded source is only compared with it. A record that differs from what
  this dnnc generates is refused (``ArtifactError``) when the same dnnc version
  wrote it, since the file was changed; from another patch version it is a warning
  and the regenerated kernel runs. A record missing or not fitting its group (kind,
  parameter count, config) is compiled from the IR with the first heuristic
  config, with a warning.
* cuDNN: the engine id and knobs on each ``cudnn.graph``'s ``plan`` attribute are
  rebuilt as the only plan. An engine that is not valid on this GPU or cuDNN
  build falls back to cuDNN's heuristic choice, with a warning, never timing.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from dnnc import knobs
from dnnc.backends.interface import GROUP_KIND_ATTR, GroupKernel, group_attr
from dnnc.errors import ArtifactError
from dnnc.ir import cudnn, extern, tcp

log = logging.getLogger("dnnc.artifact")

_SOURCE_FIELDS = ("kind", "name", "text", "signature", "grid", "options")

EXTERN_PREFIX = "kernels/extern/"
"""Where a user kernel's compiled objects are stored in an artifact, per kernel and target."""


class ArtifactWarning(UserWarning):
    """An artifact that loads, but not exactly as it was built (other version or GPU)."""


def triton_records(steps: list[Any]) -> list[dict[str, Any]]:
    """JSON records of the Triton kernels an executor built, with their group ordinal."""
    from dnnc.backends.triton import is_triton_group

    records = []
    ordinal = 0
    for step in steps:
        if not is_triton_group(step.op):
            continue
        source = getattr(step.kernel, "source", None)
        if source is not None:
            record = {f: getattr(source, f) for f in _SOURCE_FIELDS}
            config = dict(getattr(step.kernel, "config", {}))
            records.append({"ordinal": ordinal, **record, "grid": list(source.grid), "config": config})
        ordinal += 1
    return records


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


@dataclass(frozen=True)
class TritonRecord:
    """What an artifact says about one Triton group: the source it was compiled from
    (compared, never run) and the config to generate it again with (None in
    artifacts that did not record one)."""

    source: Any
    config: dict[str, int] | None


def parse_triton_records(records: Any, member: str) -> dict[int, TritonRecord]:
    """Ordinal -> ``TritonRecord``; a malformed record names the member and field."""
    from dnnc.backends.triton import KernelSource, config_problem

    if not isinstance(records, list):
        raise ArtifactError(f"{member}: expected a list of kernel records, got {type(records).__name__}")
    parsed = {}
    for i, r in enumerate(records):
        missing = [f for f in ("ordinal", *_SOURCE_FIELDS) if not isinstance(r, dict) or f not in r]
        if missing:
            raise ArtifactError(f"{member}: kernel record {i} has no field {missing[0]!r}")
        try:
            grid = tuple(int(g) for g in r["grid"])
            source = KernelSource(
                str(r["kind"]),
                str(r["name"]),
                str(r["text"]),
                dict(r["signature"]),
                grid,
                dict(r["options"]),  # type: ignore[arg-type]
            )
        except (TypeError, ValueError) as e:
            raise ArtifactError(f"{member}: kernel record {i} is malformed: {e}") from None
        config = r.get("config")
        if config is not None:
            if not isinstance(config, dict):
                raise ArtifactError(f"{member}: kernel record {i}: config must be a table of integers")
            for key, value in config.items():
                problem = config_problem(str(key), value)
                if problem:
                    raise ArtifactError(f"{member}: kernel record {i}: config.{key}: {problem}")
        ordinal = r["ordinal"]
        if not isinstance(ordinal, int) or isinstance(ordinal, bool) or ordinal < 0 or ordinal in parsed:
            raise ArtifactError(f"{member}: kernel record {i}: ordinal {ordinal!r} is not a new non-negative integer")
        parsed[ordinal] = TritonRecord(source, None if config is None else dict(config))
    return parsed


class RecordedKernels:
    """A ``KernelProvider`` for ``GpuExecutor`` that rebuilds an artifact's choices."""

    def __init__(self, triton: Mapping[int, TritonRecord], files: Mapping[str, bytes] | None = None, same_version: bool = True):
        self.triton_records = dict(triton)
        self.files = dict(files or {})
        self.same_version = same_version
        """Whether this dnnc's version wrote the artifact: its generator must then
        reproduce every recorded kernel exactly."""

    def extern(self, op: extern.DispatchOp, device: torch.device, base: Any) -> GroupKernel:
        from dnnc.kernels.objects import kernel_objects
        from dnnc.runtime.gpu_executor import extern_kernel

        def read(name: str) -> bytes:
            if name not in self.files:
                raise ArtifactError(f"user kernel {op.kernel_name}: the artifact has no member {name!r}")
            return self.files[name]

        return extern_kernel(op, device, lambda decl: kernel_objects(decl, read=read))

    def cudnn(self, op: cudnn.GraphOp, device: torch.device, signature: str) -> GroupKernel:
        from dnnc.backends.cudnn import PlanRecord, build_kernel, rebuild_kernel

        if op.plan is not None:
            try:
                return rebuild_kernel(op, device, PlanRecord.from_json(op.plan.data))
            except Exception as e:
                warnings.warn(
                    f"the cuDNN plan recorded for a {group_attr(op, GROUP_KIND_ATTR) or 'cudnn'} graph ({op.plan.data}) does not "
                    f"build here ({type(e).__name__}: {e}); using cuDNN's heuristic plan",
                    ArtifactWarning,
                    stacklevel=2,
                )
        with knobs.override(autotune=False):  # heuristics only: load never times plans
            return build_kernel(op, device, signature)

    def triton(self, op: tcp.IsolatedGroupOp, ordinal: int | None, device: torch.device) -> GroupKernel:
        from dnnc.backends.triton import (
            GroupInfo,
            TritonKernel,
            candidate_configs,
            compile_group,
            gathers,
            generate,
            interpreting,
        )

        record = self.triton_records.get(ordinal) if ordinal is not None else None
        info = GroupInfo.of(op)
        expected = len(op.body.block.args) + len(op.outputs) + gathers(op)  # a gathering kernel's index flag
        heuristic = candidate_configs(info)[0]
        problem = _record_problem(record, info.kind, expected, heuristic)
        if problem is not None:
            warnings.warn(
                f"Triton group {ordinal} ({info.kind}, {expected} tensors): {problem}; compiling it with the heuristic config",
                ArtifactWarning,
                stacklevel=2,
            )
            with knobs.override(autotune=False):
                return compile_group(op, device)
        assert record is not None and record.config is not None
        config = {**heuristic, **record.config}
        interpret = interpreting()
        regenerated = generate(op, config, interpret=interpret)
        # A record is written by a GPU build, or by the interpreter in the tests: either form matches
        # (the other form is generated only when this one differs).
        if record.source != regenerated and record.source != generate(op, config, interpret=not interpret):
            what = f"Triton group {ordinal} ({info.kind}): the recorded kernel differs from the one dnnc generates for its group and config"
            if self.same_version:
                raise ArtifactError(f"{what}: the artifact was changed after it was written; refusing it")
            warnings.warn(f"{what} (another dnnc version wrote it); running the generated one", ArtifactWarning, stacklevel=2)
        if interpret:
            return TritonKernel(regenerated, device, None, config)
        major, minor = torch.cuda.get_device_capability(device)
        return TritonKernel(regenerated, device, major * 10 + minor, config)


def _record_problem(record: TritonRecord | None, kind: str, tensors: int, heuristic: dict[str, int]) -> str | None:
    """Why a record cannot rebuild its group, or None."""
    if record is None:
        return "no recorded kernel"
    if record.source.kind != kind or len(record.source.signature) != tensors:
        return f"a recorded {record.source.kind} kernel of {len(record.source.signature)} tensors"
    if record.config is None:
        return "no recorded config"
    unknown = sorted(set(record.config) - set(heuristic) - {"num_warps", "num_stages"})
    if unknown:
        return f"a recorded config with {', '.join(unknown)}, which a {kind} kernel does not take"
    return None
