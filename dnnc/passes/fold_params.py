"""fold-params: evaluate parameter-only subgraphs at compile time into new parameters.

A compile-time value (computed from parameters, constants and iota only) that
feeds run-time code is evaluated once, in float64, and replaced by a new named
parameter holding the result in its declared element type. Two limits keep the
stored weights from growing:

* a broadcast at the boundary is kept as an op (its input is folded instead),
  since materializing it would store repeated data;
* a value is folded only if it has at most ``max-growth`` times the elements of
  the largest parameter it is computed from (default 1: never grow; constant-only
  subgraphs stay as code).

The subgraphs left dead are removed by ``dce``; unused parameters are dropped
when the program is saved.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from dnnc.errors import PassError
from dnnc.ir import tcp
from dnnc.ir.analysis import compile_time_values
from dnnc.ir.params import ParamStore
from dnnc.ir.rewriting import ParamPass
from dnnc.ir.types import element_of, numel, torch_dtype
from dnnc.passes.compile_time import evaluate_value


@dataclass(frozen=True)
class FoldParams(ParamPass):
    name = "fold-params"

    max_growth: float = 1.0
    """A folded value may hold this many times the elements of its largest source parameter."""

    def apply_with_params(self, ctx: Context, op: ModuleOp, params: ParamStore) -> None:
        if self.max_growth <= 0:
            raise PassError(f"fold-params: max-growth must be positive, got {self.max_growth}")
        for fn in op.walk():
            if isinstance(fn, func.FuncOp):
                _fold_block(fn.body.block, params, self.max_growth)


def _fold_block(block: Block, params: ParamStore, max_growth: float) -> None:
    known = compile_time_values(block)
    largest = _largest_param_source(block, known, params)
    cache: dict[SSAValue, torch.Tensor] = {}
    for value in _boundary(block, known):
        while isinstance(value.owner, tcp.BroadcastOp):
            value = value.owner.input
        if isinstance(value.owner, (tcp.ParamOp, tcp.ConstantOp)):
            continue
        size, root = largest[value]
        if root is None or numel(value) > size * max_growth:
            continue
        tensor = evaluate_value(value, params, cache).to(torch_dtype(element_of(value)))
        name = params.fresh_name(f"{root}.folded")
        params.add(name, tensor.contiguous())
        param = tcp.ParamOp(name, value.type)
        Rewriter.insert_op(param, InsertPoint.before(value.owner))
        value.replace_all_uses_with(param.result)
        param.result.name_hint = None  # the replaced value's hint would mislabel a parameter


def _boundary(block: Block, known: set[SSAValue]) -> list[SSAValue]:
    """Compile-time values used by run-time ops or returned, in program order."""
    return [v for op in block.ops for v in op.results if v in known and _used_at_run_time(v, known)]


def _used_at_run_time(value: SSAValue, known: set[SSAValue]) -> bool:
    for use in value.uses:
        user = use.operation
        if not user.results or any(r not in known for r in user.results):
            return True
    return False


def _largest_param_source(block: Block, known: set[SSAValue], params: ParamStore) -> dict[SSAValue, tuple[int, str | None]]:
    """For each compile-time value, the element count and name of the largest
    parameter it is computed from (first one on ties)."""
    largest: dict[SSAValue, tuple[int, str | None]] = {}
    for op in block.ops:
        if not op.results or op.results[0] not in known:
            continue
        if isinstance(op, tcp.ParamOp):
            best: tuple[int, str | None] = (numel(op.result), op.param_name)
        else:
            best = (0, None)
            for v in op.operands:
                if largest[v][0] > best[0]:
                    best = largest[v]
        for r in op.results:
            largest[r] = best
    return largest
