"""``dnnc.compile(..., dynamic=...)``: a model compiled for ranges of input sizes.

The model is exported once with the ranges as symbolic sizes (the check that it
takes them, and where its outputs' sizes follow: ``frontend.dynamic_export``), then
compiled once per bucket, each bucket from example inputs resized to it, the largest
first. Each bucket is partitioned and tuned for its own shapes, so decisions may
differ between buckets (each bucket's ``metadata`` holds its own). On a GPU the
buckets share their weights and memory arena (``runtime.sharing``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch.export import ExportedProgram

from dnnc import buckets as bk
from dnnc.bucketed import BucketedModule
from dnnc.errors import DnncError

log = logging.getLogger("dnnc")


def compile_bucketed(
    model: torch.nn.Module,
    example_inputs: Sequence[Any] | torch.Tensor,
    dynamic: Mapping[str, Any] | Sequence[str] | None,
    chosen: Mapping[str, Sequence[int]] | Sequence[int] | None,
    compile_one: Any,
    lazy: bool = False,
) -> BucketedModule:
    """``compile_one(model, inputs)``: the ``CompiledModule`` of one bucket. An
    ExportedProgram with ``Dim``s brings its ranges (``dynamic`` may be None). ``lazy``:
    compile the bucket of the example inputs now and each other bucket on the first
    call that needs it (as torch.compile compiles a new shape on its first call)."""
    from dnnc.frontend.dynamic_export import exported_ranges, output_axes
    from dnnc.runtime.sharing import SharedMemory, sharing

    if isinstance(model, ExportedProgram):  # each bucket is exported again from the program's module
        args, kwargs = model.example_inputs or ((), {})
        if kwargs or not args:
            raise DnncError("an ExportedProgram with dynamic sizes needs positional example inputs (export(model, args))")
        dynamic = dynamic if dynamic is not None else exported_ranges(model)
        model, example_inputs = model.module(), args
    if not isinstance(model, torch.nn.Module):
        raise DnncError(f"dynamic=: dnnc compiles a torch.nn.Module or an ExportedProgram, got {type(model).__name__}")
    if dynamic is None:
        raise DnncError("buckets= needs dynamic= (the ranges the buckets cover)")
    inputs = (example_inputs,) if isinstance(example_inputs, torch.Tensor) else tuple(example_inputs)
    if not inputs:
        raise DnncError("dynamic=: compiling a model for ranges of shapes needs example inputs")
    ranges = bk.ranges_of(dynamic)
    axes = bk.input_axes(list(ranges), inputs)
    plan = bk.BucketPlan(ranges, bk.bucket_sizes(ranges, chosen), axes)
    plan.output_axes = output_axes(model, inputs, ranges, axes)
    shared = SharedMemory()

    def build(key: bk.Key) -> Any:
        sizes = dict(zip(plan.names, key))
        log.info("dnnc: bucket %s", plan.label(key))
        with sharing(shared):
            return compile_one(model, tuple(bk.resized(x, a, sizes) for x, a in zip(inputs, axes)))

    if lazy:
        first = plan.bucket_for(plan.measure(inputs))
        return BucketedModule(plan, {first: build(first)}, build)
    modules = {key: build(key) for key in plan.buckets()}  # the largest first: its arena is the one shared
    if shared.reused_bytes:
        log.info("dnnc: %d MB of weights shared between buckets", shared.reused_bytes >> 20)
    return BucketedModule(plan, modules)
