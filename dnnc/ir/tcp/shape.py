"""Ops that move or copy elements without arithmetic: reshape, broadcast, transpose,
concat, slice, pad, gather. Tensors are logical (row-major, no strides); memory
layouts are chosen later, so these ops say *what* moves, never how it is stored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from math import prod

from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, IntegerAttr, StringAttr, TensorType
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, traits_def, var_operand_def
from xdsl.traits import Pure

from dnnc.ir.attrs import ints, scalar
from dnnc.ir.tcp.base import TcpOp, check_axis, check_elements, check_len, fail
from dnnc.ir.types import INDEX_TYPES, describe, is_float


@irdl_op_definition
class ReshapeOp(TcpOp):
    """Same elements in row-major order, another shape (same element count)."""

    name = "tcp.reshape"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `to` type($result)"

    def verify_(self) -> None:
        src, dst = self.input.type, self.result.type
        if src.element_type != dst.element_type or prod(src.get_shape()) != prod(dst.get_shape()):
            raise fail(self.name, f"cannot reshape {describe(src)} to {describe(dst)}")


@irdl_op_definition
class BroadcastOp(TcpOp):
    """Repeat size-1 dimensions to the result's size. Ranks are equal: add leading
    size-1 dimensions with ``tcp.reshape`` first. ``result[i, j] = input[i', j']``
    where ``i' = 0`` along broadcast dimensions."""

    name = "tcp.broadcast"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `to` type($result)"

    def verify_(self) -> None:
        src, dst = self.input.type, self.result.type
        s, d = src.get_shape(), dst.get_shape()
        if src.element_type != dst.element_type or len(s) != len(d) or any(a not in (1, b) for a, b in zip(s, d)):
            raise fail(self.name, f"cannot broadcast {describe(src)} to {describe(dst)} (same rank, only size-1 dims grow)")


@irdl_op_definition
class TransposeOp(TcpOp):
    """Permute dimensions: ``result.shape[i] = input.shape[permutation[i]]``."""

    name = "tcp.transpose"
    input = operand_def(TensorType)
    permutation = prop_def(DenseArrayBase)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType]:
        (src,) = operand_types
        perm = ints(props["permutation"])
        shape = src.get_shape()
        if sorted(perm) != list(range(len(shape))):
            raise fail(cls.name, f"permutation {list(perm)} is not a permutation of {len(shape)} dimensions")
        return [TensorType(src.element_type, [shape[p] for p in perm])]


@irdl_op_definition
class ConcatOp(TcpOp):
    """Join tensors along ``axis``; all other dimensions and the element type agree."""

    name = "tcp.concat"
    inputs = var_operand_def(TensorType)
    axis = prop_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$inputs attr-dict `:` functional-type($inputs, $result)"

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType]:
        if not operand_types:
            raise fail(cls.name, "needs at least one input")
        first = operand_types[0]
        rank = len(first.get_shape())
        axis = scalar(props["axis"])
        check_axis(cls.name, axis, rank)
        size = 0
        for t in operand_types:
            s = t.get_shape()
            if (
                t.element_type != first.element_type
                or len(s) != rank
                or any(a != b for i, (a, b) in enumerate(zip(s, first.get_shape())) if i != axis)
            ):
                raise fail(cls.name, f"inputs {describe(first)} and {describe(t)} do not agree off axis {axis}")
            size += s[axis]
        shape = list(first.get_shape())
        shape[axis] = size
        return [TensorType(first.element_type, shape)]


@irdl_op_definition
class SliceOp(TcpOp):
    """``result[i] = input[starts + i * strides]`` per dimension, stopping before
    ``limits``. Bounds are normalized: ``0 <= start <= limit <= size``, stride >= 1."""

    name = "tcp.slice"
    input = operand_def(TensorType)
    starts = prop_def(DenseArrayBase)
    limits = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType]:
        (src,) = operand_types
        shape = src.get_shape()
        starts, limits, strides = (ints(props[k]) for k in ("starts", "limits", "strides"))
        for name, values in (("starts", starts), ("limits", limits), ("strides", strides)):
            check_len(cls.name, name, values, len(shape))
        out = []
        for dim, (b, e, s, n) in enumerate(zip(starts, limits, strides, shape)):
            if not (0 <= b <= e <= n) or s < 1:
                raise fail(cls.name, f"dimension {dim}: slice [{b}:{e}:{s}] is not normalized for size {n}")
            out.append(-(-(e - b) // s))
        return [TensorType(src.element_type, out)]


@irdl_op_definition
class PadOp(TcpOp):
    """Grow each dimension by ``low`` elements before and ``high`` after, filled with
    ``value`` (float for float tensors, integer otherwise)."""

    name = "tcp.pad"
    input = operand_def(TensorType)
    low = prop_def(DenseArrayBase)
    high = prop_def(DenseArrayBase)
    value = prop_def(FloatAttr | IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType]:
        (src,) = operand_types
        shape = src.get_shape()
        low, high = ints(props["low"]), ints(props["high"])
        check_len(cls.name, "low", low, len(shape))
        check_len(cls.name, "high", high, len(shape))
        if any(p < 0 for p in (*low, *high)):
            raise fail(cls.name, "padding must be non-negative (use tcp.slice to crop)")
        if is_float(src.element_type) != isinstance(props["value"], FloatAttr):
            raise fail(cls.name, f"pad value {props['value']} does not suit {describe(src)}")
        return [TensorType(src.element_type, [n + lo + hi for n, lo, hi in zip(shape, low, high)])]


@irdl_op_definition
class GatherOp(TcpOp):
    """Pick slices of ``input`` along ``axis`` by ``indices`` (torch.index_select
    generalized to any index shape; an embedding lookup is ``axis = 0``):
    ``result.shape = input.shape[:axis] + indices.shape + input.shape[axis+1:]``.
    Indices must lie in ``[0, input.shape[axis])``."""

    name = "tcp.gather"
    input = operand_def(TensorType)
    indices = operand_def(TensorType)
    axis = prop_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input `,` $indices attr-dict `:` `(` type($input) `,` type($indices) `)` `->` type($result)"

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType]:
        src, idx = operand_types
        check_elements(cls.name, idx, INDEX_TYPES, "indices")
        shape = src.get_shape()
        axis = scalar(props["axis"])
        check_axis(cls.name, axis, len(shape))
        return [TensorType(src.element_type, [*shape[:axis], *idx.get_shape(), *shape[axis + 1 :]])]


def _check_index_shape(op: str, src: TensorType, idx: TensorType, axis: int) -> None:
    """An index tensor of the input's rank, no larger off ``axis`` (torch.gather's rule)."""
    shape, ishape = src.get_shape(), idx.get_shape()
    check_elements(op, idx, INDEX_TYPES, "indices")
    check_axis(op, axis, len(shape))
    if len(ishape) != len(shape) or any(i > n for d, (i, n) in enumerate(zip(ishape, shape)) if d != axis):
        raise fail(op, f"indices {describe(idx)} must have the rank of {describe(src)} and no larger dims off axis {axis}")


@irdl_op_definition
class TakeAlongOp(TcpOp):
    """Pick one element along ``axis`` per index (``torch.gather``, ``take_along_dim``):
    ``result[p] = input[p with p[axis] = indices[p]]``; the result has the indices'
    shape, which has the input's rank and no larger dims off ``axis``. Indices must
    lie in ``[0, input.shape[axis])``."""

    name = "tcp.take_along"
    input = operand_def(TensorType)
    indices = operand_def(TensorType)
    axis = prop_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input `,` $indices attr-dict `:` `(` type($input) `,` type($indices) `)` `->` type($result)"

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType]:
        src, idx = operand_types
        _check_index_shape(cls.name, src, idx, scalar(props["axis"]))
        return [TensorType(src.element_type, idx.get_shape())]


SCATTER_MODES = ("replace", "add")


@irdl_op_definition
class ScatterOp(TcpOp):
    """``input`` with elements of ``updates`` written along ``axis`` (``torch.scatter``):
    for every position ``q`` of ``indices`` (the shape of ``updates``, the input's rank,
    no larger dims off ``axis``), the result at ``q with q[axis] = indices[q]`` is
    ``updates[q]`` (``mode = "replace"``; where several ``q`` write one element, the
    last along ``axis`` wins: torch leaves that case unspecified) or the input plus
    the sum of the ``updates[q]`` written there (``mode = "add"``). Indices must lie
    in ``[0, input.shape[axis])``."""

    name = "tcp.scatter"
    input = operand_def(TensorType)
    indices = operand_def(TensorType)
    updates = operand_def(TensorType)
    axis = prop_def(IntegerAttr)
    mode = prop_def(StringAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input `,` $indices `,` $updates attr-dict `:` `(` type($input) `,` type($indices) `,` type($updates) `)` `->` type($result)"

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType]:
        src, idx, upd = operand_types
        _check_index_shape(cls.name, src, idx, scalar(props["axis"]))
        mode = props["mode"]
        if not isinstance(mode, StringAttr) or mode.data not in SCATTER_MODES:
            raise fail(cls.name, f"mode must be one of {SCATTER_MODES}, got {mode}")
        if upd.element_type != src.element_type or upd.get_shape() != idx.get_shape():
            raise fail(cls.name, f"updates {describe(upd)} must have the indices' shape and the input's type")
        return [src]


SHAPE_OPS = (ReshapeOp, BroadcastOp, TransposeOp, ConcatOp, SliceOp, PadOp, GatherOp, TakeAlongOp, ScatterOp)
