"""Which tcp subgraphs a cuDNN graph can take: roots with a check, then an epilogue.

A pattern starts at a root op (convolution, matmul, layer norm) that passes its
check, then absorbs the chain of elementwise ops that consume its result, one op
at a time, while each intermediate has no other user. Ops *before* the root are
never absorbed: a pointwise prologue has no fp16 engine on Hopper (CUDNN_NOTES),
so such ops belong to their own producer's epilogue instead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from dnnc.ir import tcp
from dnnc.ir.attrs import scalar
from dnnc.ir.types import FLOAT_TYPES, element_of, shape_of

log = logging.getLogger("dnnc.cudnn")

Check = Callable[[Operation], str | None]
"""Returns None when cuDNN can take the root, else the reason it cannot."""


def _float_types(op: Operation) -> str | None:
    if element_of(op.results[0]) not in FLOAT_TYPES:
        return f"{op.name} on {element_of(op.results[0])} is not a cuDNN float type"
    return None


def _check_conv(op: Operation) -> str | None:
    assert isinstance(op, tcp.Conv2dOp)
    if reason := _float_types(op):
        return reason
    _, c, h, w = shape_of(op.input)
    groups = int(scalar(op.groups))
    if groups not in (1, c):
        return f"grouped convolution (groups = {groups} of {c} channels) is left to codegen"
    if (h, w) == (1, 1):
        # A squeeze-excite convolution is a small matrix product; on an H100 its cuDNN
        # graphs (channels not multiples of 8, 1x1 NHWC descriptors) gave wrong results.
        return "a convolution of a 1x1 map is a small matrix product, left to codegen"
    return None


def _check_matmul(op: Operation) -> str | None:
    return _float_types(op)


def _check_layer_norm(op: Operation) -> str | None:
    assert isinstance(op, tcp.LayerNormOp)
    if reason := _float_types(op):
        return reason
    if int(scalar(op.axis)) != len(shape_of(op.input)) - 1:
        return "cuDNN layernorm here normalizes the last dim only"
    return None


@dataclass(frozen=True)
class Pattern:
    kind: str
    root: type[Operation]
    check: Check
    epilogue: bool = True
    """Whether elementwise consumers may join the graph."""


PATTERNS: tuple[Pattern, ...] = (
    Pattern("conv", tcp.Conv2dOp, _check_conv),
    Pattern("matmul", tcp.MatmulOp, _check_matmul),
    Pattern("matmul", tcp.BatchMatmulOp, _check_matmul),
    Pattern("layernorm", tcp.LayerNormOp, _check_layer_norm, epilogue=False),
)

BINARY_MODES: dict[type[Operation], str] = {
    tcp.AddOp: "add",
    tcp.SubOp: "sub",
    tcp.MulOp: "mul",
    tcp.DivOp: "div",
    tcp.MaximumOp: "max",
    tcp.MinimumOp: "min",
}

UNARY_MODES: dict[type[Operation], str] = {
    tcp.SigmoidOp: "sigmoid",
    tcp.TanhOp: "tanh",
    tcp.SiluOp: "swish",
    tcp.ExpOp: "exp",
    tcp.LogOp: "log",
    tcp.SqrtOp: "sqrt",
    tcp.RsqrtOp: "rsqrt",
    tcp.NegOp: "neg",
    tcp.AbsOp: "abs",
    tcp.ErfOp: "erf",
}


def unary_mode(op: Operation) -> str | None:
    """The cuDNN pointwise mode of a one-operand tcp op, if it has one."""
    if isinstance(op, tcp.GeluOp):
        return "gelu" if op.approximate.data == "none" else "gelu_approx_tanh"
    if isinstance(op, tcp.ClampOp):
        lo = None if op.min is None else float(scalar(op.min))
        return "relu" if lo == 0.0 else None  # relu with an optional upper clip (relu6)
    return UNARY_MODES.get(type(op))


@dataclass(frozen=True)
class Step:
    """One epilogue op and how its other operand enters the graph."""

    op: Operation
    label: str
    side: SSAValue | None = None
    """The other operand of a binary op (captured by the group)."""
    absorbed_broadcast: Operation | None = None
    """A ``tcp.broadcast`` feeding ``side`` that moves into the group."""


def epilogue_step(user: Operation, current: SSAValue) -> Step | None:
    """How ``user`` (the single user of ``current``) joins the graph, or None."""
    if len(user.results) != 1 or element_of(user.results[0]) != element_of(current):
        return None  # casts end the graph: its outputs have one element type
    mode = unary_mode(user)
    if mode is not None:
        return Step(user, mode)
    if type(user) not in BINARY_MODES:
        return None
    lhs, rhs = user.operands
    if lhs is current and rhs is current:
        return Step(user, BINARY_MODES[type(user)])
    other = rhs if lhs is current else lhs
    owner = other.owner
    if isinstance(owner, tcp.BroadcastOp) and _per_sample(owner):
        return None
    if isinstance(owner, tcp.BroadcastOp):
        label = "bias" if BINARY_MODES[type(user)] == "add" else BINARY_MODES[type(user)]
        return Step(user, label, other, owner)
    label = "add" if BINARY_MODES[type(user)] == "add" else BINARY_MODES[type(user)]
    return Step(user, label, other)


def _per_sample(broadcast: tcp.BroadcastOp) -> bool:
    """A side operand broadcast over some dims but not over the batch (a UNet's
    per-sample time embedding ``[N, C, 1, 1]``): cuDNN graphs reading one gave
    non-finite results on an H100, so the graph ends before it (codegen adds it)."""
    src, dst = shape_of(broadcast.input), shape_of(broadcast.result)
    return len(src) > 1 and src[0] == dst[0] > 1 and src != dst


def pattern_for(op: Operation) -> Pattern | None:
    for p in PATTERNS:
        if isinstance(op, p.root):
            return p
    return None


def accepted_pattern(root: Operation, who: str) -> Pattern | None:
    """The pattern that takes ``root`` if its check passes; a refusal is logged at
    debug level with the reason, naming ``who`` asked."""
    pattern = pattern_for(root)
    if pattern is None:
        return None
    if (reason := pattern.check(root)) is not None:
        log.debug("%s: %s stays out of cuDNN: %s", who, root.name, reason)
        return None
    return pattern


def group_label(kind: str, steps: list[Step]) -> str:
    return "_".join([kind, *(s.label for s in steps)])


def clamp_bounds(op: tcp.ClampOp) -> tuple[float | None, float | None]:
    lo = None if op.min is None else float(scalar(op.min))
    hi = None if op.max is None else float(scalar(op.max))
    return lo, hi
