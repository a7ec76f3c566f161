"""cudnn-attention: outline scaled dot-product attention for ``cudnn.sdpa``.

Takes ``tcp.attention`` (what PyTorch's ``scaled_dot_product_attention`` imports as;
with ``knobs.cudnn_attention``) where cuDNN's fused attention can: fp16/bf16, no mask (causal is fine), as many key
and value heads as query heads, head dims that are multiples of 8 up to 128; the
rest stays for code generation. It also matches the attention core as programs
written out in steps spell it in tcp::

    s = batch_matmul(q, kT)            [BH, Sq, Skv]
    (s = s * c | s / c)                c a splat constant: the softmax scale (none: 1)
    (s = select(causal_mask, -inf, s)) the mask a compile-time upper triangle
    p = softmax(s, last axis)
    o = batch_matmul(p, v)             [BH, Sq, Dv]

with reshapes (``[BH, ...]`` to ``[B, H, ...]`` and back) anywhere between the steps

and outlines it as ``tcp.isolated_group {backend = "cudnn", kind = "sdpa" |
"sdpa_causal"}`` whose body is those ops unchanged, so it means what it meant;
``lower-cudnn`` turns it into one ``cudnn.sdpa`` node. It needs the mask's values
(hence a pass with parameters) and runs before ``cudnn-group``, which would
otherwise take the two batch matmuls one by one. cuDNN's fused attention takes
fp16/bf16 with head dims that are multiples of 8, up to 128 here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, bf16, f16
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from dnnc.backends.interface import GROUP_BACKEND_ATTR, GROUP_KIND_ATTR
from dnnc.ir import tcp
from dnnc.ir.analysis import has_one_use
from dnnc.ir.attrs import float_attr, i64_array, scalar
from dnnc.ir.outline import capture_transposed, outline
from dnnc.ir.params import ParamStore
from dnnc.ir.rewriting import ParamPass
from dnnc.ir.types import element_of, shape_of

SCALE_ATTR = "scale"

MIN_KEYS_WRITTEN_OUT = 512
"""Attention written out in steps goes to cuDNN's fused SDPA from this many keys on.
A BERT layer (batch 8, 12 heads of 64) on an H200 ran 0.244 -> 0.186 ms at 512 keys
with cuDNN's kernel, and 0.068 -> 0.072 ms (bound calls) at 128, where the products
and the softmax as their own kernels are quicker than cuDNN's fused kernel; lengths
in between were not measured and stay unfused (BENCHMARKS.md)."""


@dataclass(frozen=True)
class CudnnAttention(ParamPass):
    name = "cudnn-attention"

    @property
    def whole_ops(self) -> bool:
        """Whether ``tcp.attention`` goes to cuDNN too (``knobs.cudnn_attention``): dnnc's
        Triton attention kernel runs it otherwise, faster than cuDNN's at some shapes
        and slower at others (BENCHMARKS.md). Attention written out in steps goes from
        ``MIN_KEYS_WRITTEN_OUT`` keys on (at any length with the knob on): the
        alternative is its products and softmax as separate kernels."""
        from dnnc import knobs

        return knobs.get().cudnn_attention

    def apply_with_params(self, ctx: Context, op: ModuleOp, params: ParamStore) -> None:
        for fn in op.walk():
            if isinstance(fn, func.FuncOp):
                for root in list(fn.body.block.ops):
                    if isinstance(root, tcp.AttentionOp) and self.whole_ops and cudnn_takes(root):
                        kind = "sdpa_causal" if scalar(root.causal) else "sdpa"
                        group = outline([root], [root.result], {GROUP_BACKEND_ATTR: "cudnn", GROUP_KIND_ATTR: kind})
                        group.attributes[SCALE_ATTR] = root.scale
                    elif isinstance(root, tcp.BatchMatmulOp) and root.parent is not None:
                        found = match_attention(root, params, 0 if self.whole_ops else MIN_KEYS_WRITTEN_OUT)
                        if found is not None:
                            members, scale, causal = found
                            group = outline(
                                members,
                                [members[-1].results[0]],
                                {GROUP_BACKEND_ATTR: "cudnn", GROUP_KIND_ATTR: "sdpa_causal" if causal else "sdpa"},
                            )
                            group.attributes[SCALE_ATTR] = float_attr(scale)
                            _keys_row_major(group)


def cudnn_takes(op: tcp.AttentionOp) -> bool:
    """Whether cuDNN's fused attention computes this ``tcp.attention``."""
    _, h, _, d = shape_of(op.query)
    hk, _, dv = shape_of(op.value)[1:]
    fits = all(n % 8 == 0 and n <= 128 for n in (d, dv))
    return element_of(op.result) in (f16, bf16) and not op.has_mask and h == hk and fits


def _keys_row_major(group: tcp.IsolatedGroupOp) -> None:
    """cuDNN wants K with the head dim contiguous; the scores read kT ``[BH, D, S]``.
    Give the group ``k = transpose(kT)`` instead (a transpose outside, which later
    passes may cancel against the one that made kT), and transpose back inside."""
    block = group.body.block
    inner = next(op for op in block.ops if isinstance(op, tcp.BatchMatmulOp))
    kt = inner.operands[1]
    if kt not in block.args:
        return
    index = block.args.index(kt)
    outside = tcp.TransposeOp.make([group.operands[index]], {"permutation": i64_array([0, 2, 1])})
    Rewriter.insert_op(outside, InsertPoint.before(group))
    capture_transposed(group, index, outside.result, (0, 2, 1))


def _single_user(value: SSAValue) -> Operation | None:
    return next(iter(value.uses)).operation if has_one_use(value) else None


def _past_reshapes(value: SSAValue, members: list[Operation]) -> tuple[SSAValue, Operation | None]:
    """Follow ``value``'s single user through reshapes (added to ``members``): the last
    value reached and its single user."""
    user = _single_user(value)
    while isinstance(user, tcp.ReshapeOp):
        members.append(user)
        value = user.result
        user = _single_user(value)
    return value, user


def _splat(value: SSAValue) -> float | None:
    owner = value.owner
    while isinstance(owner, tcp.BroadcastOp):
        owner = owner.input.owner
    return float(owner.scalar) if isinstance(owner, tcp.ConstantOp) else None


def _is_causal_mask(value: SSAValue, sq: int, skv: int, params: ParamStore) -> bool:
    """True where the key comes after the query (those scores are dropped)."""
    owner = value.owner
    while isinstance(owner, tcp.BroadcastOp):
        owner = owner.input.owner
    if not isinstance(owner, tcp.ParamOp) or owner.param_name not in params:
        return False
    mask = params[owner.param_name]
    if mask.shape[-2:] != (sq, skv) or mask.dtype != torch.bool:
        return False
    expected = torch.ones(sq, skv, dtype=torch.bool).triu(1)
    return bool((mask.reshape(-1, sq, skv) == expected).all())


def match_attention(
    root: tcp.BatchMatmulOp, params: ParamStore, min_keys: int = MIN_KEYS_WRITTEN_OUT
) -> tuple[list[Operation], float, bool] | None:
    if element_of(root.results[0]) not in (f16, bf16):
        return None
    bh, sq, d = shape_of(root.operands[0])
    skv = shape_of(root.operands[1])[2]
    if d % 8 or d > 128 or skv < min_keys:
        return None
    members: list[Operation] = [root]
    current, user = _past_reshapes(root.results[0], members)
    scale: float | None = 1.0  # scores straight into the softmax: unscaled
    if isinstance(user, tcp.MulOp):
        scale = _splat(user.operands[1] if user.operands[0] is current else user.operands[0])
    elif isinstance(user, tcp.DivOp) and user.operands[0] is current:
        divisor = _splat(user.operands[1])
        scale = None if divisor is None or divisor == 0 else 1.0 / divisor
    if isinstance(user, (tcp.MulOp, tcp.DivOp)):
        if scale is None or not math.isfinite(scale):
            return None
        members.append(user)
        current, user = _past_reshapes(user.result, members)
    causal = False
    if isinstance(user, tcp.SelectOp) and user.on_false is current:
        fill = _splat(user.on_true)
        if fill != -math.inf or not _is_causal_mask(user.cond, sq, skv, params):
            return None
        members.append(user)
        causal = True
        current, user = _past_reshapes(user.result, members)
    if not isinstance(user, tcp.SoftmaxOp) or int(scalar(user.axis)) != len(shape_of(current)) - 1:
        return None
    members.append(user)
    current, user = _past_reshapes(user.result, members)
    if not isinstance(user, tcp.BatchMatmulOp) or user.operands[0] is not current or shape_of(current) != (bh, sq, skv):
        return None
    dv = shape_of(user.operands[1])[2]
    if dv % 8 or dv > 128:
        return None
    members.append(user)
    return members, scale, causal
