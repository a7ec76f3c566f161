"""A ``cudnn.graph`` back in tcp: the same computation as plain tcp ops, for the
graphs cuDNN builds no engine for, so that code generation runs them instead.

Descriptors become layout ops on the operand's row-major buffer (a reshape to the
physical order of the strides, then a transpose to the descriptor's dims); cuDNN's
implicit broadcasting of size-1 dims becomes ``tcp.broadcast``; each node becomes
the tcp op it was lowered from; each graph output is laid out by its result strides
(a transpose to the physical order, then a reshape to the result type). Every view
``lower-cudnn`` writes lays its dims out one to one over the buffer (``fills``); a
graph with another view, or a node tcp has no op for, is refused with the reason.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import VerifyException

from dnnc.errors import DnncError
from dnnc.ir import cudnn, tcp
from dnnc.ir.analysis import inverse_permutation
from dnnc.ir.attrs import bool_attr, float_attr, i64_array, int_attr, ints
from dnnc.ir.builder import TcpBuilder
from dnnc.ir.types import describe, numel, shape_of


class RaiseError(DnncError):
    """A graph that has no tcp equivalent here."""


UNARY: dict[str, type[tcp.TcpOp]] = {
    "sigmoid": tcp.SigmoidOp,
    "tanh": tcp.TanhOp,
    "swish": tcp.SiluOp,
    "exp": tcp.ExpOp,
    "log": tcp.LogOp,
    "sqrt": tcp.SqrtOp,
    "rsqrt": tcp.RsqrtOp,
    "neg": tcp.NegOp,
    "abs": tcp.AbsOp,
    "erf": tcp.ErfOp,
}
BINARY: dict[str, type[tcp.TcpOp]] = {
    "add": tcp.AddOp,
    "sub": tcp.SubOp,
    "mul": tcp.MulOp,
    "div": tcp.DivOp,
    "max": tcp.MaximumOp,
    "min": tcp.MinimumOp,
}


class _Recorder(TcpBuilder):
    """A builder that remembers the ops it inserted."""

    def __init__(self, insert_point: InsertPoint):
        super().__init__(insert_point)
        self.ops: list[Operation] = []

    def emit(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return super().emit(op)


def raise_graph(graph: cudnn.GraphOp) -> list[Operation]:
    """Replace ``graph`` by tcp ops computing its results; returns the new ops in order.
    Raises ``RaiseError`` (leaving the graph as it was) when it cannot."""
    b = _Recorder(InsertPoint.before(graph))
    try:
        values: dict[SSAValue, SSAValue] = {}
        for arg, operand in zip(graph.body.block.args, graph.inputs):
            values[arg] = _read(b, operand, shape_of(arg.type), cudnn.strides_of(arg.type) or ())
        ret = graph.body.block.last_op
        assert isinstance(ret, cudnn.ReturnOp)
        for node in graph.body.block.ops:
            if node is ret:
                break
            values[node.results[0]] = _node(b, node, [values[v] for v in node.operands])
        results = [_write(b, values[v], r, s) for v, r, s in zip(ret.values, graph.outputs, graph.output_strides())]
    except (RaiseError, VerifyException) as e:
        for op in reversed(b.ops):
            op.detach()
            op.erase()
        raise RaiseError(str(e)) from None
    for old, new in zip(graph.outputs, results):
        old.replace_all_uses_with(new)
    graph.detach()
    graph.erase()
    return b.ops


def _order(dims: Sequence[int], strides: Sequence[int], what: str) -> list[int]:
    """Physical order of the dims: non-1 dims by decreasing stride, size-1 dims kept
    in their places among them (any place is right for a size-1 dim)."""
    if not cudnn.fills(dims, strides):
        raise RaiseError(f"{what}: strides {list(strides)} of dims {list(dims)} are not a dense layout")
    big = sorted((i for i, d in enumerate(dims) if d != 1), key=lambda i: -strides[i])
    it = iter(big)
    return [i if dims[i] == 1 else next(it) for i in range(len(dims))]


def _read(b: TcpBuilder, operand: SSAValue, dims: Sequence[int], strides: Sequence[int]) -> SSAValue:
    """The descriptor's view of the operand's row-major buffer as a tcp value of ``dims``."""
    if numel(dims) != numel(shape_of(operand)):
        raise RaiseError(f"a descriptor of {list(dims)} reads part of {describe(operand.type)}")
    order = _order(dims, strides, f"descriptor on {describe(operand.type)}")
    physical = b.reshape(operand, [dims[i] for i in order])
    return b.transpose(physical, inverse_permutation(order))


def _write(b: TcpBuilder, value: SSAValue, result: SSAValue, strides: Sequence[int]) -> SSAValue:
    """``value`` laid out by ``strides`` in a row-major buffer of the result's type."""
    dims = shape_of(value)
    order = _order(dims, strides, f"result {describe(result.type)}")
    return b.reshape(b.transpose(value, order), shape_of(result))


def _node(b: TcpBuilder, node: Operation, args: list[SSAValue]) -> SSAValue:
    shape = shape_of(node.results[0])
    if isinstance(node, cudnn.ConvFpropOp):
        x, w = args
        pre, post = ints(node.pre_padding), ints(node.post_padding)
        props = {
            "stride": node.stride,
            "padding": i64_array([pre[0], post[0], pre[1], post[1]]),
            "dilation": node.dilation,
            "groups": int_attr(shape_of(x)[1] // shape_of(w)[1]),
        }
        return b.build(tcp.Conv2dOp, [x, w], **props)
    if isinstance(node, cudnn.MatmulOp):
        a, m = args
        batch = shape[0]
        a = b.broadcast_to(a, [batch, *shape_of(a)[1:]])
        m = b.broadcast_to(m, [batch, *shape_of(m)[1:]])
        return b.build(tcp.BatchMatmulOp, [a, m])
    if isinstance(node, cudnn.PointwiseOp):
        return _pointwise(b, node, [b.broadcast_to(a, shape) for a in args])
    if isinstance(node, cudnn.ReductionOp):
        return _reduction(b, node, args[0])
    if isinstance(node, cudnn.LayerNormOp):
        x, scale, bias = args
        norm = shape[1:]
        weight, offset = (b.reshape(v, norm) for v in (scale, bias))
        return b.build(tcp.LayerNormOp, [x, weight, offset], axis=int_attr(1), epsilon=node.epsilon)
    if isinstance(node, cudnn.SdpaOp):
        return b.build(tcp.AttentionOp, [*args, []], scale=node.scale, causal=node.causal)
    raise RaiseError(f"{node.name} has no tcp equivalent here")


def _pointwise(b: TcpBuilder, node: cudnn.PointwiseOp, args: list[SSAValue]) -> SSAValue:
    mode = node.mode.data
    if mode in BINARY:
        return b.build(BINARY[mode], args)
    if mode in UNARY:
        return b.build(UNARY[mode], args)
    if mode in ("gelu", "gelu_approx_tanh"):
        return b.build(tcp.GeluOp, args, approximate=StringAttr("none" if mode == "gelu" else "tanh"))
    if mode == "relu":
        lo, hi = node.clips()
        bounds = {"min": float_attr(0.0 if lo is None else lo)}
        if hi is not None:
            bounds["max"] = float_attr(hi)
        return b.build(tcp.ClampOp, args, **bounds)
    raise RaiseError(f"cudnn.pointwise mode {mode!r} has no tcp equivalent here")


def _reduction(b: TcpBuilder, node: cudnn.ReductionOp, x: SSAValue) -> SSAValue:
    axes = list(ints(node.axes))
    if not axes:
        return x
    props = {"axes": i64_array(axes), "keepdim": bool_attr(True)}
    mode = node.mode.data
    if mode == "add":
        return b.build(tcp.ReduceSumOp, [x], **props)
    if mode == "avg":
        return b.build(tcp.ReduceMeanOp, [x], **props)
    if mode == "max":
        return b.build(tcp.ReduceMaxOp, [x], **props)
    if mode == "min":
        return b.build(tcp.NegOp, [b.build(tcp.ReduceMaxOp, [b.build(tcp.NegOp, [x])], **props)])
    raise RaiseError(f"cudnn.reduction mode {mode!r} has no tcp equivalent here")
