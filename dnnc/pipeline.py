"""The compiler's stages as short lists of named passes.

    torch.export ──► imported ──► canonical
                                  (fold-batchnorm, simplify-shapes, fold-params,
                                   simplify-shapes, raise-ops, fold-attention-masks, dce)

Every stage can be dumped (knob ``dump_dir``) and is verified after each pass.
Later stages (layouts, grouping, lowering) append here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.export import ExportedProgram
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import VerifyException

from dnnc import knobs
from dnnc.backends.cudnn import has_cudnn_frontend
from dnnc.errors import DnncError, PassError
from dnnc.frontend.torch_export import check_model_and_inputs, decompose, export, import_program
from dnnc.ir.context import make_context
from dnnc.ir.program import Program
from dnnc.log import say_once
from dnnc.partition import DECISIONS_ATTR
from dnnc.passes import ParamPass, parse_passes

CANONICALIZE = "fold-batchnorm,simplify-shapes,fold-params,simplify-shapes,raise-ops,fold-attention-masks,dce"
"""Batch norms folded into products, weights pre-computed, shape chains collapsed, ops
written out in steps (the RMS norms of Llama-style models) raised to one tcp op."""
CUDNN_STAGE = "cudnn-group,assign-layouts,sink-transposes,simplify-shapes,fold-params{max-growth=3.0},dce,lower-cudnn"
"""Outline cuDNN graphs, make convolutions channels-last (weights transposed, and
channel-padded where tensor cores need it, once, here: hence the growth allowed
to fold-params), cancel the transposes between graphs, lower groups to ``cudnn.graph``."""

PARTITIONED = "assign-layouts,simplify-shapes,fold-params{max-growth=3.0},dce,lower-cudnn,triton-fuse,dce"
"""After ``partition`` has outlined the cuDNN groups and marked the Triton ones: the
cuDNN stage's layout and lowering passes, then Triton builds the marked kernels."""

STABLEHLO_CANONICALIZE = f"sink-transposes,simplify-shapes,{CANONICALIZE}"
"""Programs imported from StableHLO keep the framework's layout changes around every
convolution: they are moved past the elementwise code and cancelled first; ops the
framework wrote out in steps (softmax) are raised back to one tcp op."""

STAGES: dict[str, str] = {
    "canonical": CANONICALIZE,
    "canonical-stablehlo": STABLEHLO_CANONICALIZE,
    "gpu-cudnn-attention": "cudnn-attention",
    "gpu-cudnn": CUDNN_STAGE,
    "gpu-triton": "triton-fuse,dce",
    **{f"gpu-partition-{p}": f"partition{{policy={p}}},{PARTITIONED}" for p in ("auto", "cudnn-only", "triton-only")},
}


def gpu_stages(backends: Sequence[str]) -> list[str]:
    """The GPU lowering stages for the backends asked for. ``greedy`` (the default
    ``knobs.partition``) runs each backend's stage in order; a priced policy (``auto``,
    ``cudnn-only``, ``triton-only``) lets one ``partition`` decide for the whole graph. cuDNN is skipped
    (and that said once) where the frontend is not installed; attention goes to
    cuDNN only when ``knobs.cudnn_attention`` asks for it."""
    for b in backends:
        if f"gpu-{b}" not in STAGES:
            raise DnncError(f"unknown GPU backend {b!r}; known: cudnn, triton")
    policy = knobs.get().partition
    if policy == "greedy" and (knobs.get().tuning_specs or knobs.get().tuning_spec_path):
        say_once("dnnc: tuning specs are applied by the partitioner; the greedy policy ignores them (use --partition auto)")
    if policy != "greedy":
        cudnn = "cudnn" in backends and has_cudnn_frontend()
        attention = ["gpu-cudnn-attention"] if cudnn and knobs.get().cudnn_attention else []
        return [*attention, f"gpu-partition-{policy}"]
    stages = []
    for b in backends:
        if b == "cudnn":
            if not has_cudnn_frontend():
                continue
            if knobs.get().cudnn_attention:
                stages.append("gpu-cudnn-attention")
        stages.append(f"gpu-{b}")
    return stages


def lower_for_gpu(program: Program, report: CompileReport | None = None, backends: Sequence[str] | None = None) -> None:
    """Canonical tcp to the GPU form: backend groups and graphs, the rest tcp. The
    partitioner's decision record moves from the IR into ``program.metadata``."""
    if backends is None:
        backends = [b.strip() for b in knobs.get().gpu_backends.split(",") if b.strip()]
    with knobs.override(gpu_backends=",".join(backends)):
        for stage in gpu_stages(backends):
            run_stage(program, stage, report)
    record = program.entry.attributes.pop(DECISIONS_ATTR, None)
    if record is not None:
        program.metadata["decisions"] = json.loads(record.data)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class StageRecord:
    name: str
    seconds: float
    ops: int


@dataclass
class CompileReport:
    stages: list[StageRecord] = field(default_factory=list)

    def add(self, name: str, started: float, program: Program | None) -> None:
        ops = count_ops(program) if program is not None else 0
        self.stages.append(StageRecord(name, time.perf_counter() - started, ops))


def count_ops(program: Program) -> int:
    return sum(1 for op in program.entry.body.walk()) - 1  # not the terminator


def run_passes(program: Program, passes: Sequence[ModulePass], verify_each: bool | None = None) -> None:
    """Apply passes in order; with verification on, a pass that breaks the IR is named."""
    verify_each = knobs.get().verify_each_pass if verify_each is None else verify_each
    ctx = make_context()
    for p in passes:
        if isinstance(p, ParamPass):
            p.apply_with_params(ctx, program.module, program.params)
        else:
            p.apply(ctx, program.module)
        if verify_each:
            try:
                program.module.verify()
            except VerifyException as e:
                raise PassError(f"pass {p.name} produced invalid IR: {e}") from None
    program.prune_params()


def dump(program: Program, stage: str) -> None:
    directory = knobs.get().dump_dir
    if directory is not None:
        Path(directory).mkdir(parents=True, exist_ok=True)
        (Path(directory) / f"{stage}.mlir").write_text(program.text())


def run_stage(program: Program, stage: str, report: CompileReport | None = None) -> None:
    started = time.perf_counter()
    run_passes(program, parse_passes(STAGES[stage]))
    if report is not None:
        report.add(stage, started, program)
    dump(program, stage)


def export_model(model: torch.nn.Module, example_inputs: Sequence[Any], report: CompileReport) -> ExportedProgram:
    started = time.perf_counter()
    ep = export(model, example_inputs)
    report.add("export", started, None)
    return ep


def canonicalize(ep: ExportedProgram, report: CompileReport) -> Program:
    """Import an exported program (core ATen) and bring it to canonical tcp."""
    started = time.perf_counter()
    program = import_program(ep)
    report.add("imported", started, program)
    dump(program, "imported")
    run_stage(program, "canonical", report)
    return program


def exported_program(
    model: torch.nn.Module | ExportedProgram, example_inputs: Sequence[Any] | torch.Tensor, report: CompileReport
) -> ExportedProgram:
    """Core-ATen program of a module (exported for the example inputs) or of a
    program the user exported already."""
    if isinstance(model, ExportedProgram):
        return decompose(model)
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
