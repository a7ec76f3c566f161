"""fold-batchnorm: fold inference batch norm into the conv or matmul before it.

``batch_norm(conv(x, w) [+ b])`` becomes ``conv(x, w * s) + (b - mean) * s + offset``
with ``s = scale / sqrt(var + eps)`` per output channel. The new weight and bias
are built as ops on the old parameters; ``fold-params`` then evaluates them into
new parameters, so the running program does no batch-norm work at all.

It applies when the weight and the batch-norm vectors are compile-time values and
the conv (and its bias add) feed only the batch norm.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from dnnc.ir import tcp
from dnnc.ir.analysis import has_one_use, is_compile_time
from dnnc.ir.builder import TcpBuilder
from dnnc.ir.rewriting import PatternPass
from dnnc.ir.types import element_of, shape_of


@dataclass(frozen=True)
class _Producer:
    op: tcp.Conv2dOp | tcp.MatmulOp
    bias: SSAValue | None  # per-channel, shaped like channel_shape, before its broadcast

    @property
    def weight(self) -> SSAValue:
        return self.op.weight if isinstance(self.op, tcp.Conv2dOp) else self.op.rhs

    @property
    def channel_shape(self) -> tuple[int, ...]:
        """Shape of a per-output-channel value that broadcasts against the output."""
        channels = shape_of(self.op.result)[1]
        return (1, channels, 1, 1) if isinstance(self.op, tcp.Conv2dOp) else (1, channels)

    @property
    def weight_scale_shape(self) -> tuple[int, ...]:
        """Shape of the per-channel scale that broadcasts against the weight."""
        channels = shape_of(self.op.result)[1]
        return (channels, 1, 1, 1) if isinstance(self.op, tcp.Conv2dOp) else (1, channels)


def _producer_of(value: SSAValue) -> _Producer | None:
    """conv2d / matmul, possibly followed by a broadcast per-channel bias add."""
    owner = value.owner
    if isinstance(owner, (tcp.Conv2dOp, tcp.MatmulOp)):
        return _Producer(owner, None) if has_one_use(value) else None
    if not isinstance(owner, tcp.AddOp) or not has_one_use(value):
        return None
    for main, other in ((owner.lhs, owner.rhs), (owner.rhs, owner.lhs)):
        inner = main.owner
        if isinstance(inner, (tcp.Conv2dOp, tcp.MatmulOp)) and has_one_use(main) and isinstance(other.owner, tcp.BroadcastOp):
            producer = _Producer(inner, other.owner.input)
            if shape_of(producer.bias) == producer.channel_shape:
                return producer
    return None


class FoldBatchNormPattern(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, bn: tcp.BatchNormOp, rewriter: PatternRewriter) -> None:
        producer = _producer_of(bn.input)
        if producer is None or len(shape_of(bn.input)) != len(producer.channel_shape):
            return
        vectors = (bn.scale, bn.offset, bn.mean, bn.variance)
        if not all(is_compile_time(v) for v in (producer.weight, *vectors)):
            return
        if producer.bias is not None and not is_compile_time(producer.bias):
            return

        b = TcpBuilder.before(bn)
        channels, element = shape_of(bn.scale)[0], element_of(bn.scale)
        eps = b.constant(bn.epsilon.value.data, (channels,), element)
        s = b.build(tcp.MulOp, [bn.scale, b.build(tcp.RsqrtOp, [b.build(tcp.AddOp, [bn.variance, eps])])])
        shift = b.build(tcp.SubOp, [bn.offset, b.build(tcp.MulOp, [bn.mean, s])])

        w = producer.weight
        new_w = b.build(tcp.MulOp, [w, b.broadcast_to(b.reshape(s, producer.weight_scale_shape), shape_of(w))])
        op = producer.op
        operands = [op.input, new_w] if isinstance(op, tcp.Conv2dOp) else [op.lhs, new_w]
        scaled = b.build(type(op), operands, **op.properties)

        bias = b.reshape(shift, producer.channel_shape)
        if producer.bias is not None:
            rescaled = b.build(tcp.MulOp, [producer.bias, b.reshape(s, producer.channel_shape)])
            bias = b.build(tcp.AddOp, [rescaled, bias])
        out = b.build(tcp.AddOp, [scaled, b.broadcast_to(bias, shape_of(scaled))])
        rewriter.replace(bn, [], [out])


@dataclass(frozen=True)
class FoldBatchNorm(PatternPass):
    name = "fold-batchnorm"
    patterns = (FoldBatchNormPattern(),)
