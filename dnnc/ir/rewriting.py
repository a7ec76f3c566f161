"""What dnnc's passes share, in every stage (canonical, backend lowering, partition): passes
that need parameter values, and pattern passes."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriteWalker, RewritePattern

from dnnc.errors import PassError
from dnnc.ir.params import ParamStore
from dnnc.ir.types import element_of, tensor_type


@dataclass(frozen=True)
class ParamPass(ModulePass):
    """A pass that reads or creates parameter values, so it runs with the store."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        raise PassError(f"{self.name} needs parameter values: run it in a pipeline with the program's parameters")

    @abstractmethod
    def apply_with_params(self, ctx: Context, op: ModuleOp, params: ParamStore) -> None: ...


@dataclass(frozen=True)
class PatternPass(ModulePass):
    """A pass that is a table of rewrite patterns applied to a fixed point."""

    patterns: ClassVar[tuple[RewritePattern, ...]] = ()

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(GreedyRewritePatternApplier(list(self.patterns))).rewrite_module(op)


def retyped(op: Operation, operands: Sequence[SSAValue], shape: Sequence[int]) -> Operation:
    """A copy of ``op`` (its properties and attributes kept) on ``operands``, producing
    ``shape`` in its result's element type: an elementwise op moved across a layout or
    shape change computes on the other side's shape."""
    new = type(op).create(
        operands=list(operands),
        result_types=[tensor_type(list(shape), element_of(op.results[0]))],
        properties=dict(op.properties),
        attributes=dict(op.attributes),
    )
    new.verify()
    return new
