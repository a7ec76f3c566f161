"""Builds tcp ops at an insertion point, inferring result types. The importer and
the passes both build through this, so casts, reshapes and broadcasts are made
one way everywhere."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import FloatAttr, IntegerAttr, TensorType
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
