"""fold-attention-masks: an attention mask known at compile time that only says
"causal" or "attend to everything" becomes the op's ``causal`` flag, or nothing.

Hugging Face decoders build their causal mask from ``arange`` comparisons, and
encoders an all-keep padding mask when no ``attention_mask`` is passed: both export
as compile-time ops feeding ``tcp.attention``'s mask. A kernel reads such a mask
per score (``B x H x Sq x Sk`` elements, or their index arithmetic), and a causal
kernel that knows it is causal skips the key blocks above the diagonal, about half
the work. The mask is evaluated once here (before its broadcast, so a
``[1, 1, S, S]`` mask costs ``S^2`` elements); a mask with any other pattern, or one
that depends on an input, is left as it is.

Float masks keep a score where they hold 0 and exclude it where they hold ``-inf``
or a value at or below ``-1e30`` (``torch.finfo(dtype).min``, which PyTorch models
use in place of ``-inf``); a causal mask leaves every query row at least one key,
so the two give the same softmax.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.rewriter import Rewriter

from dnnc.ir import tcp
from dnnc.ir.analysis import is_compile_time
from dnnc.ir.attrs import bool_attr, scalar
from dnnc.ir.params import ParamStore
from dnnc.ir.rewriting import ParamPass
from dnnc.ir.types import numel, shape_of
from dnnc.passes.compile_time import evaluate_value

EXCLUDED_AT_OR_BELOW = -1e30
"""A float mask value this low excludes its key (as ``-inf`` does)."""

MAX_EVALUATED = 1 << 26
"""Largest mask (elements, before its broadcast) evaluated to look for the pattern."""


@dataclass(frozen=True)
class FoldAttentionMasks(ParamPass):
    name = "fold-attention-masks"

    def apply_with_params(self, ctx: Context, op: ModuleOp, params: ParamStore) -> None:
        patterns: dict[SSAValue, str | None] = {}  # every layer of a decoder reads the same mask: evaluated once
        for fn in op.walk():
            if not isinstance(fn, func.FuncOp):
                continue
            for attention in [o for o in fn.body.walk() if isinstance(o, tcp.AttentionOp) and o.has_mask]:
                mask = attention.mask[0]
                if mask not in patterns:
                    patterns[mask] = _pattern(mask, params)
                pattern = patterns[mask]
                if pattern == "all":
                    _drop_mask(attention, causal=bool(scalar(attention.causal)))
                elif pattern == "causal":
                    _drop_mask(attention, causal=True)


def _pattern(mask: SSAValue, params: ParamStore) -> str | None:
    """``all`` (every key kept), ``causal`` (key ``j`` kept for query ``i`` iff
    ``j <= i``, in every batch entry and head), or None (anything else, or unknown)."""
    source = mask
    while isinstance(source.owner, tcp.BroadcastOp):
        source = source.owner.input
    if not is_compile_time(source) or numel(source) > MAX_EVALUATED:
        return None
    value = evaluate_value(source, params)
    if value.dtype == torch.bool:
        keep = value
    else:
        kept, excluded = value == 0, value <= EXCLUDED_AT_OR_BELOW
        if not bool((kept | excluded).all()):
            return None  # a bias (ALiBi, relative positions): not a pattern
        keep = kept
    if bool(keep.all()):
        return "all"
    sq, sk = shape_of(mask)[-2:]
    causal = torch.ones(sq, sk, dtype=torch.bool).tril()
    rows, cols = keep.shape[-2:]
    if (rows, cols) != (sq, sk):  # broadcast along a query or key axis: not triangular
        return None
    return "causal" if bool((keep == causal).all()) else None


def _drop_mask(attention: tcp.AttentionOp, causal: bool) -> None:
    q, k, v = attention.query, attention.key, attention.value
    props = dict(attention.properties)
    props["causal"] = bool_attr(causal)
    replacement = tcp.AttentionOp.make([q, k, v, []], props)
    replacement.result.name_hint = attention.result.name_hint
    Rewriter.replace_op(attention, replacement)
