"""The compiler's Python entry points: ``dnnc.compile(model, example_inputs)``,
``dnnc.explain``, and ``compile_program`` for programs other frontends built."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch.export import ExportedProgram

from dnnc import knobs
from dnnc.bucketed import BucketedModule
from dnnc.casting import cast_inputs, float_dtype
from dnnc.collection import with_fewer_collections
from dnnc.compiled import CompiledModule
from dnnc.errors import DnncError
from dnnc.ir.program import Program
from dnnc.pipeline import CompileReport, canonicalize, exported_program, lower_for_gpu
from dnnc.runtime.device import resolve_device


@with_fewer_collections
def compile(  # noqa: A001 - the public name users expect
    model: torch.nn.Module | ExportedProgram,
    example_inputs: Sequence[Any] | torch.Tensor = (),
    *,
    device: str | None = None,
    cuda_graph: bool | None = None,
    dtype: str | torch.dtype | None = None,
    partition: str | None = None,
    tuning_specs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
    options: Mapping[str, Any] | None = None,
    dynamic: Mapping[str, tuple[int, int]] | None = None,
    buckets: Mapping[str, Sequence[int]] | Sequence[int] | None = None,
    lazy_buckets: bool = False,
    target: str | None = None,
) -> CompiledModule | BucketedModule:
    """Compile a PyTorch model (or an ExportedProgram) for the given example inputs.

    ``device``: ``auto`` (default), ``cpu``, ``cuda`` or ``cuda:<index>`` (the current
    GPU's). ``cuda_graph``: replay the program as one CUDA graph (default:
    ``knobs.cuda_graph``). ``dtype`` (``f16``, ``bf16``, ``f32`` or a torch dtype):
    compile a copy of the model and its floating inputs cast to it (the model given is
    left as it is). ``partition``: ``auto`` (default), ``cudnn-only``, ``triton-only`` or
    ``greedy``. ``tuning_specs``: spec files or directories whose decisions override the
    partitioner's, first wins. ``options``: any other setting by name (``knobs.Knobs``).
    Each is what the ``dnnc compile`` option of that name does.

    ``dynamic``: ranges of sizes the module takes, ``{"batch": (1, 64)}`` (dimension 0
    of every input) and ``{"seq": (16, 512)}`` (dimension 1 of every input of rank 2 or
    more); the result is a ``BucketedModule`` holding one program per bucket.
    ``buckets``: the sizes compiled (a list where one dimension is dynamic, else by
    name), default powers of two and the range's high end; an input between buckets is
    padded with zeros up to the next one and its outputs cut back. A model that fixes a
    dynamic size is an error naming the op. An ExportedProgram exported with ``Dim``s
    at dimension 0 or 1 brings its ranges. ``lazy_buckets``: compile the example's
    bucket now and every other on the first call that needs it.

    ``target``: the GPU architecture to build for (``sm_90``). Where it is not the GPU
    here, the program is built for it without timing anything (``cross_compile``):
    save it and load it on that GPU, which then compiles no Triton kernel; here it runs
    on the CPU reference backend. Where it is the GPU here, the compile is the usual one.

    A module this machine compiled before for the same inputs and settings is loaded
    from the compile cache instead (``compile_cache``: nothing exported, compiled or timed)."""
    settings = dict(options or {})
    knobs.check_names(settings, "dnnc.compile")
    if partition is not None:
        settings["partition"] = partition
    if tuning_specs is not None:
        paths = [tuning_specs] if isinstance(tuning_specs, (str, os.PathLike)) else list(tuning_specs)
        settings["tuning_specs"] = os.pathsep.join(str(p) for p in paths)
    if dtype is not None:
        model, example_inputs = _cast(model, example_inputs, dtype)
    with knobs.override(**settings):
        if dynamic is not None or buckets is not None or _has_dims(model):
            from dnnc.bucket_compile import compile_bucketed

            return compile_bucketed(
                model,
                example_inputs,
                dynamic,
                buckets,
                lambda m, x: _compile(m, x, device, cuda_graph, target),
                lazy=lazy_buckets,
            )
        return _compile(model, example_inputs, device, cuda_graph, target)


def _has_dims(model: Any) -> bool:
    """An ExportedProgram exported with ``Dim``s: a user input with a symbolic size."""
    if not isinstance(model, ExportedProgram) or not model.range_constraints:
        return False
    from dnnc.frontend.dynamic_export import symbolic_sizes

    return bool(symbolic_sizes(model))


def _cast(model: Any, example_inputs: Any, dtype: str | torch.dtype) -> tuple[torch.nn.Module, Any]:
    """A copy of ``model`` and of the floating example inputs in ``dtype``."""
    import copy

    dtype = float_dtype(dtype)
    if not isinstance(model, torch.nn.Module):
        raise DnncError("dtype=: an ExportedProgram keeps the dtypes it was exported with; pass the torch.nn.Module")
    inputs = (example_inputs,) if isinstance(example_inputs, torch.Tensor) else tuple(example_inputs)
    return copy.deepcopy(model).to(dtype), cast_inputs(inputs, dtype)


def _compile(
    model: torch.nn.Module | ExportedProgram,
    example_inputs: Sequence[Any] | torch.Tensor,
    device: str | None,
    cuda_graph: bool | None,
    gpu_target: str | None = None,
) -> CompiledModule:
    from dnnc import compile_cache

    if _elsewhere(gpu_target, device):
        assert gpu_target is not None
        from dnnc.cross_compile import build_for_target

        report = CompileReport()
        ep = exported_program(model, example_inputs, report)
        program = canonicalize(ep, report)
        return build_for_target(program, report, gpu_target, lower_for_gpu, _structure(ep), cuda_graph)
    target = resolve_device(device)
    key = None
    if isinstance(model, torch.nn.Module):
        inputs = (example_inputs,) if isinstance(example_inputs, torch.Tensor) else tuple(example_inputs)
        key = compile_cache.model_key(model, inputs, target)
        cached = compile_cache.load_cached(key, target, cuda_graph) if key is not None else None
        if cached is not None:
            return cached
    if key is None:
        return _compile_fresh(model, example_inputs, target, cuda_graph, None)
    with compile_cache.compiling(key):
        cached = compile_cache.load_cached(key, target, cuda_graph)  # another process may have just stored it
        if cached is not None:
            return cached
        return _compile_fresh(model, example_inputs, target, cuda_graph, key)


def _compile_fresh(
    model: torch.nn.Module | ExportedProgram,
    example_inputs: Sequence[Any] | torch.Tensor,
    target: str,
    cuda_graph: bool | None,
    key: str | None,
) -> CompiledModule:
    """Export, canonicalize, lower and build; kept in the compile cache under ``key``."""
    from dnnc import compile_cache

    if target == "cuda":
        from dnnc.runtime.kernel_backends import start_workers

        start_workers()  # while export runs
    report = CompileReport()
    ep = exported_program(model, example_inputs, report)
    program = canonicalize(ep, report)
    executor = lower_for_gpu(program, report) if target == "cuda" else None
    compiled = CompiledModule(program, report, target, **_structure(ep), cuda_graph=cuda_graph, executor=executor)
    if key is not None:
        compile_cache.store(key, compiled)
    return compiled


def _structure(ep: ExportedProgram) -> dict[str, Any]:
    """How the compiled module takes and gives back what the model did: its call specs,
    and whether the example inputs were plain positional tensors."""
    args, kwargs = ep.example_inputs or ((), {})
    positional = not kwargs and all(isinstance(a, torch.Tensor) for a in args)
    return {"in_spec": ep.call_spec.in_spec, "out_spec": ep.call_spec.out_spec, "positional": positional}


def _elsewhere(gpu_target: str | None, device: str | None) -> bool:
    """Whether ``target=`` asks for a build for a GPU that is not here (``cross_compile``);
    a device asked for that is not this machine's CPU is then an error."""
    if gpu_target is None:
        return False
    from dnnc.cross_compile import capability_of, local_target

    capability_of(gpu_target)
    device = device or knobs.get().device
    here = local_target()
    if gpu_target == here and device != "cpu":
        return False
    if device not in ("auto", "cpu"):
        raise DnncError(
            f"target={gpu_target!r} builds for a GPU that is not here ({here or 'no GPU'}), so the program runs here on the "
            f"CPU reference backend, not on device={device!r}: leave device out"
        )
    return True


@with_fewer_collections
def compile_program(
    program: Program,
    *,
    device: str | None = None,
    cuda_graph: bool | None = None,
    stage: str = "canonical-stablehlo",
    target: str | None = None,
) -> CompiledModule:
    """Compile a tcp program built by another frontend (StableHLO): canonicalize it
    (``stage``) and lower it for the GPU where it runs there (``target``: as
    ``dnnc.compile``'s). Outputs come back flat (a tensor, or a tuple of them)."""
    from dnnc.pipeline import run_stage

    if _elsewhere(target, device):
        assert target is not None
        from dnnc.cross_compile import build_for_target

        report = CompileReport()
        run_stage(program, stage, report)
        return build_for_target(program, report, target, lower_for_gpu, cuda_graph=cuda_graph)
    target = resolve_device(device)
    if target == "cuda":
        from dnnc.runtime.kernel_backends import start_workers

        start_workers()  # while the program is canonicalized
    report = CompileReport()
    run_stage(program, stage, report)
    executor = lower_for_gpu(program, report) if target == "cuda" else None
    return CompiledModule(program, report, target, cuda_graph=cuda_graph, executor=executor)


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
    from dnnc.partition.decide import decide
    from dnnc.pipeline import ready_to_partition

    report = CompileReport()
    program = ready_to_partition(canonicalize(exported_program(model, example_inputs, report), report), backends, report)
    policy = policy or ("auto" if knobs.get().partition == "greedy" else knobs.get().partition)
    if policy == "greedy":
        raise DnncError("the greedy policy makes no decisions to explain; use auto, cudnn-only or triton-only")
    outcome = decide(program, policy=policy, backends=tuple(backends or ()))
    return outcome.record if outcome is not None else {}
