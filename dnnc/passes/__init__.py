"""dnnc's passes, one per file, and the registry that names them."""

from __future__ import annotations

from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import parse_pipeline
from xdsl.utils.exceptions import ArgSpecParseError

from dnnc.backends.cudnn.attention import CudnnAttention
from dnnc.backends.cudnn.grouping import CudnnGroup
from dnnc.backends.cudnn.layouts import AssignLayouts
from dnnc.backends.cudnn.lowering import LowerCudnn
from dnnc.backends.triton.fusion import TritonFuse
from dnnc.errors import PassError
from dnnc.partition.partitioner import Partition
from dnnc.passes.attention_masks import FoldAttentionMasks
from dnnc.passes.base import ParamPass, PatternPass
from dnnc.passes.dce import DeadCodeElimination
from dnnc.passes.fold_batchnorm import FoldBatchNorm
from dnnc.passes.fold_params import FoldParams
from dnnc.passes.raise_ops import RaiseOps
from dnnc.passes.simplify_shapes import SimplifyShapes
from dnnc.passes.sink_transposes import SinkTransposes

PASSES: dict[str, type[ModulePass]] = {
    p.name: p
    for p in (
        FoldBatchNorm,
        SimplifyShapes,
        SinkTransposes,
        RaiseOps,
        FoldParams,
        FoldAttentionMasks,
        DeadCodeElimination,
        CudnnAttention,
        CudnnGroup,
        AssignLayouts,
        LowerCudnn,
        TritonFuse,
        Partition,
    )
}


def parse_passes(spec: str) -> list[ModulePass]:
    """``"fold-batchnorm,dce"`` (xDSL pipeline syntax, options in braces) to passes."""
    passes: list[ModulePass] = []
    try:
        specs = list(parse_pipeline(spec))
    except ArgSpecParseError as e:  # derives from BaseException, so name it
        raise PassError(f"cannot parse pass pipeline {spec!r}: {e}") from None
    for s in specs:
        cls = PASSES.get(s.name)
        if cls is None:
            raise PassError(f"unknown pass {s.name!r}; known passes: {', '.join(sorted(PASSES))}")
        try:
            passes.append(cls.from_spec(s))
        except (ArgSpecParseError, ValueError, TypeError) as e:
            raise PassError(f"bad options for pass {s.name!r}: {e}") from None
    return passes


__all__ = [
    "PASSES",
    "DeadCodeElimination",
    "FoldAttentionMasks",
    "FoldBatchNorm",
    "FoldParams",
    "ParamPass",
    "PatternPass",
    "RaiseOps",
    "SimplifyShapes",
    "SinkTransposes",
    "parse_passes",
]
