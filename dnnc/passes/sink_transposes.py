"""sink-transposes: move layout changes below elementwise code, so that the ones
that undo each other meet and cancel.

Programs from frameworks that keep activations channels-last (JAX's NHWC) arrive
as ``conv(NCHW) -> transpose -> bias add -> relu -> transpose -> conv``: the
transposes split each convolution from its epilogue, and every backend pattern
misses it. An elementwise op whose runtime operands are all transposes by one
permutation ``p`` (its other operands compile-time: constants, parameters and
their broadcasts) computes the same values before the transpose:
``f(T_p(a), T_p(b), c) = T_p(f(a, b, T_p^-1(c)))``. Moving ``T_p`` below the op
never adds a runtime transpose; ``simplify-shapes`` then composes it with the
next one (identity when they undo each other) and turns a transpose of a
broadcast parameter into a reshape that ``fold-params`` folds.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from dnnc.ir import tcp
from dnnc.ir.analysis import inverse_permutation, is_compile_time
from dnnc.ir.attrs import i64_array, ints
from dnnc.ir.rewriting import PatternPass
from dnnc.ir.types import as_tensor_type, tensor_type


class SinkThroughElementwise(RewritePattern):
    """f(transpose(a, p), ..., c) -> transpose(f(a, ..., transpose(c, p^-1)), p)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, tcp.ELEMENTWISE_OPS) or not op.operands:
            return
        perm: list[int] | None = None
        for v in op.operands:
            owner = v.owner
            if isinstance(owner, tcp.TransposeOp):
                p = list(ints(owner.permutation))
                if perm is not None and p != perm:
                    return
                perm = p
            elif not is_compile_time(v):
                return  # a runtime operand in another layout: moving the transpose would add one
        if perm is None:
            return
        inverse = inverse_permutation(perm)
        operands: list[SSAValue] = []
        for v in op.operands:
            if isinstance(v.owner, tcp.TransposeOp):
                operands.append(v.owner.input)
            else:
                back = tcp.TransposeOp.make([v], {"permutation": i64_array(inverse)})
                rewriter.insert(back, InsertPoint.before(op))
                operands.append(back.result)
        result = as_tensor_type(op.results[0])
        before = tensor_type([result.get_shape()[i] for i in inverse], result.element_type)
        inner = op.__class__(
            operands=operands, result_types=[before], properties=dict(op.properties), attributes=dict(op.attributes)
        )
        rewriter.insert(inner, InsertPoint.before(op))
        rewriter.replace(op, tcp.TransposeOp.make([inner.results[0]], {"permutation": i64_array(perm)}))


class TransposeOfBroadcast(RewritePattern):
    """transpose(broadcast(x), p) -> broadcast(transpose(x, p)): the small tensor moves."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tcp.TransposeOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if not isinstance(inner, tcp.BroadcastOp):
            return
        moved = tcp.TransposeOp.make([inner.input], {"permutation": op.permutation})
        rewriter.insert(moved, InsertPoint.before(op))
        rewriter.replace(op, tcp.BroadcastOp(operands=[moved.result], result_types=[op.result.type]))


@dataclass(frozen=True)
class SinkTransposes(PatternPass):
    name = "sink-transposes"
    patterns = (SinkThroughElementwise(), TransposeOfBroadcast())
