"""lower-cudnn: turn each ``cudnn`` group into a ``cudnn.graph``.

Each block argument becomes a tensor descriptor. A transpose applied to an
argument right at the group's boundary (as ``assign-layouts`` leaves them) is
read as strides: the descriptor has the logical dims and points into the
operand's buffer, so no data moves. Matmul operands of rank 2 get a leading
unit dim (cuDNN's matmul is batched); a layer norm over the last dim reads its
input as ``[rows, D, 1, 1]``. ``tcp.broadcast`` disappears: cuDNN broadcasts
size-1 dims itself. A reshape at an output is a row-major view, so the graph
writes its logical result row-major. A group this file cannot lower is put back
into the function as plain tcp ops (the reason logged), where code generation
takes them like any other ops.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from dnnc.backends.cudnn.patterns import BINARY_MODES, clamp_bounds, unary_mode
from dnnc.backends.interface import GROUP_BACKEND_ATTR, GROUP_KIND_ATTR, SITE_ATTR, SPEC_PLAN_ATTR, group_attr
from dnnc.errors import DnncError
from dnnc.ir import cudnn, tcp
from dnnc.ir.analysis import inverse_permutation
from dnnc.ir.attrs import bool_attr, float_attr, i64_array, ints, str_attr
from dnnc.ir.outline import inline
from dnnc.ir.types import describe, element_of, shape_of

log = logging.getLogger("dnnc.cudnn")


class LoweringError(DnncError):
    """A group holds something the cudnn dialect cannot express."""


@dataclass(frozen=True)
class LowerCudnn(ModulePass):
    name = "lower-cudnn"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in op.walk():
            if isinstance(fn, func.FuncOp):
                for group in [g for g in fn.body.block.ops if _is_cudnn_group(g)]:
                    try:
                        graph = lower_group(group)
                    except LoweringError as e:
                        log.info("lower-cudnn: group %s goes back to tcp for code generation: %s", _kind(group), e)
                        inline(group)
                        continue
                    Rewriter.replace_op(group, graph)


def _is_cudnn_group(op: Operation) -> bool:
    return isinstance(op, tcp.IsolatedGroupOp) and group_attr(op, GROUP_BACKEND_ATTR) == "cudnn"


def _kind(group: Operation) -> str:
    return group_attr(group, GROUP_KIND_ATTR) or "?"


def permuted_strides(physical: Sequence[int], perm: Sequence[int]) -> tuple[list[int], list[int]]:
    """Dims and strides of ``transpose(x, perm)`` read from x's row-major buffer."""
    strides = cudnn.row_major_strides(physical)
    return [physical[p] for p in perm], [strides[p] for p in perm]


def _is_conv_weight(v: SSAValue) -> bool:
    return any(isinstance(u.operation, tcp.Conv2dOp) and u.operation.weight is v for u in v.uses)


CHANNELS_LAST_DEPTHWISE_TAPS = 49
"""Depthwise weights with at least this many taps (7x7) are described channels-last."""


def channels_last_if_same_bytes(dims: Sequence[int], strides: Sequence[int]) -> tuple[int, ...]:
    """A depthwise weight (one input channel per group) of at least
    ``CHANNELS_LAST_DEPTHWISE_TAPS`` taps described channels-last (KRSC) where its strides
    address the same bytes.

    A depthwise weight's channels-last transpose ``[K, R, S, 1]`` reaches the graph as a
    reshape (moving a size-1 dim reorders no element), read row-major as ``[K, 1, R, S]``
    with strides ``[RS, RS, S, 1]``. cuDNN takes that for a KCRS weight. For convnext_tiny's
    7x7 depthwise convolutions it then transformed the tensors at every call and ran a
    generic implicit GEMM: 0.94 ms for the 32x96x56x56 one on an H200, against 0.074 ms
    for cuDNN's depthwise kernel when the weight reads channels-last (``[RS, 1, S, 1]``, as
    PyTorch's channels-last tensors do); the model went from 3.30 to 2.45 ms. For
    mobilenetv3's 3x3 and 5x5 ones the channels-last description was the slow one (its
    cudnn-only program 0.84 -> 1.53 ms), so smaller windows keep the row-major strides.
    Which description a graph gets should become a tuning choice, timed like its plans."""
    if len(dims) != 4 or dims[1] != 1 or dims[2] * dims[3] < CHANNELS_LAST_DEPTHWISE_TAPS:
        return tuple(strides)
    _, c, r, s = dims
    last = (r * s * c, 1, s * c, c)
    if all(n == 1 or a == b for n, a, b in zip(dims, strides, last)):
        return last
    return tuple(strides)


class _Lowering:
    """Builds the graph body; ``view`` maps a tcp shape to the graph's dims."""

    def __init__(self, group: tcp.IsolatedGroupOp):
        self.group = group
        self.kind = _kind(group)
        self.values: dict[SSAValue, SSAValue] = {}
        self.skip: set[Operation] = set()
        self.block = Block()

    def view(self, shape: Sequence[int]) -> list[int]:
        shape = list(shape)
        if self.kind.startswith("matmul") and len(shape) == 2:
            return [1, *shape]
        if self.kind.startswith("layernorm"):
            if len(shape) == 1:  # scale / bias
                return [1, shape[0], 1, 1]
            return [math.prod(shape[:-1]), shape[-1], 1, 1]
        return shape

    def descriptor(self, arg: SSAValue) -> TensorType:
        uses = [u.operation for u in arg.uses]
        element = element_of(arg)
        if uses and all(isinstance(u, tcp.TransposeOp) for u in uses):
            perms = {ints(u.permutation) for u in uses}  # type: ignore[attr-defined]
            if len(perms) == 1:
                dims, strides = permuted_strides(shape_of(arg), perms.pop())
                self.skip.update(uses)
                return cudnn.descriptor_type(element, dims, strides)
        if uses and all(isinstance(u, tcp.ReshapeOp) for u in uses) and len({shape_of(u.results[0]) for u in uses}) == 1:
            dims = self.view(shape_of(uses[0].results[0]))  # a reshape reads the buffer row-major
            self.skip.update(uses)
            strides = cudnn.row_major_strides(dims)
            if any(_is_conv_weight(r) for u in uses for r in u.results):
                strides = channels_last_if_same_bytes(dims, strides)
            return cudnn.descriptor_type(element, dims, strides)
        dims = self.view(shape_of(arg))
        return cudnn.descriptor_type(element, dims, cudnn.row_major_strides(dims))

    def emit(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def lower(self) -> cudnn.GraphOp:
        body = self.group.body.block
        types = [self.descriptor(a) for a in body.args]
        self.block = Block(arg_types=types)
        for old, new in zip(body.args, self.block.args):
            new.name_hint = old.name_hint
            self.values[old] = new
            for use in old.uses:
                if use.operation in self.skip:
                    self.values[use.operation.results[0]] = new
        outputs, strides = [], []
        for op in body.ops:
            if op in self.skip:
                continue
            if isinstance(op, tcp.YieldOp):
                for v in op.values:
                    value, s = self.output(v)
                    outputs.append(value)
                    strides.append(s)
                self.block.add_op(cudnn.ReturnOp(outputs))
                break
            result = self.node(op)
            result.name_hint = op.results[0].name_hint
            self.values[op.results[0]] = result
        graph = cudnn.GraphOp(list(self.group.captures), [r.type for r in self.group.outputs], strides, self.block)  # type: ignore[misc]
        graph.attributes["kind"] = str_attr(self.kind)
        sites = [op.attributes[SITE_ATTR] for op in self.group.body.block.ops if SITE_ATTR in op.attributes]
        if sites:  # what a tuning spec would match here (``dnnc tune`` reads it back)
            graph.attributes[SITE_ATTR] = sites[0]
        plan = self.group.attributes.get(SPEC_PLAN_ATTR)
        if isinstance(plan, StringAttr):  # a tuning spec's plan: built from it, not tuned
            graph.plan = plan
        return graph

    def output(self, v: SSAValue) -> tuple[SSAValue, list[int]]:
        owner = v.owner
        if isinstance(owner, tcp.TransposeOp) and owner.input in self.values and owner not in self.skip:
            logical = self.values[owner.input]
            perm = ints(owner.permutation)
            dims, strides = permuted_strides(shape_of(v), inverse_permutation(perm))
            if list(dims) == list(shape_of(logical)):
                return logical, strides
        if isinstance(owner, tcp.ReshapeOp) and owner.input in self.values and owner not in self.skip:
            logical = self.values[owner.input]  # a reshape keeps the row-major order of the elements
            return logical, list(cudnn.row_major_strides(shape_of(logical)))
        value = self.values[v]
        return value, list(cudnn.row_major_strides(shape_of(value)))

    def node(self, op: Operation) -> SSAValue:
        if (
            isinstance(op, tcp.TransposeOp)
            and op.results[0].uses
            and all(isinstance(u.operation, tcp.YieldOp) for u in op.results[0].uses)
        ):
            return self.values[op.input]  # an output layout: becomes the output's strides
        if (
            isinstance(op, tcp.ReshapeOp)
            and op.results[0].uses
            and all(isinstance(u.operation, tcp.YieldOp) for u in op.results[0].uses)
        ):
            return self.values[op.input]  # the logical result, written row-major
        args = [self.values[v] for v in op.operands]
        if isinstance(op, tcp.BroadcastOp):
            return args[0]
        if isinstance(op, tcp.Conv2dOp):
            pad = ints(op.padding)  # top, bottom, left, right
            props = {
                "pre_padding": i64_array([pad[0], pad[2]]),
                "post_padding": i64_array([pad[1], pad[3]]),
                "stride": op.stride,
                "dilation": op.dilation,
            }
            return self.emit(cudnn.ConvFpropOp.make(args, props))
        if isinstance(op, (tcp.MatmulOp, tcp.BatchMatmulOp)):
            return self.emit(cudnn.MatmulOp.make(args))
        if isinstance(op, tcp.LayerNormOp):
            return self.emit(cudnn.LayerNormOp.make(args, {"epsilon": op.epsilon}))
        if type(op) in BINARY_MODES:
            return self.emit(cudnn.PointwiseOp.make([args], {"mode": str_attr(BINARY_MODES[type(op)])}))
        mode = unary_mode(op)
        if mode is not None:
            props = {"mode": str_attr(mode)}
            if isinstance(op, tcp.ClampOp):
                _, hi = clamp_bounds(op)
                if hi is not None:
                    props["lower_clip"] = float_attr(0.0)
                    props["upper_clip"] = float_attr(hi)
            return self.emit(cudnn.PointwiseOp.make([args], props))
        raise LoweringError(f"{op.name} on {describe(op.results[0].type)} has no cudnn dialect node")


def lower_group(group: tcp.IsolatedGroupOp) -> cudnn.GraphOp:
    if _kind(group).startswith("sdpa"):
        return _lower_attention(group)
    return _Lowering(group).lower()


def _lower_attention_op(group: tcp.IsolatedGroupOp, op: tcp.AttentionOp) -> cudnn.GraphOp:
    """A ``tcp.attention`` group: q, k and v ``[B, H, S, D]`` are read as they lie."""
    args = list(group.body.block.args)
    if len(group.body.block.ops) != 2 or any(x not in args for x in (op.query, op.key, op.value)):
        raise LoweringError("an attention group must hold the attention alone, on its inputs")
    element = element_of(op.query)
    descriptors = [cudnn.descriptor_type(element, shape_of(x), cudnn.row_major_strides(shape_of(x))) for x in op.operands]
    body = Block(arg_types=descriptors)
    node = cudnn.SdpaOp.make(list(body.args), {"scale": op.scale, "causal": op.causal})
    body.add_op(node)
    body.add_op(cudnn.ReturnOp([node.result]))
    operands = [group.captures[args.index(x)] for x in (op.query, op.key, op.value)]
    strides = [list(cudnn.row_major_strides(shape_of(op.result)))]
    graph = cudnn.GraphOp(operands, [r.type for r in group.outputs], strides, body)  # type: ignore[misc]
    graph.attributes["kind"] = str_attr(_kind(group))
    return graph


def _lower_attention(group: tcp.IsolatedGroupOp) -> cudnn.GraphOp:
    """One ``cudnn.sdpa`` node reading q ``[BH, Sq, D]``, k from kT ``[BH, D, Skv]`` and v
    ``[BH, Skv, Dv]`` through descriptors ``[1, BH, S, D]``; the mask and scale
    constants inside the group become the node's attributes."""
    block = group.body.block
    whole = [op for op in block.ops if isinstance(op, tcp.AttentionOp)]
    if whole:
        return _lower_attention_op(group, whole[0])
    products = [op for op in block.ops if isinstance(op, tcp.BatchMatmulOp)]
    if len(products) != 2:
        raise LoweringError("an attention group needs exactly two batch matmuls")
    first, second = products
    args = list(block.args)
    q, kt, v = first.operands[0], first.operands[1], second.operands[1]
    (bh, sq, d), (_, _, skv), (_, _, dv) = shape_of(q), shape_of(kt), shape_of(v)
    element = element_of(q)
    k_desc = cudnn.descriptor_type(element, [1, bh, skv, d], [bh * d * skv, d * skv, 1, skv])  # read through kT
    if isinstance(kt.owner, tcp.TransposeOp) and ints(kt.owner.permutation) == (0, 2, 1):
        kt = kt.owner.input  # the group was given k itself: head dim contiguous, as cuDNN wants
        k_desc = cudnn.descriptor_type(element, [1, bh, skv, d], cudnn.row_major_strides([1, bh, skv, d]))
    for x in (q, kt, v):
        if x not in args:
            raise LoweringError("attention operands must be group inputs")
    descriptors = [
        cudnn.descriptor_type(element, [1, bh, sq, d], cudnn.row_major_strides([1, bh, sq, d])),
        k_desc,
        cudnn.descriptor_type(element, [1, bh, skv, dv], cudnn.row_major_strides([1, bh, skv, dv])),
    ]
    body = Block(arg_types=descriptors)
    for new, old in zip(body.args, (q, kt, v)):
        new.name_hint = old.name_hint
    scale = group.attributes["scale"]
    props = {"scale": scale, "causal": bool_attr(_kind(group) == "sdpa_causal")}
    node = cudnn.SdpaOp.make(list(body.args), props)
    body.add_op(node)
    body.add_op(cudnn.ReturnOp([node.result]))
    operands = [group.captures[args.index(x)] for x in (q, kt, v)]
    strides = [list(cudnn.row_major_strides([1, bh, sq, dv]))]
    graph = cudnn.GraphOp(operands, [r.type for r in group.outputs], strides, body)  # type: ignore[misc]
    graph.attributes["kind"] = str_attr(_kind(group))
    return graph
