"""``tcp.attention``: scaled dot-product attention as one op.

Every form PyTorch exports (``scaled_dot_product_attention`` and the flash,
memory-efficient, cuDNN and CPU-flash kernels it dispatches to) imports as this
one op, so a backend sees attention whole: a fused kernel computes it without
writing the ``[B, H, Sq, Sk]`` scores to memory.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from xdsl.dialects.builtin import FloatAttr, IntegerAttr, TensorType, i1
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, traits_def, var_operand_def
from xdsl.traits import Pure

from dnnc.ir.attrs import scalar
from dnnc.ir.tcp.base import TcpOp, check_elements, fail
from dnnc.ir.types import FLOAT_TYPES, describe


@irdl_op_definition
class AttentionOp(TcpOp):
    """``softmax(q k^T * scale + mask) v`` per batch entry and head.

    ``query [B, H, Sq, D]``, ``key [B, Hk, Sk, D]``, ``value [B, Hk, Sk, Dv]`` ->
    ``[B, H, Sq, Dv]``, one float type. Grouped-query attention: ``H`` is a multiple
    of ``Hk`` and query head ``h`` reads key/value head ``h // (H / Hk)``.

    The optional ``mask [B, H, Sq, Sk]`` is boolean (false: that key is not attended
    to) or of the query's type (added to the scaled scores, ``-inf`` excludes); a
    mask broadcast from a smaller shape arrives through ``tcp.broadcast``, which a
    fused kernel reads as index arithmetic. ``causal`` excludes key ``j`` from query
    ``i`` when ``j > i`` (the upper triangle, aligned at the top left, as PyTorch's
    ``is_causal``); it combines with a mask. A query row with every key excluded
    gives zeros (PyTorch's rule). Scores, the softmax and the accumulation are at
    least float32.
    """

    name = "tcp.attention"
    query = operand_def(TensorType)
    key = operand_def(TensorType)
    value = operand_def(TensorType)
    mask = var_operand_def(TensorType)
    scale = prop_def(FloatAttr)
    causal = prop_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$query `,` $key `,` $value (`mask` `(` $mask^ `:` type($mask) `)`)? attr-dict "
        "`:` type($query) `,` type($key) `,` type($value) `->` type($result)"
    )

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType]:
        if len(operand_types) not in (3, 4):
            raise fail(cls.name, f"takes query, key, value and at most one mask, got {len(operand_types)} operands")
        q, k, v, *mask = operand_types
        check_elements(cls.name, q, FLOAT_TYPES, "query")
        if not (q.element_type == k.element_type == v.element_type):
            raise fail(cls.name, f"query {describe(q)}, key {describe(k)} and value {describe(v)} differ in element type")
        shapes = [t.get_shape() for t in (q, k, v)]
        if any(len(s) != 4 for s in shapes):
            raise fail(cls.name, f"needs rank-4 [B, H, S, D] operands, got {', '.join(describe(t) for t in (q, k, v))}")
        (b, h, sq, d), (bk, hk, sk, dk), (bv, hv, sv, dv) = shapes
        if (bk, hk, sk) != (bv, hv, sv) or bk != b or dk != d:
            raise fail(cls.name, f"key {describe(k)} and value {describe(v)} do not fit query {describe(q)}")
        if hk < 1 or h % hk:
            raise fail(cls.name, f"query heads {h} must be a multiple of key/value heads {hk}")
        if mask:
            (m,) = mask
            if list(m.get_shape()) != [b, h, sq, sk]:
                raise fail(cls.name, f"mask must be [{b}, {h}, {sq}, {sk}] (broadcast it explicitly), got {describe(m)}")
            if m.element_type not in (i1, q.element_type):
                raise fail(cls.name, f"mask must be i1 or the query's type, got {describe(m)}")
        if not math.isfinite(scalar(props["scale"])):
            raise fail(cls.name, f"scale must be finite, got {scalar(props['scale'])}")
        return [TensorType(q.element_type, [b, h, sq, dv])]

    @property
    def has_mask(self) -> bool:
        return len(self.mask) == 1


ATTENTION_OPS = (AttentionOp,)
