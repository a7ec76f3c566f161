"""dnnc's passes by name, and the runner that applies a pipeline of them.

The registry maps a name to where its class lives and imports it when a pipeline
names it: naming a pass is not a dependency, so this package imports none of the
stages whose passes it lists (the backends' lowering passes, the partitioner)."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import parse_pipeline
from xdsl.utils.exceptions import ArgSpecParseError, VerifyException

from dnnc import knobs
from dnnc.errors import PassError
from dnnc.ir.context import make_context
from dnnc.ir.rewriting import ParamPass

if TYPE_CHECKING:
    from dnnc.ir.program import Program

_WHERE: dict[str, str] = {
    "fold-batchnorm": "dnnc.passes.fold_batchnorm:FoldBatchNorm",
    "simplify-shapes": "dnnc.passes.simplify_shapes:SimplifyShapes",
    "sink-transposes": "dnnc.passes.sink_transposes:SinkTransposes",
    "raise-ops": "dnnc.passes.raise_ops:RaiseOps",
    "fold-params": "dnnc.passes.fold_params:FoldParams",
    "fold-attention-masks": "dnnc.passes.attention_masks:FoldAttentionMasks",
    "dce": "dnnc.passes.dce:DeadCodeElimination",
    "split-reductions": "dnnc.passes.split_reductions:SplitReductions",
    "pad-product-columns": "dnnc.passes.pad_products:PadProductColumns",
    "merge-sibling-products": "dnnc.passes.merge_products:MergeSiblingProducts",
    "cudnn-attention": "dnnc.backends.cudnn.attention:CudnnAttention",
    "cudnn-group": "dnnc.backends.cudnn.grouping:CudnnGroup",
    "assign-layouts": "dnnc.backends.cudnn.layouts:AssignLayouts",
    "lower-cudnn": "dnnc.backends.cudnn.lowering:LowerCudnn",
    "triton-fuse": "dnnc.backends.triton.fusion:TritonFuse",
    "triton-launch-order": "dnnc.backends.triton.launch_order:TritonLaunchOrder",
    "triton-channels-last": "dnnc.backends.triton.channels_last:TritonChannelsLast",
    "triton-channels-last-boundary": "dnnc.backends.triton.channels_last:ChannelsLastBoundary",
    "triton-conv-weights": "dnnc.backends.triton.conv_weights:TritonConvWeights",
    "partition": "dnnc.partition.partitioner:Partition",
}


class _Registry(Mapping[str, type[ModulePass]]):
    """Name -> pass class, each class imported on first lookup."""

    def __getitem__(self, name: str) -> type[ModulePass]:
        module, attr = _WHERE[name].split(":")
        cls: type[ModulePass] = getattr(importlib.import_module(module), attr)
        return cls

    def __iter__(self) -> Iterator[str]:
        return iter(_WHERE)

    def __len__(self) -> int:
        return len(_WHERE)


PASSES: Mapping[str, type[ModulePass]] = _Registry()


def parse_passes(spec: str) -> list[ModulePass]:
    """``"fold-batchnorm,dce"`` (xDSL pipeline syntax, options in braces) to passes."""
    passes: list[ModulePass] = []
    try:
        specs = list(parse_pipeline(spec))
    except ArgSpecParseError as e:  # derives from BaseException, so name it
        raise PassError(f"cannot parse pass pipeline {spec!r}: {e}") from None
    for s in specs:
        if s.name not in PASSES:
            raise PassError(f"unknown pass {s.name!r}; known passes: {', '.join(sorted(PASSES))}")
        try:
            passes.append(PASSES[s.name].from_spec(s))
        except (ArgSpecParseError, ValueError, TypeError) as e:
            raise PassError(f"bad options for pass {s.name!r}: {e}") from None
    return passes


def run_passes(program: Program, passes: Sequence[ModulePass] | str, verify_each: bool | None = None) -> None:
    """Apply passes (or a pipeline's text) in order; with verification on, a pass that
    breaks the IR is named."""
    if isinstance(passes, str):
        passes = parse_passes(passes)
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


__all__ = ["PASSES", "ParamPass", "parse_passes", "run_passes"]
