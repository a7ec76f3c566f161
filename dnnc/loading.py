"""``dnnc.load``: an artifact back to a callable program, without the compiler."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from dnnc.compiled import CompiledModule, InferenceModule, _spec_from_text
from dnnc.errors import ArtifactError
from dnnc.report import CompileReport
from dnnc.version import __version__

if TYPE_CHECKING:
    from dnnc.artifact.store import ArtifactContents


def load(
    path: str | Path, *, device: str | None = None, cuda_graph: bool | None = None, trust_code: bool = False
) -> InferenceModule:
    """A module saved with ``save`` (a ``CompiledModule``, or a ``BucketedModule`` for an
    artifact of several buckets), ready to call: nothing is compiled
    again from the model and no plan or config is timed (cuDNN plans are rebuilt from
    their recorded engines, Triton kernels generated again from the IR and their
    recorded configs).

    ``device``: ``auto`` (default) runs a GPU artifact on the GPU when there is one and
    on the CPU reference backend otherwise; an artifact compiled for ``cpu`` runs there only.

    Loading and running execute no code the file carries or names. ``trust_code``:
    import the modules or files its user kernels name as their reference
    implementations (running their code); without it a reference must be a function
    this process declared with ``dnnc.CustomKernel``.
    """
    from dnnc.artifact.store import read_artifact
    from dnnc.artifact.target import runtime_device

    if not isinstance(path, (str, os.PathLike)):
        raise ArtifactError(f"dnnc.load takes the path of a .dnnc artifact, got {type(path).__name__}")
    started = time.perf_counter()
    contents = read_artifact(path)
    report = CompileReport()
    report.add("read-artifact", started, contents.program)
    if trust_code:
        from dnnc.kernels.reference import trust_references

        for _, entry in contents.buckets or [("", contents)]:
            trust_references(entry.program)
    where = runtime_device(contents.target, device, Path(path))
    if contents.buckets is None:
        return _module(contents, path, where, report, cuda_graph)
    from dnnc.bucketed import BucketedModule
    from dnnc.runtime.sharing import SharedMemory, sharing

    plan = contents.manifest.plan  # type: ignore[union-attr]
    with sharing(SharedMemory()):  # the largest bucket first: its arena is the one shared
        modules = {plan.key_of(label): _module(entry, path, where, report, cuda_graph) for label, entry in contents.buckets}
    return BucketedModule(plan, modules)


def _module(
    contents: ArtifactContents, path: str | Path, where: str, report: CompileReport, cuda_graph: bool | None
) -> CompiledModule:
    from dnnc.backends.interface import Recorded

    recorded = None
    if where == "cuda":
        written_by = contents.manifest.data.get("dnnc") if contents.manifest is not None else None
        recorded = Recorded(contents.records, contents.files, same_version=written_by == __version__)
    structure = contents.structure
    try:
        in_spec, out_spec = _spec_from_text(structure.get("in_spec")), _spec_from_text(structure.get("out_spec"))
    except Exception as e:
        raise ArtifactError(f"artifact {path}: manifest field 'structure' holds an unreadable pytree spec: {e}") from None
    returned = len(contents.program.entry.function_type.outputs.data)
    if out_spec is not None and out_spec.num_leaves != returned:
        raise ArtifactError(
            f"artifact {path}: manifest field 'structure.out_spec' describes {out_spec.num_leaves} output(s) "
            f"but program.mlir returns {returned}"
        )
    return CompiledModule(
        contents.program,
        report,
        where,
        in_spec,
        out_spec,
        bool(structure.get("positional", True)),
        recorded=recorded,
        cuda_graph=cuda_graph,
        target=contents.target,
    )
