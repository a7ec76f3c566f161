"""The Python entry point: ``dnnc.compile(model, example_inputs)``."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch.export import ExportedProgram

from dnnc import knobs
from dnnc.backends.reference import ReferenceExecutor
from dnnc.errors import DnncError, InputError
from dnnc.ir.program import Program
from dnnc.ir.types import element_of, shape_of, torch_dtype
from dnnc.log import say_once
from dnnc.pipeline import CompileReport, canonicalize, exported_program, lower_for_gpu
from dnnc.runtime.signature import TensorSpec, check_inputs


class CompiledModule:
    """A compiled program, called like the model it came from.

    Inputs are checked against the compiled signature before anything runs;
    outputs come back in the model's structure (a tensor, tuple, ...).
    """

    def __init__(
        self,
        program: Program,
        report: CompileReport,
        device: str,
        in_spec: Any = None,
        out_spec: Any = None,
        positional: bool = True,
    ):
        self.program = program
        self.report = report
        self.device = device
        self.input_specs = [TensorSpec(shape_of(t), torch_dtype(element_of(t))) for t in program.input_types]
        self._in_spec = in_spec
        self._positional = positional  # the example inputs were plain positional tensors
        self._out_spec = out_spec
        if device == "cuda":
            from dnnc.runtime.gpu_executor import GpuExecutor

            started = time.perf_counter()
            self._executor: ReferenceExecutor | GpuExecutor = GpuExecutor(program, "cuda")
            report.add("gpu-build", started, None)  # cuDNN plans built and tuned, kernels compiled
            self._executor.announce()
        else:
            self._executor = ReferenceExecutor(program, knobs.get().reference_precision)

    def __call__(self, *args: Any) -> Any:
        flat = self._flatten(args)
        check_inputs(self.input_specs, flat, self.device)
        outputs = self._executor.run(flat)
        if self._out_spec is None:
            return outputs[0] if len(outputs) == 1 else tuple(outputs)
        return pytree.tree_unflatten(outputs, self._out_spec)

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
        self.program.save(path)
        return Path(path)


def resolve_device(device: str | None) -> str:
    """Where the program runs: ``auto`` takes the GPU when there is one and says
    once when it runs on the CPU reference backend instead."""
    device = device or knobs.get().device
    if device == "cpu":
        return "cpu"
    if device == "cuda":
        if not torch.cuda.is_available():
            raise DnncError("device='cuda' but torch sees no CUDA GPU; use device='cpu' (the reference backend)")
        return "cuda"
    if device != "auto":
        raise DnncError(f"unknown device {device!r}: expected 'auto', 'cpu' or 'cuda'")
    if torch.cuda.is_available():
        return "cuda"
    say_once("dnnc: no GPU found; running on the CPU reference backend")
    return "cpu"


def compile(  # noqa: A001 - the public name users expect
    model: torch.nn.Module | ExportedProgram, example_inputs: Sequence[Any] | torch.Tensor = (), *, device: str | None = None
) -> CompiledModule:
    """Compile a PyTorch model (or an ExportedProgram) for the given example inputs."""
    target = resolve_device(device)
    report = CompileReport()
    ep = exported_program(model, example_inputs, report)
    program = canonicalize(ep, report)
    if target == "cuda":
        lower_for_gpu(program, report)
    args, kwargs = ep.example_inputs or ((), {})
    positional = not kwargs and all(isinstance(a, torch.Tensor) for a in args)
    return CompiledModule(program, report, target, ep.call_spec.in_spec, ep.call_spec.out_spec, positional)


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
    policy = policy or knobs.get().partition
    if policy == "greedy":
        raise DnncError("the greedy policy makes no decisions to explain; use auto, cudnn-only or triton-only")
    run_passes(program, [Partition(policy=policy, backends=tuple(backends or ()))])
    record = program.entry.attributes.get(DECISIONS_ATTR)
    return json.loads(record.data) if record is not None else {}  # type: ignore[attr-defined]
