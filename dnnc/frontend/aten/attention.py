"""Scaled dot-product attention in every form export produces, as one ``tcp.attention``.

``F.scaled_dot_product_attention`` stays itself through ``decompose`` (so a model
exported on CUDA and on the CPU imports alike); a program decomposed elsewhere
holds the kernel PyTorch dispatched to instead (flash, memory-efficient, cuDNN,
CPU flash, or the overridable fused op). Each takes query ``[..., H, Sq, D]``, key
``[..., Hk, Sk, D]`` and value ``[..., Hk, Sk, Dv]`` whose leading dims broadcast
to the query's, with one key/value head for all (multi-query) or, with
``enable_gqa``, one per group of query heads, an optional boolean or additive mask that
broadcasts to ``[..., Sq, Sk]``, a causal flag and a scale (default ``1/sqrt(D)``).
Only the attention result is computed; logsumexp and the kernels' other outputs
are ``Unavailable``.
"""

from __future__ import annotations

import math
from typing import Any

from xdsl.dialects.builtin import i1
from xdsl.ir import SSAValue

from dnnc.frontend.aten.registry import aten, rule
from dnnc.frontend.emitter import Emitter, Unavailable
from dnnc.ir import tcp
from dnnc.ir.attrs import bool_attr, float_attr
from dnnc.ir.types import element_of, shape_of

SDPA_OPS = [
    aten.scaled_dot_product_attention.default,
    aten._scaled_dot_product_flash_attention.default,
    aten._scaled_dot_product_flash_attention_for_cpu.default,
    aten._scaled_dot_product_efficient_attention.default,
    aten._scaled_dot_product_cudnn_attention.default,
]
if hasattr(aten, "_scaled_dot_product_fused_attention_overrideable"):
    SDPA_OPS.append(aten._scaled_dot_product_fused_attention_overrideable.default)
"""What ``decompose`` keeps, and the kernels a program decomposed elsewhere holds."""


def attention(
    em: Emitter, query: Any, key: Any, value: Any, mask: Any, dropout_p: float, is_causal: bool, scale: Any, gqa: bool
) -> SSAValue:
    """``tcp.attention`` on operands of any rank >= 3, as ``[B, H, S, D]``; the result
    in the shape the exported node has."""
    if dropout_p:
        em.unsupported(f"attention with dropout_p={dropout_p} (dnnc compiles inference: dropout must be 0)")
    q, k, v = (em.value(t) for t in (query, key, value))
    sq, sk = shape_of(q), shape_of(k)
    if len(sq) < 3 or len(sk) != len(sq) or len(shape_of(v)) != len(sq):
        em.unsupported(f"query {list(sq)}, key {list(sk)}, value {list(shape_of(v))}: expected [..., S, D] of one rank >= 3")
    lead = sq[:-2]
    heads, kv_heads = lead[-1], sk[-3]
    batch_dims_fit = all(b in (1, a) for t in (sk, shape_of(v)) for a, b in zip(lead[:-1], t[:-3]))
    heads_fit = kv_heads in (1, heads) or (gqa and heads % kv_heads == 0)
    if not (batch_dims_fit and heads_fit and shape_of(v)[-3] == kv_heads):
        em.unsupported(
            f"query {list(sq)}, key {list(sk)} and value {list(shape_of(v))}: the leading dims must broadcast"
            + ("" if gqa else " (grouped-query attention needs enable_gqa=True)")
        )
    batch = math.prod(lead[:-1])
    q4 = em.reshape(q, (batch, heads, sq[-2], sq[-1]))
    k4, v4 = (
        em.reshape(em.broadcast_to(t, (*lead[:-1], *shape_of(t)[-3:])), (batch, kv_heads, *shape_of(t)[-2:])) for t in (k, v)
    )
    masks = [] if mask is None else [_mask(em, mask, lead, sq[-2], sk[-2], element_of(q))]
    operands = [q4, k4, v4, masks]
    if scale is None:
        scale = 1.0 / math.sqrt(sq[-1])
    out = em.build(tcp.AttentionOp, operands, scale=float_attr(scale), causal=bool_attr(bool(is_causal)))
    return em.reshape(out, (*lead, sq[-2], shape_of(v)[-1]))


def _mask(em: Emitter, mask: Any, lead: tuple[int, ...], sq: int, sk: int, element: Any) -> SSAValue:
    """The mask broadcast to ``[B, H, Sq, Sk]`` (leading dims merged into B)."""
    m = em.value(mask)
    if element_of(m) not in (i1, element):
        m = em.cast(m, element)  # an additive mask in another float type adds in the query's
    full = (*lead, sq, sk)
    if len(shape_of(m)) > len(full):
        em.unsupported(f"mask {list(shape_of(m))} has more dims than the scores {list(full)}")
    m = em.broadcast_to(m, full)
    return em.reshape(m, (math.prod(lead[:-1]), lead[-1], sq, sk))


@rule(aten.scaled_dot_product_attention.default)
def sdpa(
    em: Emitter,
    query: Any,
    key: Any,
    value: Any,
    attn_mask: Any = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: Any = None,
    enable_gqa: bool = False,
) -> SSAValue:
    return attention(em, query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def _with_unavailable(result: SSAValue, outputs: int) -> tuple[object, ...]:
    return (result, *(Unavailable("an attention kernel's auxiliary output") for _ in range(outputs - 1)))


@rule(aten._scaled_dot_product_flash_attention.default)
def flash(
    em: Emitter, query: Any, key: Any, value: Any, dropout_p: float = 0.0, is_causal: bool = False, scale: Any = None, **_: Any
) -> tuple[object, ...]:
    return _with_unavailable(attention(em, query, key, value, None, dropout_p, is_causal, scale, False), 9)


@rule(aten._scaled_dot_product_flash_attention_for_cpu.default)
def flash_cpu(
    em: Emitter,
    query: Any,
    key: Any,
    value: Any,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    attn_mask: Any = None,
    scale: Any = None,
) -> tuple[object, ...]:
    return _with_unavailable(attention(em, query, key, value, attn_mask, dropout_p, is_causal, scale, False), 2)


@rule(aten._scaled_dot_product_efficient_attention.default)
def efficient(
    em: Emitter,
    query: Any,
    key: Any,
    value: Any,
    attn_bias: Any,
    compute_log_sumexp: bool,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: Any = None,
) -> tuple[object, ...]:
    return _with_unavailable(attention(em, query, key, value, attn_bias, dropout_p, is_causal, scale, False), 4)


def _fused(
    em: Emitter,
    query: Any,
    key: Any,
    value: Any,
    attn_bias: Any = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: Any = None,
) -> tuple[object, ...]:
    return _with_unavailable(attention(em, query, key, value, attn_bias, dropout_p, is_causal, scale, False), 9)


@rule(aten._scaled_dot_product_cudnn_attention.default)
def cudnn(
    em: Emitter,
    query: Any,
    key: Any,
    value: Any,
    attn_bias: Any,
    compute_log_sumexp: bool,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    return_debug_mask: bool = False,
    scale: Any = None,
) -> tuple[object, ...]:
    return _fused(em, query, key, value, attn_bias, dropout_p, is_causal, scale)


if hasattr(aten, "_scaled_dot_product_fused_attention_overrideable"):

    @rule(aten._scaled_dot_product_fused_attention_overrideable.default)
    def overrideable(
        em: Emitter,
        query: Any,
        key: Any,
        value: Any,
        attn_bias: Any = None,
        dropout_p: float = 0.0,
        is_causal: bool = False,
        return_debug_mask: bool = False,
        scale: Any = None,
    ) -> tuple[object, ...]:
        return _fused(em, query, key, value, attn_bias, dropout_p, is_causal, scale)
