"""The compiler's stages run in order: export, import, canonical tcp, the GPU form
(``passes.stages`` names the passes of each), with every stage timed, counted and
dumped (knob ``dump_dir``) and verified after each pass."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch.export import ExportedProgram

from dnnc import knobs, progress
from dnnc.errors import DnncError
from dnnc.frontend.torch_export import check_model_and_inputs, export, for_import, import_program
from dnnc.ir.program import Program
from dnnc.log import say_once
from dnnc.passes import run_passes
from dnnc.passes.stages import CANONICALIZE, CUDNN_STAGE, PARTITIONED, STAGES
from dnnc.report import CompileReport, count_ops

__all__ = ["CANONICALIZE", "CUDNN_STAGE", "PARTITIONED", "STAGES", "CompileReport", "count_ops", "run_passes"]


def gpu_stages(backends: Sequence[str]) -> list[str]:
    """The GPU lowering stages for the backends asked for. A priced policy (``auto``, the
    default ``knobs.partition``, ``cudnn-only``, ``triton-only``) lets one ``partition``
    decide for the whole graph; ``greedy`` runs each backend's stage in order. cuDNN is skipped
    (and that said once) where the frontend is not installed; attention written out
    in steps goes to cuDNN's fused attention, ``tcp.attention`` only when
    ``knobs.cudnn_attention`` asks for it."""
    from dnnc.partition.backends import BACKENDS, usable

    for b in backends:
        if b not in BACKENDS:
            raise DnncError(f"unknown GPU backend {b!r}; known: {', '.join(sorted(BACKENDS))}")
    policy = knobs.get().partition
    if policy == "greedy" and (knobs.get().tuning_specs or knobs.get().tuning_spec_path):
        say_once("dnnc: tuning specs are applied by the partitioner; the greedy policy ignores them (use --partition auto)")
    if policy != "greedy":
        return [*before_partition(backends), f"{PARTITION_STAGE}{policy}"]
    here = [b for b in backends if usable(b)]
    return [*common_gpu_stages(), *(stage for b in here for stage in (*first_stages([b]), f"gpu-{b}"))]


def common_gpu_stages() -> list[str]:
    """What every GPU program gets first, whatever the backends: sibling products merged
    (unless ``knobs.merge_products`` is off), then products aligned."""
    return [*([MERGE_STAGE] if knobs.get().merge_products else []), GPU_FIRST_STAGE]


def before_partition(backends: Sequence[str]) -> list[str]:
    """The stages a priced policy's program goes through before the partitioner: what
    ``dnnc explain`` runs too, so it prices the program the compile partitions."""
    return [*common_gpu_stages(), *first_stages(backends)]


def ready_to_partition(program: Program, backends: Sequence[str] | None = None, report: CompileReport | None = None) -> Program:
    """``program`` (canonical) through ``before_partition``'s stages, in place: the program
    a priced compile partitions, which ``dnnc explain`` and the spec tools look at (with
    sibling products merged, a record for one projection no longer matches anything)."""
    names = backends or knobs.get().backend_names()
    for stage in before_partition(names):
        run_stage(program, stage, report)
    return program


def first_stages(backends: Sequence[str]) -> list[str]:
    """What the installed ones of ``backends`` run before partitioning (cuDNN's
    attention, Triton's split of long reductions), in order; names the partitioner's
    table does not know are passed over."""
    from dnnc.partition.backends import BACKENDS, usable

    return [stage for b in backends if b in BACKENDS and usable(b) for stage in BACKENDS[b].first_stages()]


MERGE_STAGE = "gpu-merged-products"
"""Products of the same rows by different stored weights as one product
(``passes.merge_products``), unless ``knobs.merge_products`` is turned off."""

GPU_FIRST_STAGE = "gpu-aligned-products"
"""What every GPU program gets before any backend's stage: products whose rows would
not be 16-byte aligned computed on padded weights (``passes.pad_products``)."""


def lower_for_gpu(program: Program, report: CompileReport | None = None, backends: Sequence[str] | None = None) -> Any:
    """Canonical tcp to the GPU form: backend groups and graphs, the rest tcp. A priced
    policy's decision record goes to ``program.metadata["decisions"]``. Returns the
    program's ``GpuExecutor`` where the partitioner's contest built it (the program is
    then the one the contest built), else None."""
    if backends is None:
        backends = knobs.get().backend_names()
    executor = None
    with knobs.override(gpu_backends=",".join(backends)):
        for stage in gpu_stages(backends):
            executor = run_stage(program, stage, report)
    return executor


PARTITION_STAGE = "gpu-partition-"
"""A stage whose policy ``partition.decide`` applies before ``PARTITIONED`` lowers what it decided."""


def dump(program: Program, stage: str) -> None:
    directory = knobs.get().dump_dir
    if directory is not None:
        Path(directory).mkdir(parents=True, exist_ok=True)
        (Path(directory) / f"{stage}.mlir").write_text(program.text())


def run_stage(program: Program, stage: str, report: CompileReport | None = None) -> Any:
    """The stage's passes, timed, counted and dumped. A partition stage asks
    ``partition.decide``, keeps its record in ``program.metadata["decisions"]``, and
    where the decision's contest built the winning program already, takes that
    program's module and parameters (lowered by ``PARTITIONED``) and returns its
    executor instead of lowering again; every other stage returns None."""
    started = time.perf_counter()
    progress.stage(stage)
    executor = None
    if stage.startswith(PARTITION_STAGE):
        from dnnc.partition.decide import decide

        outcome = decide(program, policy=stage.removeprefix(PARTITION_STAGE))
        if outcome is not None and outcome.built is not None:
            program.module, program.params = outcome.built.program.module, outcome.built.program.params
            executor = outcome.built.executor
        else:
            run_passes(program, PARTITIONED)
        if outcome is not None:
            program.metadata["decisions"] = outcome.record
    else:
        run_passes(program, STAGES[stage])
    if report is not None:
        report.add(stage, started, program)
    dump(program, stage)
    return executor


def export_model(model: torch.nn.Module, example_inputs: Sequence[Any], report: CompileReport) -> ExportedProgram:
    started = time.perf_counter()
    progress.stage("export")
    ep = export(model, example_inputs)
    report.add("export", started, None)
    return ep


def canonicalize(ep: ExportedProgram, report: CompileReport) -> Program:
    """Import an exported program and bring it to canonical tcp."""
    started = time.perf_counter()
    program = import_program(ep)
    report.add("imported", started, program)
    dump(program, "imported")
    run_stage(program, "canonical", report)
    return program


def exported_program(
    model: torch.nn.Module | ExportedProgram, example_inputs: Sequence[Any] | torch.Tensor, report: CompileReport
) -> ExportedProgram:
    """The program the importer takes (``for_import``) of a module (exported for the
    example inputs) or of a program the user exported already."""
    if isinstance(model, ExportedProgram):
        return for_import(model)
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    check_model_and_inputs(model, example_inputs)
    if not example_inputs:
        raise DnncError("compiling a torch.nn.Module needs example inputs (their shapes and dtypes are compiled in)")
    return export_model(model, example_inputs, report)


def to_canonical_tcp(model: torch.nn.Module | ExportedProgram, example_inputs: Sequence[Any] = ()) -> Program:
    """Export (unless given an ExportedProgram), import and canonicalize."""
    report = CompileReport()
    return canonicalize(exported_program(model, example_inputs, report), report)
