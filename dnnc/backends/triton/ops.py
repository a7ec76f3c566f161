"""Which role each tcp op plays in a Triton kernel.

Fusion and code generation agree on one classification:

* *index ops* (elementwise ops, ``reshape/broadcast/transpose/slice/pad/concat/gather``,
  ``take_along``, ``scatter`` (a loop over its indices along the axis),
  ``batch_norm``, ``constant``, ``iota``) compute an element from elements of their
  operands at computable positions, so any kernel evaluates them as index
  arithmetic at the positions it needs; they never need memory of their own;
* *anchors* need a loop over many elements per result (``reduce_*``, ``softmax``,
  ``layer_norm``, ``rms_norm``, ``cumsum``, ``argmax``/``argmin``, ``topk``, pooling)
  or a tiled product (``matmul``, ``batch_matmul``,
  ``conv2d``, ``attention``); a kernel holds at most one, and it names the kernel's kind,
  except for two convolutions whose results are summed (``summed_products``).

A group without an anchor is ``pointwise`` (one flat loop over its outputs), or
``transpose`` when its main input is contiguous along another axis than its output
(``layout.tile_axes``): a kernel tiled over both axes, so loads and stores are
both coalesced.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from xdsl.ir import Operation, SSAValue

from dnnc.backends.triton.layout import tile_axes
from dnnc.ir import tcp
from dnnc.ir.analysis import TO_NCHW, is_ungrouped_conv, transposes

ELEMENTWISE = (*tcp.ELEMENTWISE_OPS,)
MOVES = (
    tcp.ReshapeOp,
    tcp.BroadcastOp,
    tcp.TransposeOp,
    tcp.SliceOp,
    tcp.PadOp,
    tcp.ConcatOp,
    tcp.GatherOp,
    tcp.TakeAlongOp,
    tcp.ScatterOp,
)
INDEX_OPS = (*ELEMENTWISE, *MOVES, tcp.BatchNormOp, tcp.ConstantOp, tcp.IotaOp)
LAYOUT_OPS = (tcp.ReshapeOp, tcp.TransposeOp, tcp.SliceOp, tcp.PadOp)
"""Index ops that may follow a pooling anchor: each output element reads one pooled element."""
ROW_ANCHORS = (
    tcp.ReduceSumOp,
    tcp.ReduceMaxOp,
    tcp.ReduceMeanOp,
    tcp.SoftmaxOp,
    tcp.LayerNormOp,
    tcp.RmsNormOp,
    tcp.CumsumOp,
    tcp.ArgmaxOp,
    tcp.ArgminOp,
)
"""Anchors of row kernels that may also store values of their input's shape computed
on the way in (a residual sum before a norm)."""
SELECT_ANCHORS = (tcp.TopkOp,)
"""Row anchors whose results are stored as they are: nothing fuses after them."""
POOL_ANCHORS = (tcp.MaxPool2dOp, tcp.AvgPool2dOp)
MATMUL_ANCHORS = (tcp.MatmulOp, tcp.BatchMatmulOp)
CONV_ANCHORS = (tcp.Conv2dOp,)
ATTENTION_ANCHORS = (tcp.AttentionOp,)
ANCHORS = (*ROW_ANCHORS, *SELECT_ANCHORS, *POOL_ANCHORS, *MATMUL_ANCHORS, *CONV_ANCHORS, *ATTENTION_ANCHORS)
PRODUCT_ANCHORS = (*MATMUL_ANCHORS, *CONV_ANCHORS)

KIND_OF_ANCHOR: dict[type[Operation], str] = {
    tcp.ReduceSumOp: "reduce",
    tcp.ReduceMaxOp: "reduce",
    tcp.ReduceMeanOp: "reduce",
    tcp.SoftmaxOp: "softmax",
    tcp.LayerNormOp: "layer_norm",
    tcp.RmsNormOp: "rms_norm",
    tcp.CumsumOp: "scan",
    tcp.ArgmaxOp: "reduce",
    tcp.ArgminOp: "reduce",
    tcp.TopkOp: "topk",
    tcp.MaxPool2dOp: "pool",
    tcp.AvgPool2dOp: "pool",
    tcp.MatmulOp: "matmul",
    tcp.BatchMatmulOp: "matmul",
    tcp.Conv2dOp: "conv2d",
    tcp.AttentionOp: "attention",
}
KINDS = (
    "pointwise",
    "transpose",
    "reduce",
    "softmax",
    "layer_norm",
    "rms_norm",
    "scan",
    "topk",
    "pool",
    "matmul",
    "conv2d",
    "attention",
)
"""Every kernel kind; ``pointwise`` and ``transpose`` are groups with no anchor."""


def summed_products(anchors: Sequence[Operation]) -> bool:
    """Two ungrouped, non-depthwise convolutions with one result type: one kernel can
    run both, a K loop each over the same output tile, and join them in its epilogue.

    A ResNet block that changes its width ends with ``relu(expand(y) + b1 +
    downsample(x) + b2)``: run apart, the downsample's result (as large as the block's
    output) is written and read back by the expansion's epilogue. At batch 128 on an
    H200 the two took 92 + 124 us in stage 1, where the bytes of one kernel reading
    both inputs and writing once take 73 us at the copy bandwidth."""
    if len(anchors) != 2 or not all(is_ungrouped_conv(op) for op in anchors):
        return False
    first, second = anchors
    return first.results[0].type == second.results[0].type


def is_index_op(op: Operation) -> bool:
    return _is(type(op), INDEX_OPS)


def is_anchor(op: Operation) -> bool:
    return _is(type(op), ANCHORS)


@functools.cache
def _is(kind: type, kinds: tuple[type, ...]) -> bool:
    """``issubclass`` once per op class: the ops' classes are ABCs, whose checks against
    a long tuple dominated the fusion legality checks the partitioner runs thousands of times."""
    return issubclass(kind, kinds)


def kind_of(ops: Sequence[Operation], outputs: Sequence[SSAValue]) -> str:
    """The kind of the kernel computing ``outputs`` from ``ops`` (and values from outside)."""
    anchors = [op for op in ops if is_anchor(op)]
    if anchors:
        return KIND_OF_ANCHOR[type(anchors[0])]
    members = set(ops)
    return "transpose" if tile_axes(outputs, members.__contains__) else "pointwise"


def reads_channels_last_through_elementwise(op: tcp.Conv2dOp) -> bool:
    """Whether the convolution's input is a channels-last tensor brought back to NCHW in
    its kernel with elementwise ops of one operand after the transpose (a ReLU6 whose
    producer ran in cuDNN): each element still reads one element of the NHWC tensor."""
    v = op.input
    while isinstance(v.owner, ELEMENTWISE) and len(v.owner.operands) == 1:
        v = v.owner.operands[0]
    return transposes(v.owner, TO_NCHW)


def reads_channels_last(op: tcp.Conv2dOp) -> bool:
    """Whether the convolution's input is a channels-last tensor brought back to NCHW in
    its kernel (a transpose prologue): its channels are the contiguous axis in memory."""
    return transposes(op.input.owner, TO_NCHW)
