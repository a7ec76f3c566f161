"""Runs a program's entry function op by op with the reference rules."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from xdsl.dialects import func
from xdsl.ir import Block, Operation, SSAValue

from dnnc.backends.reference.rules import RULES, Value, dtype_for
from dnnc.errors import DnncError
from dnnc.ir.params import ParamStore
from dnnc.ir.program import Program
from dnnc.ir.types import element_of, shape_of, torch_dtype

COMPUTE_DTYPES: dict[str, torch.dtype | None] = {"float32": torch.float32, "float64": torch.float64, "native": None}


class ReferenceExecutor:
    """Executes one program on the CPU.

    Parameters are converted to the compute precision once, here, not per call.
    Outputs come back in the program's declared dtypes unless ``keep_precision``.
    """

    def __init__(self, program: Program, precision: str = "float32", keep_precision: bool = False):
        if precision not in COMPUTE_DTYPES:
            raise ValueError(f"precision must be one of {', '.join(COMPUTE_DTYPES)}, got {precision!r}")
        self.compute_dtype = COMPUTE_DTYPES[precision]
        self.program = program
        self.keep_precision = keep_precision
        self._frees: dict[Block, dict[int, list[SSAValue]]] = {}  # per block, computed on its first run
        self._params = {
            op.param_name: program.params[op.param_name].to(dtype_for(element_of(op.result), self)) for op in program.param_ops()
        }

    def param(self, name: str) -> Value:
        return self._params[name]

    @torch.no_grad()  # not inference_mode: its outputs are the caller's, to change in place
    def run(self, inputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        entry = self.program.entry
        block = entry.body.block
        args = [x.detach().to("cpu", dtype_for(a.type.element_type, self)) for x, a in zip(inputs, block.args)]
        outputs = self._run(block, args, func.ReturnOp)
        if self.keep_precision:
            return outputs
        return [y.to(torch_dtype(element_of(t))) for y, t in zip(outputs, self.program.output_types)]

    def run_block(self, op: Operation, args: Sequence[Value]) -> list[Value]:
        block = op.regions[0].block
        return self._run(block, list(args), type(block.last_op))

    def _run(self, block: Block, args: list[Value], terminator: type[Operation]) -> list[Value]:
        env: dict[SSAValue, Value] = dict(zip(block.args, args))
        if block not in self._frees:
            self._frees[block] = _last_uses(block)
        last_use = self._frees[block]
        for index, op in enumerate(block.ops):
            operands = [env[v] for v in op.operands]
            if isinstance(op, terminator):
                return operands
            results = execute(op, operands, self)
            env.update(zip(op.results, results))
            for v in last_use.get(index, ()):
                env.pop(v, None)
        raise DnncError(f"block has no {terminator.name}")


def execute(op: Operation, operands: list[Value], env: ReferenceExecutor | _ConstEnv) -> list[Value]:
    """Run one op; results are conformed to their declared shapes and dtypes."""
    fn = RULES.get(type(op))
    if fn is None:
        raise DnncError(f"the reference backend has no rule for {op.name}")
    out = fn(op, operands, env)
    results = out if isinstance(out, list) else [out]
    conformed = []
    for value, result in zip(results, op.results, strict=True):
        dtype = dtype_for(element_of(result), env)
        if tuple(value.shape) != shape_of(result):
            raise DnncError(f"reference rule for {op.name} produced {list(value.shape)}, IR says {shape_of(result)}")
        conformed.append(value if value.dtype == dtype else value.to(dtype))
    return conformed


class _ConstEnv:
    """Environment for evaluating single ops at compile time (parameter folding)."""

    def __init__(self, params: ParamStore, compute_dtype: torch.dtype | None):
        self.params = params
        self.compute_dtype = compute_dtype

    def param(self, name: str) -> Value:
        return self.params[name]

    def run_block(self, op: Operation, args: Sequence[Value]) -> list[Value]:
        raise DnncError(f"{op.name} regions are not evaluated at compile time")


def evaluate_op(op: Operation, operands: list[Value], params: ParamStore, precision: str = "float64") -> list[Value]:
    """Evaluate one op on given operand values, in the given float precision
    (``native``: each value in its own element type)."""
    return execute(op, operands, _ConstEnv(params, COMPUTE_DTYPES[precision]))


def _last_uses(block: Block) -> dict[int, list[SSAValue]]:
    """For each op index, the values whose last use is that op (to free them early)."""
    last: dict[SSAValue, int] = {}
    for index, op in enumerate(block.ops):
        for v in op.operands:
            last[v] = index
    by_index: dict[int, list[SSAValue]] = {}
    for v, index in last.items():
        by_index.setdefault(index, []).append(v)
    return by_index
