"""sink-transposes: move layout changes below elementwise code, so that the ones
that undo each other meet and cancel.

Programs from frameworks that keep activations channels-last (JAX's NHWC) arrive
as ``conv(NCHW) -> transpose -> bias add -> relu -> transpose -> conv``: the
transposes split each convolution from its epilogue, and every backend pattern
misses it. An elementwise op whose runtime operands are all transposes by one
permutation ``p`` (its other operands compile-time: constants, parameters and
their broadcasts, or a broadcast gate of N x C x 1 x 1) computes the same values
before the transpose: ``f(T_p(a), T_p(b), c) = T_p(f(a, b, T_p^-1(c)))``. The move
is made where at least one of those transposes then has no other user: one transpose
after the op replaces one or more before it, so no runtime transpose is added.
``simplify-shapes`` then composes it with the next one (identity when they undo each
other) and turns a transpose of a broadcast parameter into a reshape that
``fold-params`` folds.

Channels-last data brought back to NCHW moves below an op whose result goes
channels-last again (``analysis.taken_channels_last``) even where the transpose has
other readers: the transpose after the op cancels against the one its reader asks
for, and the others keep theirs. A squeeze-excite block reads its input twice, a mean
over H, W and the scaling by its gate; moved so, the scaling runs channels-last, the
mean reads rows of channels (``fusion.reduction_prologue``), and the depthwise
convolution before them stores NHWC, where it stored its channels H x W apart.

PyTorch models that run part of each block channels-last (ConvNeXt's
``permute -> LayerNorm -> Linear -> permute back -> scale -> + residual``) meet the
same rule: the residual stream's transposes move down block after block, and each
block's convolution reads the stream in the layout it already has.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from dnnc.ir import tcp
from dnnc.ir.analysis import (
    PINNED_ATTR,
    TO_NCHW,
    inverse_permutation,
    is_compile_time,
    permutes_as_reshape,
    reduces_short_rows,
    taken_channels_last,
)
from dnnc.ir.attrs import i64_array, ints
from dnnc.ir.rewriting import PatternPass, retyped
from dnnc.ir.types import as_tensor_type, shape_of


class SinkThroughElementwise(RewritePattern):
    """f(transpose(a, p), ..., c) -> transpose(f(a, ..., transpose(c, p^-1)), p), where
    c is compile-time or, for channels-last data brought back to NCHW, a convolution's
    result (its bias and activation included): convolutions run channels-last
    (``assign-layouts``), so the transpose that asks for its result NHWC cancels
    against the one that gives it back NCHW."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, tcp.ELEMENTWISE_OPS) or not op.operands:
            return
        moved = [v for v in op.operands if _runtime_transpose(v)]
        perms = {tuple(ints(v.owner.permutation)) for v in moved}
        if len(perms) != 1:
            return  # no transpose, or transposes that disagree
        perm = list(perms.pop())
        inverse = inverse_permutation(perm)
        freed = any(all(u.operation is op for u in v.uses) for v in moved)
        if not freed and not (tuple(perm) == TO_NCHW and taken_channels_last(op.results[0]) and _others_read_rows(moved, op)):
            return  # none freed, and the transpose after the op would be a kernel's work: one would be added
        for v in op.operands:
            if v in moved or is_compile_time(v) or _permutes_as_a_view(v, inverse):
                continue
            if not (tuple(perm) == TO_NCHW and _from_a_convolution(v)):
                return  # a runtime operand in another layout: moving the transpose would add one
        operands: list[SSAValue] = []
        for v in op.operands:
            if v in moved:
                operands.append(v.owner.input)
            else:
                back = tcp.TransposeOp.make([v], {"permutation": i64_array(inverse)})
                rewriter.insert(back, InsertPoint.before(op))
                operands.append(back.result)
        shape = as_tensor_type(op.results[0]).get_shape()
        inner = retyped(op, operands, [shape[i] for i in inverse])
        rewriter.insert(inner, InsertPoint.before(op))
        rewriter.replace(op, tcp.TransposeOp.make([inner.results[0]], {"permutation": i64_array(perm)}))


def _from_a_convolution(value: SSAValue, depth: int = 4) -> bool:
    """A convolution's result, or elementwise code on one whose other operands are
    compile-time (a bias, an activation)."""
    owner = value.owner
    if isinstance(owner, tcp.Conv2dOp):
        return True
    if depth == 0 or not isinstance(owner, tcp.ELEMENTWISE_OPS):
        return False
    runtime = [v for v in owner.operands if not is_compile_time(v)]
    return len(runtime) == 1 and _from_a_convolution(runtime[0], depth - 1)


def _others_read_rows(moved: list[SSAValue], op: Operation) -> bool:
    """The moved transposes' other readers are reductions of short rows
    (``analysis.reduces_short_rows``), which read the channels-last tensor as rows of
    channels, or elementwise ops (which this pattern visits in turn)."""
    return all(
        u.operation is op or reduces_short_rows(u.operation) or isinstance(u.operation, tcp.ELEMENTWISE_OPS)
        for v in moved
        for u in v.uses
    )


def _permutes_as_a_view(value: SSAValue, permutation: list[int]) -> bool:
    """A broadcast of a tensor that ``permutation`` moves no data of
    (``analysis.permutes_as_reshape``: a squeeze-excite gate of N x C x 1 x 1): transposed, it
    stays a broadcast of a reshape."""
    owner = value.owner
    if not isinstance(owner, tcp.BroadcastOp) or len(shape_of(owner.input)) != len(permutation):
        return False
    return permutes_as_reshape(shape_of(owner.input), permutation)


def _runtime_transpose(value: SSAValue) -> bool:
    """A transpose of data computed at run time (one of a constant folds away), not pinned
    where it is (``PINNED_ATTR``)."""
    owner = value.owner
    return isinstance(owner, tcp.TransposeOp) and PINNED_ATTR not in owner.attributes and not is_compile_time(value)


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
