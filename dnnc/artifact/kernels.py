"""The kernels an artifact records, and how a loaded program gets them back
without tuning.

* Triton: the generated source of every compiled group with its chosen config
  baked in (``KernelSource``: text, signature, grid, ``num_warps``...), keyed by
  the group's position among the program's Triton groups. Load compiles it for the
  GPU at hand through the content-keyed kernel cache (no config is timed); a
  source that does not fit its group (kind or parameter count) is recompiled from
  the IR with the first heuristic config, with a warning.
* cuDNN: the engine id and knobs on each ``cudnn.graph``'s ``plan`` attribute are
  rebuilt as the only plan. An engine that is not valid on this GPU or cuDNN
  build falls back to cuDNN's heuristic choice, with a warning, never timing.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping
from typing import Any

import torch

from dnnc import knobs
from dnnc.backends.interface import GROUP_BACKEND_ATTR, GROUP_KIND_ATTR, GroupKernel, group_attr
from dnnc.errors import ArtifactError
from dnnc.ir import cudnn, extern, tcp

log = logging.getLogger("dnnc.artifact")

_SOURCE_FIELDS = ("kind", "name", "text", "signature", "grid", "options")


class ArtifactWarning(UserWarning):
    """An artifact that loads, but not exactly as it was built (other version or GPU)."""


def triton_records(steps: list[Any]) -> list[dict[str, Any]]:
    """JSON records of the Triton kernels an executor built, with their group ordinal."""
    records = []
    ordinal = 0
    for step in steps:
        if not (isinstance(step.op, tcp.IsolatedGroupOp) and group_attr(step.op, GROUP_BACKEND_ATTR) == "triton"):
            continue
        source = getattr(step.kernel, "source", None)
        if source is not None:
            record = {f: getattr(source, f) for f in _SOURCE_FIELDS}
            records.append({"ordinal": ordinal, **record, "grid": list(source.grid)})
        ordinal += 1
    return records


def embed_user_kernels(program: Any, steps: list[Any]) -> tuple[Any, dict[str, bytes]]:
    """The program as an artifact stores it, with its user kernels' objects as members:
    each ``extern.kernel`` names the members that hold every object it had (built from
    source or prebuilt), so loading builds nothing. The compiled program is left as is."""
    from dataclasses import replace

    from dnnc.artifact.store import EXTERN_PREFIX
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


def parse_triton_records(records: Any, member: str) -> dict[int, Any]:
    """Ordinal -> ``KernelSource``; a malformed record names the member and field."""
    from dnnc.backends.triton.kernels import KernelSource

    if not isinstance(records, list):
        raise ArtifactError(f"{member}: expected a list of kernel records, got {type(records).__name__}")
    sources = {}
    for i, r in enumerate(records):
        missing = [f for f in ("ordinal", *_SOURCE_FIELDS) if not isinstance(r, dict) or f not in r]
        if missing:
            raise ArtifactError(f"{member}: kernel record {i} has no field {missing[0]!r}")
        try:
            grid = tuple(int(g) for g in r["grid"])
            sources[int(r["ordinal"])] = KernelSource(
                str(r["kind"]),
                str(r["name"]),
                str(r["text"]),
                dict(r["signature"]),
                grid,
                dict(r["options"]),  # type: ignore[arg-type]
            )
        except (TypeError, ValueError) as e:
            raise ArtifactError(f"{member}: kernel record {i} is malformed: {e}") from None
    return sources


class RecordedKernels:
    """A ``KernelSource`` for ``GpuExecutor`` that rebuilds an artifact's choices."""

    def __init__(self, triton_sources: Mapping[int, Any], files: Mapping[str, bytes] | None = None):
        self.triton_sources = dict(triton_sources)
        self.files = dict(files or {})

    def extern(self, op: extern.DispatchOp, device: torch.device, base: Any) -> GroupKernel:
        from dnnc.kernels.objects import kernel_objects
        from dnnc.runtime.gpu_executor import extern_kernel

        def read(name: str) -> bytes:
            if name not in self.files:
                raise ArtifactError(f"user kernel {op.kernel_name}: the artifact has no member {name!r}")
            return self.files[name]

        return extern_kernel(op, device, lambda decl: kernel_objects(decl, read=read))

    def cudnn(self, op: cudnn.GraphOp, device: torch.device, signature: str) -> GroupKernel:
        from dnnc.backends.cudnn import runtime

        if op.plan is not None:
            try:
                return runtime.rebuild_kernel(op, device, runtime.PlanRecord.from_json(op.plan.data))
            except Exception as e:
                warnings.warn(
                    f"the cuDNN plan recorded for a {group_attr(op, GROUP_KIND_ATTR) or 'cudnn'} graph ({op.plan.data}) does not "
                    f"build here ({type(e).__name__}: {e}); using cuDNN's heuristic plan",
                    ArtifactWarning,
                    stacklevel=2,
                )
        with knobs.override(autotune=False):  # heuristics only: load never times plans
            return runtime.build_kernel(op, device, signature)

    def triton(self, op: tcp.IsolatedGroupOp, ordinal: int | None, device: torch.device) -> GroupKernel:
        from dnnc.backends.triton import compile_group, compiler
        from dnnc.backends.triton.kernels import GroupInfo
        from dnnc.backends.triton.launch import TritonKernel

        source = self.triton_sources.get(ordinal)
        expected = len(op.body.block.args) + len(op.outputs)
        kind = GroupInfo.of(op).kind
        if source is None or source.kind != kind or len(source.signature) != expected:
            found = (
                "no recorded kernel" if source is None else f"a recorded {source.kind} kernel of {len(source.signature)} tensors"
            )
            warnings.warn(
                f"Triton group {ordinal} ({kind}, {expected} tensors): {found}; compiling it with the heuristic config",
                ArtifactWarning,
                stacklevel=2,
            )
            with knobs.override(autotune=False):
                return compile_group(op, device)
        if compiler.interpreting():
            return TritonKernel(source, device, None)
        major, minor = torch.cuda.get_device_capability(device)
        return TritonKernel(source, device, major * 10 + minor)
