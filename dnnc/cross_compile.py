"""Building a GPU program for an architecture this machine does not have
(``dnnc.compile(..., target="sm_90")``, ``dnnc compile --target sm_90``), as
``iree-compile --iree-cuda-target`` does: on a CPU-only build machine, or beside
another GPU.

Nothing can be timed for a GPU that is not here, so every choice is one the compile
on that GPU would make without measuring: the partitioner prices groups by its
roofline estimates, a tuning spec's records for the target (the shipped ``sm_90``
libraries, ``--tuning-spec``) decide where they match, and each Triton kernel takes a
spec's config or the heuristics' first. The Triton kernels are compiled for the
target here (``triton.compile`` needs no GPU) and stored in the artifact, which a
load on that GPU with the same Triton and dnnc versions takes instead of compiling.
cuDNN builds its plans where the GPU is: a spec's plan on the graph where a record
chose one, else cuDNN's heuristic plan (as a load rebuilds any graph recorded
without a plan); a graph cuDNN has no engine for there is given back to Triton and
compiled at load.

The module returned runs on this machine's CPU reference backend (the lowered
program, slowly: for checking it) and saves the artifact for the target.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from dnnc import knobs, progress
from dnnc.compiled import CompiledModule, target_of
from dnnc.errors import DnncError
from dnnc.ir import extern
from dnnc.ir.program import Program
from dnnc.report import CompileReport

_TARGET = re.compile(r"sm_(\d{2,3})")


def capability_of(target: str) -> int:
    """``sm_90`` -> 90; anything else is an error naming what is expected."""
    found = _TARGET.fullmatch(target)
    if found is None or int(found.group(1)) < 70:
        raise DnncError(f"target {target!r}: expected a CUDA architecture sm_<major><minor> from sm_70 on, like sm_90")
    return int(found.group(1))


def local_target() -> str | None:
    """The GPU here as a target (``sm_90``), or None without one."""
    import torch

    return target_of("cuda") if torch.cuda.is_available() else None


@contextmanager
def lowering_for(target: str) -> Iterator[None]:
    """Lower as the compile on ``target`` would without timing anything: estimates in
    place of measurements, no config timed, every backend lowered for (the target
    machine installs them all), and specs resolved for that architecture. A spec record
    that needs a library version is checked against the version installed here where
    there is one (Triton's kernels are compiled here), and kept where there is none
    (cuDNN on a CPU-only machine): its plan is rebuilt on the GPU, and one not valid
    there gives way to cuDNN's heuristic plan, with a warning."""
    from dnnc.partition.backends import built_elsewhere
    from dnnc.partition.spec_apply import specs_for
    from dnnc.specs.library import Device, local_device

    versions = local_device(arch=target, name="", required=False).versions
    with (
        knobs.override(measure=False, autotune=False),
        specs_for(Device(target, "", versions), unknown_versions="keep"),
        built_elsewhere(),
    ):
        yield


def build_for_target(
    program: Program,
    report: CompileReport,
    target: str,
    lower: Callable[[Program, CompileReport], None],
    structure: dict[str, Any] | None = None,
    cuda_graph: bool | None = None,
) -> CompiledModule:
    """``program`` (canonical tcp) lowered by ``lower`` for ``target`` and its kernels
    built for it; ``structure``: ``CompiledModule``'s ``in_spec``, ``out_spec`` and
    ``positional`` where the program came from a PyTorch module."""
    from dnnc.artifact.kernels import target_records

    capability = capability_of(target)
    with lowering_for(target):
        lower(program, report)
    users = sorted({op.kernel_name for op in program.module.walk() if isinstance(op, extern.KernelOp)})
    if users:
        raise DnncError(
            f"building for {target} on this machine: the program dispatches user kernels ({', '.join(users)}), "
            "which dnnc compiles only on their GPU; compile it there (or on a GPU of that architecture)"
        )
    _check_triton(target)
    started = time.perf_counter()
    progress.stage(f"kernels for {target}")
    records = target_records(program, capability)
    report.add(f"kernels-{target}", started, None)
    return CompiledModule(
        program, report, "cpu", **(structure or {}), cuda_graph=cuda_graph, target=target, built_for_target=records
    )


def _check_triton(target: str) -> None:
    """Triton compiles the kernels here: installed, and not replaced by its interpreter."""
    import importlib.util

    if importlib.util.find_spec("triton") is None:
        raise DnncError(f"building for {target} compiles Triton kernels here: install Triton (pip install 'dnnc[cuda]')")
    from dnnc.backends.triton import interpreting

    if interpreting():
        raise DnncError(
            f"building for {target} compiles its Triton kernels with triton.compile, which TRITON_INTERPRET=1 (set in this "
            "process) replaces with Triton's interpreter: unset it"
        )
