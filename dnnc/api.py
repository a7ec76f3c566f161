"""The Python entry point: ``dnnc.compile(model, example_inputs)``."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch.export import ExportedProgram

from dnnc import knobs
from dnnc.backends.reference import ReferenceExecutor
from dnnc.errors import ArtifactError, DnncError, InputError
from dnnc.ir.program import Program
from dnnc.pipeline import CompileReport, canonicalize, exported_program, lower_for_gpu
from dnnc.runtime.device import resolve_device
from dnnc.runtime.signature import as_tensors, check_inputs, specs_of
from dnnc.version import __version__


class CompiledModule:
    """A compiled program, called like the model it came from.

    Inputs (torch tensors, or arrays that speak DLPack) are checked against the
    compiled signature before anything runs; outputs come back in the model's
    structure (a tensor, tuple, ...). On a GPU the program runs from one memory
    arena, replayed as a CUDA graph unless ``cuda_graph`` is off.
    """

    def __init__(
        self,
        program: Program,
        report: CompileReport,
        device: str,
        in_spec: Any = None,
        out_spec: Any = None,
        positional: bool = True,
        *,
        kernels: Any = None,
        cuda_graph: bool | None = None,
        target: str | None = None,
    ):
        self.program = program
        self.report = report
        self.device = device
        self.target = target or target_of(device)
        """What the program was compiled for: ``cpu`` or ``sm_<capability>``."""
        self.input_specs = specs_of(program.input_types)
        self._in_spec = in_spec
        self._positional = positional  # the example inputs were plain positional tensors
        self._out_spec = out_spec
        if device == "cuda":
            from dnnc.runtime.arena import ArenaRunner
            from dnnc.runtime.cuda_graph import CudaGraphRunner
            from dnnc.runtime.gpu_executor import GpuExecutor

            started = time.perf_counter()
            self._executor: ReferenceExecutor | GpuExecutor = GpuExecutor(program, "cuda", kernels)
            report.add("gpu-build", started, None)  # cuDNN plans built (tuned unless recorded), kernels compiled
            self._executor.announce()
            arena = ArenaRunner(self._executor)
            graphed = knobs.get().cuda_graph if cuda_graph is None else cuda_graph
            self._runner: Any = CudaGraphRunner(arena) if graphed else arena
        else:
            self._executor = ReferenceExecutor(program, knobs.get().reference_precision)
            self._runner = self._executor

    def __call__(self, *args: Any) -> Any:
        if self._positional and all(type(a) is torch.Tensor for a in args):
            flat: list[Any] = list(args)  # the common call: nothing to flatten or convert
        else:
            flat = as_tensors(self._flatten(args))
        check_inputs(self.input_specs, flat, self.device)
        outputs = self._runner.run(flat)
        if self._out_spec is None:
            return outputs[0] if len(outputs) == 1 else tuple(outputs)
        return pytree.tree_unflatten(outputs, self._out_spec)

    @property
    def memory_peak_bytes(self) -> int | None:
        """Size of the arena that holds every intermediate (GPU only; None on the reference backend)."""
        return getattr(self._runner, "peak_bytes", None)

    def _flatten(self, args: tuple[Any, ...]) -> list[Any]:
        """Inputs structured like the example inputs, flattened to the program's
        tensors. Plain positional tensors are taken as given, so a wrong argument
        is reported by its position."""
        leaves, spec = pytree.tree_flatten((args, {}))
        if self._in_spec is None or spec == self._in_spec:
            return leaves
        if self._positional:
            return list(args)
        raise InputError(f"inputs are structured as {spec}, but the program was compiled for {self._in_spec}")

    @property
    def ir(self) -> str:
        return self.program.text()

    def save_ir(self, path: str | Path) -> Path:
        """Write the IR and its parameters (``x.mlir`` + ``x.safetensors``)."""
        from dnnc.paths import check_writable

        check_writable(path)
        self.program.save(path)
        return Path(path)

    def save(self, path: str | Path) -> Path:
        """Write an artifact (``model.dnnc``) that ``dnnc.load`` runs without compiling
        or tuning again; a path ending in ``.mlir`` writes the IR instead."""
        if Path(path).suffix == ".mlir":
            return self.save_ir(path)
        from dnnc.artifact.kernels import embed_user_kernels, portable_kernels, triton_records
        from dnnc.artifact.store import ArtifactContents, save_artifact
        from dnnc.paths import check_writable

        check_writable(path)

        structure = {
            "in_spec": _spec_text(self._in_spec),
            "out_spec": _spec_text(self._out_spec),
            "positional": self._positional,
        }
        summary: dict[str, Any] = {"memory_peak_bytes": self.memory_peak_bytes}
        triton: list[dict[str, Any]] = []
        program, files = self.program, {}
        if self.device == "cuda":
            executor = self._executor
            summary.update(executor.summary(), device_name=torch.cuda.get_device_name(executor.device))  # type: ignore[union-attr]
            triton = triton_records(executor.steps)  # type: ignore[union-attr]
            program, files = embed_user_kernels(self.program, executor.steps)  # type: ignore[union-attr]
        program = portable_kernels(program)
        return save_artifact(ArtifactContents(program, self.target, structure, triton, summary, files=files), path)


def target_of(device: str) -> str:
    """``cpu``, or the current GPU's ``sm_<major><minor>``."""
    if device != "cuda":
        return "cpu"
    major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}"


def _spec_text(spec: Any) -> str | None:
    if spec is None:
        return None
    try:
        return pytree.treespec_dumps(spec)
    except Exception:  # a container type pytree cannot serialise: outputs come back flat
        return None


def _spec_from_text(text: str | None) -> Any:
    return None if text is None else pytree.treespec_loads(text)


def compile(  # noqa: A001 - the public name users expect
    model: torch.nn.Module | ExportedProgram,
    example_inputs: Sequence[Any] | torch.Tensor = (),
    *,
    device: str | None = None,
    cuda_graph: bool | None = None,
) -> CompiledModule:
    """Compile a PyTorch model (or an ExportedProgram) for the given example inputs.
    ``cuda_graph``: replay the program as one CUDA graph (default: ``knobs.cuda_graph``)."""
    target = resolve_device(device)
    report = CompileReport()
    ep = exported_program(model, example_inputs, report)
    program = canonicalize(ep, report)
    if target == "cuda":
        lower_for_gpu(program, report)
    args, kwargs = ep.example_inputs or ((), {})
    positional = not kwargs and all(isinstance(a, torch.Tensor) for a in args)
    return CompiledModule(program, report, target, ep.call_spec.in_spec, ep.call_spec.out_spec, positional, cuda_graph=cuda_graph)


def compile_program(
    program: Program, *, device: str | None = None, cuda_graph: bool | None = None, stage: str = "canonical-stablehlo"
) -> CompiledModule:
    """Compile a tcp program built by another frontend (StableHLO): canonicalize it
    (``stage``) and lower it for the GPU where it runs there. Outputs come back flat
    (a tensor, or a tuple of them)."""
    from dnnc.pipeline import run_stage

    target = resolve_device(device)
    report = CompileReport()
    run_stage(program, stage, report)
    if target == "cuda":
        lower_for_gpu(program, report)
    return CompiledModule(program, report, target, cuda_graph=cuda_graph)


def explain(
    model: torch.nn.Module | ExportedProgram,
    example_inputs: Sequence[Any] | torch.Tensor = (),
    *,
    policy: str | None = None,
    backends: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The partitioner's decision record for a model: which backend would run which
    ops and why (measured on the GPU when there is one, else roofline estimates).
    ``backends`` defaults to ``knobs.gpu_backends`` that can run here; naming cuDNN
    on a machine without its frontend prices cuDNN groups by estimate."""
    from dnnc.partition import DECISIONS_ATTR
    from dnnc.partition.partitioner import Partition
    from dnnc.pipeline import run_passes, run_stage

    report = CompileReport()
    program = canonicalize(exported_program(model, example_inputs, report), report)
    if knobs.get().cudnn_attention:
        run_stage(program, "gpu-cudnn-attention", report)
    policy = policy or ("auto" if knobs.get().partition == "greedy" else knobs.get().partition)
    if policy == "greedy":
        raise DnncError("the greedy policy makes no decisions to explain; use auto, cudnn-only or triton-only")
    run_passes(program, [Partition(policy=policy, backends=tuple(backends or ()))])
    record = program.entry.attributes.get(DECISIONS_ATTR)
    return json.loads(record.data) if record is not None else {}  # type: ignore[attr-defined]


def load(
    path: str | Path, *, device: str | None = None, cuda_graph: bool | None = None, trust_code: bool = False
) -> CompiledModule:
    """A module saved with ``CompiledModule.save``, ready to call: nothing is compiled
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
    from dnnc.artifact.kernels import RecordedKernels, parse_triton_records
    from dnnc.artifact.store import read_artifact, triton_member
    from dnnc.artifact.target import runtime_device

    if not isinstance(path, (str, os.PathLike)):
        raise ArtifactError(f"dnnc.load takes the path of a .dnnc artifact, got {type(path).__name__}")
    started = time.perf_counter()
    contents = read_artifact(path)
    report = CompileReport()
    report.add("read-artifact", started, contents.program)
    if trust_code:
        from dnnc.kernels.reference import trust_references

        trust_references(contents.program)
    where = runtime_device(contents.target, device, Path(path))
    kernels = None
    if where == "cuda":
        records = parse_triton_records(contents.triton, triton_member(contents.target))
        written_by = contents.manifest.data.get("dnnc") if contents.manifest is not None else None
        kernels = RecordedKernels(records, contents.files, same_version=written_by == __version__)
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
        kernels=kernels,
        cuda_graph=cuda_graph,
        target=contents.target,
    )
