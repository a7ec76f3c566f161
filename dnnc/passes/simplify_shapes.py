"""simplify-shapes: collapse chains of reshape, transpose, broadcast and no-op
data movement, so later stages see each tensor moved at most once.

Each pattern is one small rewrite; the table at the bottom is the whole pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from dnnc.ir import tcp
from dnnc.ir.analysis import PINNED_ATTR, permutes_as_reshape
from dnnc.ir.attrs import i64_array, ints
from dnnc.ir.rewriting import PatternPass, retyped
from dnnc.ir.types import as_tensor_type, shape_of, tensor_type


def _forward(rewriter: PatternRewriter, op: tcp.TcpOp, value: SSAValue) -> None:
    """Replace op's single result by an existing value."""
    rewriter.replace(op, [], [value])


class RemoveIdentity(RewritePattern):
    """reshape/broadcast/cast to the same type, identity transpose, full slice,
    single-input concat, zero padding: the op does nothing."""

    def match_and_rewrite(self, op: object, rewriter: PatternRewriter) -> None:
        if (
            (isinstance(op, (tcp.ReshapeOp, tcp.BroadcastOp, tcp.CastOp)) and op.input.type == op.result.type)
            or (isinstance(op, tcp.TransposeOp) and list(ints(op.permutation)) == list(range(len(ints(op.permutation)))))
            or (isinstance(op, tcp.SliceOp) and op.input.type == op.result.type)
            or (isinstance(op, tcp.PadOp) and op.input.type == op.result.type)
        ):
            _forward(rewriter, op, op.input)
        elif isinstance(op, tcp.ConcatOp) and len(op.inputs) == 1:
            _forward(rewriter, op, op.inputs[0])


class ComposeReshapes(RewritePattern):
    """reshape(reshape(x)) -> reshape(x)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tcp.ReshapeOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if isinstance(inner, tcp.ReshapeOp):
            new = tcp.ReshapeOp(operands=[inner.input], result_types=[op.result.type])
            rewriter.replace(op, new)


class ComposeTransposes(RewritePattern):
    """transpose(transpose(x, p), q) -> transpose(x, p[q]), unless the outer one is pinned
    (a Triton convolution reading a channels-last tensor in its kernel,
    ``triton-channels-last``)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tcp.TransposeOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if isinstance(inner, tcp.TransposeOp) and PINNED_ATTR not in op.attributes:
            p, q = ints(inner.permutation), ints(op.permutation)
            rewriter.replace(op, tcp.TransposeOp.make([inner.input], {"permutation": i64_array([p[i] for i in q])}))


class ComposeBroadcasts(RewritePattern):
    """broadcast(broadcast(x)) -> broadcast(x)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tcp.BroadcastOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if isinstance(inner, tcp.BroadcastOp):
            rewriter.replace(op, tcp.BroadcastOp(operands=[inner.input], result_types=[op.result.type]))


class TransposeOfUnitDimsToReshape(RewritePattern):
    """A transpose that keeps the order of all dimensions larger than 1 moves no
    data: it is a reshape."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tcp.TransposeOp, rewriter: PatternRewriter) -> None:
        if permutes_as_reshape(shape_of(op.input), ints(op.permutation)):
            rewriter.replace(op, tcp.ReshapeOp(operands=[op.input], result_types=[op.result.type]))


class SplatThroughShapeOps(RewritePattern):
    """reshape/broadcast/transpose/slice of a splat constant is a splat constant."""

    def match_and_rewrite(self, op: object, rewriter: PatternRewriter) -> None:
        if not isinstance(op, (tcp.ReshapeOp, tcp.BroadcastOp, tcp.TransposeOp, tcp.SliceOp)):
            return
        source = op.input.owner
        if isinstance(source, tcp.ConstantOp):
            rewriter.replace(op, tcp.ConstantOp(source.value, op.result.type))


class ElementwiseBeforeReshape(RewritePattern):
    """f(reshape(a), reshape(b), splat) -> reshape(f(a, b, splat)) where a and b have
    one shape: an elementwise op computes the same values on either side of a
    reshape. A Linear applied to a 4-d tensor imports as ``matmul -> bias add ->
    reshape``, so the activation after it (ConvNeXt's GELU) sits behind a reshape;
    moved above it, the activation follows the product directly and can join its
    epilogue, and the reshape meets the next product's and cancels."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, tcp.ELEMENTWISE_OPS) or not op.operands or len(op.results) != 1:
            return
        source = None
        for v in op.operands:
            if isinstance(v.owner, tcp.ReshapeOp):
                if source is not None and v.owner.input.type.get_shape() != source:
                    return
                source = v.owner.input.type.get_shape()
            elif not isinstance(v.owner, tcp.ConstantOp):
                return
        if source is None:
            return
        operands: list[SSAValue] = []
        for v in op.operands:
            if isinstance(v.owner, tcp.ReshapeOp):
                operands.append(v.owner.input)
            else:
                splat = tcp.ConstantOp(v.owner.value, tensor_type(list(source), as_tensor_type(v).element_type))
                rewriter.insert(splat, InsertPoint.before(op))
                operands.append(splat.result)
        inner = retyped(op, operands, source)
        rewriter.insert(inner, InsertPoint.before(op))
        rewriter.replace(op, tcp.ReshapeOp(operands=[inner.results[0]], result_types=[op.results[0].type]))


@dataclass(frozen=True)
class SimplifyShapes(PatternPass):
    name = "simplify-shapes"
    patterns = (
        RemoveIdentity(),
        ComposeReshapes(),
        ComposeTransposes(),
        ComposeBroadcasts(),
        TransposeOfUnitDimsToReshape(),
        SplatThroughShapeOps(),
        ElementwiseBeforeReshape(),
    )
