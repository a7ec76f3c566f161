"""Reference semantics, one rule per tcp op, in one table.

A rule gets the op, its operand values and the ``Env`` and returns the result
value(s). Floating values are held in the env's compute dtype (float32 or float64)
whatever their tcp element type, so the reference is the exact answer a lower
precision backend is compared against. The one exception is ``tcp.cast``: a cast
to a float type rounds to that type, because the program asked for it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import torch
import torch.nn.functional as F
from xdsl.ir import Attribute, Operation

from dnnc.ir import extern, tcp
from dnnc.ir.attrs import ints, scalar
from dnnc.ir.types import is_float, shape_of, torch_dtype
from dnnc.rules import RuleTable

Value = torch.Tensor


class Env(Protocol):
    compute_dtype: torch.dtype | None  # None: every value in its own element type

    def param(self, name: str) -> Value: ...

    def run_block(self, op: Operation, args: Sequence[Value]) -> list[Value]:
        """Run the single block of a region op (a group or a cudnn.graph) on ``args``."""
        ...


Rule = Callable[[Operation, list[Value], Env], Value | list[Value]]
RULES: RuleTable[type[Operation], Rule] = RuleTable("reference")


def dtype_for(element: Attribute, env: Env) -> torch.dtype:
    """The torch dtype a value of this element type is held in."""
    if is_float(element) and env.compute_dtype is not None:
        return env.compute_dtype
    return torch_dtype(element)


rule = RULES.rule


def simple(op_type: type[Operation], fn: Callable[..., Value]) -> None:
    RULES[op_type] = lambda op, args, env: fn(*args)


# Sources -----------------------------------------------------------------------------


@rule(tcp.ParamOp)
def _param(op: tcp.ParamOp, args: list[Value], env: Env) -> Value:
    return env.param(op.param_name)


@rule(tcp.ConstantOp)
def _constant(op: tcp.ConstantOp, args: list[Value], env: Env) -> Value:
    """The value as the element type stores it (0.1 in an f16 constant is f16's 0.1)."""
    t = op.result.type
    stored = torch.full(shape_of(t), op.scalar, dtype=torch_dtype(t.element_type))
    return stored.to(dtype_for(t.element_type, env))


@rule(tcp.IotaOp)
def _iota(op: tcp.IotaOp, args: list[Value], env: Env) -> Value:
    t = op.result.type
    (n,) = shape_of(t)
    values = scalar(op.start) + scalar(op.step) * torch.arange(n, dtype=torch.int64)
    return values.to(dtype_for(t.element_type, env))


# Elementwise --------------------------------------------------------------------------

for _op, _fn in {
    tcp.ExpOp: torch.exp,
    tcp.LogOp: torch.log,
    tcp.TanhOp: torch.tanh,
    tcp.SigmoidOp: torch.sigmoid,
    tcp.SiluOp: F.silu,
    tcp.SqrtOp: torch.sqrt,
    tcp.RsqrtOp: torch.rsqrt,
    tcp.ErfOp: torch.erf,
    tcp.NegOp: torch.neg,
    tcp.AbsOp: torch.abs,
    tcp.LogicalNotOp: torch.logical_not,
    tcp.AddOp: torch.add,
    tcp.SubOp: torch.sub,
    tcp.MulOp: torch.mul,
    tcp.DivOp: torch.div,
    tcp.MaximumOp: torch.maximum,
    tcp.MinimumOp: torch.minimum,
    tcp.PowOp: torch.pow,
    tcp.LogicalAndOp: torch.logical_and,
    tcp.LogicalOrOp: torch.logical_or,
    tcp.SelectOp: torch.where,
    tcp.MatmulOp: torch.mm,
    tcp.BatchMatmulOp: torch.bmm,
    tcp.SinOp: torch.sin,
    tcp.CosOp: torch.cos,
    tcp.TanOp: torch.tan,
    tcp.Log1pOp: torch.log1p,
    tcp.Expm1Op: torch.expm1,
    tcp.FloorOp: torch.floor,
    tcp.CeilOp: torch.ceil,
    tcp.RoundOp: torch.round,
    tcp.TruncOp: torch.trunc,
    tcp.SignOp: torch.sign,
    tcp.BitwiseNotOp: torch.bitwise_not,
    tcp.FloorDivOp: torch.floor_divide,
    tcp.RemainderOp: torch.remainder,
    tcp.FmodOp: torch.fmod,
    tcp.BitwiseAndOp: torch.bitwise_and,
    tcp.BitwiseOrOp: torch.bitwise_or,
    tcp.BitwiseXorOp: torch.bitwise_xor,
    tcp.ShiftLeftOp: torch.bitwise_left_shift,
    tcp.ShiftRightOp: torch.bitwise_right_shift,
}.items():
    simple(_op, _fn)

_COMPARE = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge}


@rule(tcp.GeluOp)
def _gelu(op: tcp.GeluOp, args: list[Value], env: Env) -> Value:
    return F.gelu(args[0], approximate=op.approximate.data)


@rule(tcp.ClampOp)
def _clamp(op: tcp.ClampOp, args: list[Value], env: Env) -> Value:
    (x,) = args
    convert = float if x.is_floating_point() else int
    lo = None if op.min is None else convert(op.min.value.data)
    hi = None if op.max is None else convert(op.max.value.data)
    return torch.clamp(x, lo, hi)


@rule(tcp.CastOp)
def _cast(op: tcp.CastOp, args: list[Value], env: Env) -> Value:
    """A cast is where the program asks for a precision: round to it, then hold the
    value in the compute dtype like every other float."""
    target = op.result.type.element_type
    x = args[0]
    if is_float(target):
        x = x.to(torch_dtype(target))
    return x.to(dtype_for(target, env))


@rule(tcp.CompareOp)
def _compare(op: tcp.CompareOp, args: list[Value], env: Env) -> Value:
    return _COMPARE[op.predicate.data](*args)


# Shapes -------------------------------------------------------------------------------


@rule(tcp.ReshapeOp)
def _reshape(op: tcp.ReshapeOp, args: list[Value], env: Env) -> Value:
    return args[0].reshape(shape_of(op.result))


@rule(tcp.BroadcastOp)
def _broadcast(op: tcp.BroadcastOp, args: list[Value], env: Env) -> Value:
    return args[0].expand(shape_of(op.result))


@rule(tcp.TransposeOp)
def _transpose(op: tcp.TransposeOp, args: list[Value], env: Env) -> Value:
    return args[0].permute(ints(op.permutation))


@rule(tcp.ConcatOp)
def _concat(op: tcp.ConcatOp, args: list[Value], env: Env) -> Value:
    return torch.cat(args, dim=scalar(op.axis))


@rule(tcp.SliceOp)
def _slice(op: tcp.SliceOp, args: list[Value], env: Env) -> Value:
    index = tuple(slice(b, e, s) for b, e, s in zip(ints(op.starts), ints(op.limits), ints(op.strides)))
    return args[0][index]


def _torch_pad_order(low: Sequence[int], high: Sequence[int]) -> list[int]:
    """F.pad wants (last_lo, last_hi, second_last_lo, ...)."""
    return [p for lo, hi in zip(reversed(low), reversed(high)) for p in (lo, hi)]


@rule(tcp.PadOp)
def _pad(op: tcp.PadOp, args: list[Value], env: Env) -> Value:
    return F.pad(args[0], _torch_pad_order(ints(op.low), ints(op.high)), value=scalar(op.value))


@rule(tcp.GatherOp)
def _gather(op: tcp.GatherOp, args: list[Value], env: Env) -> Value:
    x, idx = args
    axis = scalar(op.axis)
    n = x.shape[axis]
    if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= n):
        raise IndexError(f"tcp.gather: index out of range [0, {n}) (min {int(idx.min())}, max {int(idx.max())})")
    return torch.index_select(x, axis, idx.reshape(-1).long()).reshape(shape_of(op.result))


def _check_indices(op: str, idx: Value, n: int) -> None:
    if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= n):
        raise IndexError(f"{op}: index out of range [0, {n}) (min {int(idx.min())}, max {int(idx.max())})")


@rule(tcp.TakeAlongOp)
def _take_along(op: tcp.TakeAlongOp, args: list[Value], env: Env) -> Value:
    x, idx = args
    axis = scalar(op.axis)
    _check_indices(op.name, idx, x.shape[axis])
    return torch.gather(x, axis, idx.long())


@rule(tcp.ScatterOp)
def _scatter(op: tcp.ScatterOp, args: list[Value], env: Env) -> Value:
    """In index order, so the last write along the axis wins (torch's CPU kernel's order
    is not promised)."""
    x, idx, upd = args
    axis = scalar(op.axis)
    _check_indices(op.name, idx, x.shape[axis])
    if op.mode.data == "add":
        return x.scatter_add(axis, idx.long(), upd)
    out = x.clone()
    for j in range(idx.shape[axis]):  # each slice along the axis writes after the previous ones
        step = [slice(None)] * idx.dim()
        step[axis] = slice(j, j + 1)
        out.scatter_(axis, idx[tuple(step)].long(), upd[tuple(step)])
    return out


# Neural-network ops -------------------------------------------------------------------


def _spatial_pad(padding: Sequence[int]) -> list[int]:
    top, bottom, left, right = padding
    return [left, right, top, bottom]


@rule(tcp.Conv2dOp)
def _conv2d(op: tcp.Conv2dOp, args: list[Value], env: Env) -> Value:
    x, w = args
    pad = ints(op.padding)
    if pad[0] == pad[1] and pad[2] == pad[3]:
        padding: tuple[int, int] = (pad[0], pad[2])
    else:
        x, padding = F.pad(x, _spatial_pad(pad)), (0, 0)
    return F.conv2d(x, w, None, ints(op.stride), padding, ints(op.dilation), scalar(op.groups))


def _crop_to(y: Value, op: Operation) -> Value:
    """Explicit padding can let ceil_mode produce a trailing window PyTorch's rule drops."""
    ho, wo = shape_of(op.results[0])[2:]
    return y[:, :, :ho, :wo]


@rule(tcp.MaxPool2dOp)
def _max_pool2d(op: tcp.MaxPool2dOp, args: list[Value], env: Env) -> Value:
    (x,) = args
    xp = F.pad(x, _spatial_pad(ints(op.padding)), value=float("-inf"))
    y = F.max_pool2d(xp, ints(op.kernel), ints(op.stride), 0, ints(op.dilation), bool(scalar(op.ceil_mode)))
    return _crop_to(y, op)


@rule(tcp.AvgPool2dOp)
def _avg_pool2d(op: tcp.AvgPool2dOp, args: list[Value], env: Env) -> Value:
    (x,) = args
    pad = _spatial_pad(ints(op.padding))
    kernel, stride, ceil = ints(op.kernel), ints(op.stride), bool(scalar(op.ceil_mode))

    def window_sum(t: Value) -> Value:
        return F.avg_pool2d(t, kernel, stride, 0, ceil, count_include_pad=False, divisor_override=1)

    # The divisor counts the window's elements inside the padded input
    # (count_include_pad) or inside the real input only.
    mask = torch.ones_like(x[:1, :1])
    mask = F.pad(mask, pad, value=1.0 if scalar(op.count_include_pad) else 0.0)
    y = window_sum(F.pad(x, pad)) / window_sum(mask)
    return _crop_to(y, op)


@rule(tcp.SoftmaxOp)
def _softmax(op: tcp.SoftmaxOp, args: list[Value], env: Env) -> Value:
    return torch.softmax(args[0], dim=scalar(op.axis))


@rule(tcp.LayerNormOp)
def _layer_norm(op: tcp.LayerNormOp, args: list[Value], env: Env) -> Value:
    x, w, b = args
    return F.layer_norm(x, x.shape[scalar(op.axis) :], w, b, scalar(op.epsilon))


@rule(tcp.RmsNormOp)
def _rms_norm(op: tcp.RmsNormOp, args: list[Value], env: Env) -> Value:
    x, w = args
    dims = tuple(range(scalar(op.axis), x.dim()))
    return x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + scalar(op.epsilon)) * w


@rule(tcp.BatchNormOp)
def _batch_norm(op: tcp.BatchNormOp, args: list[Value], env: Env) -> Value:
    x, scale, offset, mean, var = args
    return F.batch_norm(x, mean, var, scale, offset, False, 0.0, scalar(op.epsilon))


# Reductions ---------------------------------------------------------------------------


def _reduction(fn: Callable[..., Value]) -> Rule:
    def run(op: Operation, args: list[Value], env: Env) -> Value:
        assert isinstance(op, tcp.ReduceOp)
        return fn(args[0], dim=ints(op.axes), keepdim=bool(scalar(op.keepdim)))

    return run


def _amax(x: Value, dim: Sequence[int], keepdim: bool) -> Value:
    if x.dtype == torch.bool:
        return torch.amax(x.to(torch.uint8), dim=dim, keepdim=keepdim).bool()
    return torch.amax(x, dim=dim, keepdim=keepdim)


RULES[tcp.ReduceSumOp] = _reduction(torch.sum)
RULES[tcp.ReduceMaxOp] = _reduction(_amax)
RULES[tcp.ReduceMeanOp] = _reduction(torch.mean)


# Regions ------------------------------------------------------------------------------


@rule(tcp.IsolatedGroupOp)
def _isolated_group(op: tcp.IsolatedGroupOp, args: list[Value], env: Env) -> list[Value]:
    return env.run_block(op, args)


# User kernels -------------------------------------------------------------------------


@rule(extern.DispatchOp)
def _dispatch(op: extern.DispatchOp, args: list[Value], env: Env) -> list[Value]:
    """A user kernel's meaning is its reference implementation."""
    from dnnc.kernels.reference import run_reference

    return run_reference(op.declaration(), args, op.constant_values())


# Attention ----------------------------------------------------------------------------


@rule(tcp.AttentionOp)
def _attention(op: tcp.AttentionOp, args: list[Value], env: Env) -> Value:
    q, k, v, *mask = args
    groups = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
    scores = q @ k.transpose(-1, -2) * float(scalar(op.scale))
    excluded = torch.zeros(scores.shape, dtype=torch.bool)
    if mask:
        if mask[0].dtype == torch.bool:
            excluded |= ~mask[0]
        else:
            scores = scores + mask[0]
    if scalar(op.causal):
        sq, sk = scores.shape[-2:]
        excluded |= torch.ones(sq, sk, dtype=torch.bool).triu(1)
    scores = scores.masked_fill(excluded, float("-inf"))
    # A row with every key excluded gives zeros, not NaN (PyTorch's rule).
    empty = torch.isneginf(scores).all(dim=-1, keepdim=True)
    weights = torch.softmax(scores, dim=-1).masked_fill(empty, 0.0)
    return weights @ v


# Selection ----------------------------------------------------------------------------


@rule(tcp.CumsumOp)
def _cumsum(op: tcp.CumsumOp, args: list[Value], env: Env) -> Value:
    return torch.cumsum(args[0], dim=scalar(op.axis))


def _orderable(x: Value) -> Value:
    return x.to(torch.uint8) if x.dtype == torch.bool else x


@rule(tcp.ArgmaxOp, tcp.ArgminOp)
def _arg_extreme(op: Operation, args: list[Value], env: Env) -> Value:
    assert isinstance(op, tcp.ArgmaxOp | tcp.ArgminOp)
    pick = torch.argmax if op.LARGEST else torch.argmin
    return pick(_orderable(args[0]), dim=scalar(op.axis), keepdim=bool(scalar(op.keepdim)))


@rule(tcp.TopkOp)
def _topk(op: tcp.TopkOp, args: list[Value], env: Env) -> list[Value]:
    """A stable sort (ties in index order, NaN above every number) cut to k."""
    x = args[0]
    axis, k = scalar(op.axis), scalar(op.k)
    order = torch.sort(_orderable(x), dim=axis, descending=bool(scalar(op.largest)), stable=True).indices
    indices = order.narrow(axis, 0, k)
    return [torch.gather(x, axis, indices), indices]
