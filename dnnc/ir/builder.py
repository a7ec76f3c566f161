"""Builds tcp ops at an insertion point, inferring result types. The importer and
the passes both build through this, so casts, reshapes and broadcasts are made
one way everywhere."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import FloatAttr, IntegerAttr, IntegerType, TensorType
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import VerifyException

from dnnc.ir import tcp
from dnnc.ir.attrs import float_attr, i64_array, int_attr
from dnnc.ir.types import as_tensor_type, is_float, shape_of, tensor_type

Scalar = int | float | bool


class TcpBuilder:
    """Inserts new ops before ``anchor`` (inside a pass) or at the end of ``block``."""

    def __init__(self, insert_point: InsertPoint):
        self.insert_point = insert_point

    @classmethod
    def at_end(cls, block: Block) -> TcpBuilder:
        return cls(InsertPoint.at_end(block))

    @classmethod
    def before(cls, op: Operation) -> TcpBuilder:
        return cls(InsertPoint.before(op))

    def emit(self, op: Operation) -> SSAValue:
        Rewriter.insert_op(op, self.insert_point)
        return op.results[0]

    def build(self, op_type: type[tcp.TcpOp], operands: Sequence[SSAValue | Sequence[SSAValue]], **props: Attribute) -> SSAValue:
        """An op whose result type is inferred; raises VerifyException if it cannot be."""
        return self.emit(op_type.make(operands, props))

    def typed(self, op_type: type[Operation], operands: Sequence[SSAValue], result: TensorType) -> SSAValue:
        """An op whose result type is given (reshape, broadcast, cast); verified."""
        op = op_type(operands=list(operands), result_types=[result])
        op.verify()
        return self.emit(op)

    def constant(self, value: Scalar, shape: Sequence[int], element: Attribute) -> SSAValue:
        attr: FloatAttr | IntegerAttr = float_attr(float(value)) if is_float(element) else int_attr(int(value))
        return self.emit(tcp.ConstantOp(attr, tensor_type(shape, element)))

    def cast(self, v: SSAValue, element: Attribute) -> SSAValue:
        if as_tensor_type(v).element_type == element:
            return v
        return self.typed(tcp.CastOp, [v], tensor_type(shape_of(v), element))

    def reshape(self, v: SSAValue, shape: Sequence[int]) -> SSAValue:
        if shape_of(v) == tuple(shape):
            return v
        return self.typed(tcp.ReshapeOp, [v], tensor_type(shape, as_tensor_type(v).element_type))

    def broadcast_to(self, v: SSAValue, shape: Sequence[int]) -> SSAValue:
        """NumPy-style broadcasting made explicit: leading size-1 dims, then tcp.broadcast."""
        src = shape_of(v)
        if src == tuple(shape):
            return v
        if len(src) > len(shape):
            raise VerifyException(f"cannot broadcast {list(src)} to {list(shape)}")
        v = self.reshape(v, (1,) * (len(shape) - len(src)) + src)
        if shape_of(v) == tuple(shape):
            return v
        return self.typed(tcp.BroadcastOp, [v], tensor_type(shape, as_tensor_type(v).element_type))

    def transpose(self, v: SSAValue, perm: Sequence[int]) -> SSAValue:
        if list(perm) == list(range(len(perm))):
            return v
        return self.build(tcp.TransposeOp, [v], permutation=i64_array(perm))

    def slice(self, v: SSAValue, axis: int, start: int, end: int, step: int = 1) -> SSAValue:
        """``v[start:end:step]`` along ``axis`` (bounds already in range)."""
        shape = shape_of(v)
        if (start, end, step) == (0, shape[axis], 1):
            return v
        starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
        starts[axis], limits[axis], strides[axis] = start, end, step
        return self.build(tcp.SliceOp, [v], starts=i64_array(starts), limits=i64_array(limits), strides=i64_array(strides))

    def pad_or_crop(self, v: SSAValue, low: Sequence[int], high: Sequence[int], value: Scalar = 0) -> SSAValue:
        """``v`` padded with ``value`` by ``low`` / ``high`` on each axis, where a negative
        amount crops that side instead."""
        fill: FloatAttr | IntegerAttr = (
            float_attr(float(value)) if is_float(as_tensor_type(v).element_type) else int_attr(int(value))
        )
        if any(p > 0 for p in (*low, *high)):
            v = self.build(
                tcp.PadOp, [v], low=i64_array([max(p, 0) for p in low]), high=i64_array([max(p, 0) for p in high]), value=fill
            )
        for axis, (lo, hi) in enumerate(zip(low, high)):
            if lo < 0 or hi < 0:
                v = self.slice(v, axis, -min(lo, 0), shape_of(v)[axis] + min(hi, 0))
        return v

    def spread(self, v: SSAValue, strides: Sequence[int]) -> SSAValue:
        """``v`` (``N, C, *spatial``) with ``stride - 1`` zeros after each pixel along each
        spatial axis: the input of a transposed convolution written as a forward one (a
        convolution's input dilation), trailing zeros included."""
        if all(s == 1 for s in strides):
            return v
        n, c, *size = shape_of(v)
        v = self.reshape(v, (n, c, *[a for s in size for a in (s, 1)]))
        after = [0, 0] + [a for st in strides for a in (0, st - 1)]
        v = self.pad_or_crop(v, [0] * len(after), after)
        return self.reshape(v, (n, c, *[s * st for s, st in zip(size, strides)]))

    def flip(self, v: SSAValue, axis: int) -> SSAValue:
        """``v`` in reverse order along ``axis``: a gather of the indices ``n - 1 .. 0``."""
        n = shape_of(v)[axis]
        if n == 1:
            return v
        backwards = self.emit(tcp.IotaOp(n - 1, -1, tensor_type((n,), IntegerType(64))))
        return self.build(tcp.GatherOp, [v, backwards], axis=int_attr(axis))
