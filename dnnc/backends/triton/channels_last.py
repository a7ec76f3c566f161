"""triton-channels-last: a Triton convolution hands its result on channels-last, as
cuDNN's convolutions do.

``assign-layouts`` makes every cuDNN convolution take and give NHWC tensors, so the
transposes between two of them cancel. A Triton convolution between them read its
NHWC input as index arithmetic but stored NCHW: the next cuDNN convolution then needed
a transpose kernel of its own, and a residual stream through Triton convolutions stayed
NCHW beside its NHWC copy. This pass follows each partitioned ungrouped convolution (an
implicit GEMM whose rows are its output pixels, with a window or without: as fast
writing NHWC as NCHW) with a transpose to NHWC inside its kernel (the same ``dnnc.part``, pinned there so that
``sink-transposes`` does not move it down the epilogue too) and one back to NCHW
outside it. ``sink-transposes`` moves the one back below the epilogue (bias, residual
add, activation), where a neighbour that wants NHWC cancels it (``simplify-shapes``);
a neighbour that wants NCHW takes it into its kernel or this one as index arithmetic,
so no kernel is added either way. Where the convolution's input is also transposed to
NHWC for a cuDNN neighbour, it reads that tensor (``_read_channels_last``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp, TensorType, UnitAttr
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from dnnc.backends.triton import boxes, stem
from dnnc.backends.triton.configs import split_k
from dnnc.backends.triton.fusion import PART_ATTR
from dnnc.backends.triton.skeleton import product_sizes
from dnnc.ir import tcp
from dnnc.ir.analysis import (
    NCHW_INPUTS_ATTR,
    NCHW_OUTPUTS_ATTR,
    PINNED_ATTR,
    TO_NCHW,
    TO_NHWC,
    is_channelwise_conv,
    is_one_by_one_conv,
    is_ungrouped_conv,
    transposes,
)
from dnnc.ir.attrs import i64_array, ints
from dnnc.ir.types import shape_of


def hands_channels_last(op: Operation) -> bool:
    """A partitioned ungrouped 1x1 convolution (strided or not: its rows are its output
    pixels either way), or one with a window whose product splits K (``configs.split_k``:
    few output tiles, a long K), with a used result of more than one pixel per image: on
    one pixel (a squeeze-excite FC) both layouts are one, and the transposes would become
    reshapes the kernel cannot end in. So is a depthwise one: it reads a channels-last
    input on strips of contiguous channels (``kernels._channelwise_strips``) and stores
    them so, where storing NCHW it wrote each channel H x W apart; ConvNeXt's layer norm
    after it reads the channels as rows. Other grouped ones keep their NCHW tiles.

    A windowed convolution of many tiles stays NCHW at its edges: handed channels-last
    too, ResNet-50's 3x3 convolutions at batch 32 were priced on Triton at 0.017-0.025 ms
    and chosen, and ran slower in the program than timed alone (0.928 -> 1.019 ms, H200,
    ``compile-table-2026-11-28-h200-edge-layouts-*.json``).

    A network's stem that a ``stem`` kernel computes is handed channels-last too: that
    kernel stores a pixel's channels at a time, and the max pool after ResNet's stem runs
    NHWC -> NHWC in 19 us at batch 32 on an H200, against 32-37 reading NCHW and storing
    NHWC for the convolutions after it.

    So is a 3x3 convolution that a ``boxes`` kernel computes (``boxes.offered``): that
    kernel reads its input and stores its output as NHWC boxes, and is offered first on
    Hopper. On another GPU such a convolution is a Triton tile reading and storing NHWC
    (measured only on Hopper: not measured there)."""
    if PART_ATTR not in op.attributes or not (is_ungrouped_conv(op) or is_channelwise_conv(op)) or not op.result.uses:
        return False
    if is_ungrouped_conv(op) and not (
        is_one_by_one_conv(op) or split_k(*product_sizes(op)) or stem.fits(op) or boxes.offered(op)
    ):
        return False
    return math.prod(shape_of(op.result)[2:]) > 1


def _read_channels_last(conv: tcp.Conv2dOp) -> None:
    """Where the convolution's NCHW input is also transposed to NHWC for another reader (a
    cuDNN convolution beside it), it reads that NHWC tensor instead, through a transpose
    back pinned in its kernel: its producer (a pooling, say) then stores one layout, not
    NCHW for this kernel and a transpose kernel's NHWC copy for the other."""
    source = conv.input
    if isinstance(source.owner, tcp.TransposeOp):  # read through a transpose already
        return
    nhwc = next(
        (
            u.operation
            for u in source.uses
            if isinstance(u.operation, tcp.TransposeOp)
            and tuple(ints(u.operation.permutation)) == TO_NHWC
            and PINNED_ATTR not in u.operation.attributes
            and u.operation.parent_block() is conv.parent_block()
        ),
        None,
    )
    if nhwc is None:
        return
    block = conv.parent_block()
    assert block is not None
    if block.get_operation_index(nhwc) > block.get_operation_index(conv):  # it reads ``source``, defined before
        nhwc.detach()
        Rewriter.insert_op(nhwc, InsertPoint.before(conv))
    back = tcp.TransposeOp.make([nhwc.results[0]], {"permutation": i64_array(TO_NCHW)})
    back.attributes[PART_ATTR] = conv.attributes[PART_ATTR]
    back.attributes[PINNED_ATTR] = UnitAttr()
    Rewriter.insert_op(back, InsertPoint.before(conv))
    conv.operands[0] = back.result


@dataclass(frozen=True)
class TritonChannelsLast(ModulePass):
    name = "triton-channels-last"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for conv in [o for o in op.walk() if hands_channels_last(o)]:
            assert isinstance(conv, tcp.Conv2dOp)
            _read_channels_last(conv)
            to_nhwc = tcp.TransposeOp.make([conv.result], {"permutation": i64_array(TO_NHWC)})
            to_nhwc.attributes[PART_ATTR] = conv.attributes[PART_ATTR]
            to_nhwc.attributes[PINNED_ATTR] = UnitAttr()
            back = tcp.TransposeOp.make([to_nhwc.result], {"permutation": i64_array(TO_NCHW)})
            Rewriter.insert_op([to_nhwc, back], InsertPoint.after(conv))
            conv.result.replace_uses_with_if(back.result, lambda use, own=to_nhwc: use.operation is not own)


@dataclass(frozen=True)
class ChannelsLastBoundary(ModulePass):
    """A program holding a Triton convolution (``hands_channels_last``) takes and gives
    its 4-D tensors channels-last, with transposes to and from NCHW at its edge.

    For timing a candidate alone (``partition.measure``): in the whole program its
    neighbours hand it and take from it channels-last tensors (cuDNN convolutions, other
    Triton convolutions; an input the program hands NCHW, a group norm's result, is named
    in ``NCHW_INPUTS_ATTR`` by ``partition.extract`` and stays NCHW), so ``triton-channels-last`` and ``sink-transposes`` cancel
    these transposes and the kernel timed reads and writes NHWC as it will run. Timed on
    NCHW tensors it ran another kernel: a 1x1 one pointer tiles over strided pixels where
    the program's reads TMA tiles of rows; a 3x3 one K tiles of channels H x W apart,
    where the program's are contiguous (ResNet-50's stage-1 3x3 convolution at batch 32
    on an H200: 0.089 ms timed so, against 0.022-0.025 reading NHWC, so it never ran)."""

    name = "triton-channels-last-boundary"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in [o for o in op.walk() if isinstance(o, func.FuncOp)]:
            if any(hands_channels_last(o) for o in fn.walk()):
                _channels_last_edges(fn)
            fn.attributes.pop(NCHW_INPUTS_ATTR, None)
            fn.attributes.pop(NCHW_OUTPUTS_ATTR, None)


def _spatial(t: Attribute) -> bool:
    return isinstance(t, TensorType) and len(t.get_shape()) == 4 and math.prod(t.get_shape()[2:]) > 1


def _channels_last_edges(fn: func.FuncOp) -> None:
    """Every 4-D argument but those the program hands NCHW (``NCHW_INPUTS_ATTR``) and every
    4-D result but those its readers take NCHW (``NCHW_OUTPUTS_ATTR``) channels-last. A
    value the group itself moves between the layouts is channels-last as it is: an
    argument it only transposes NHWC -> NCHW, or a result it transposed NCHW -> NHWC (the
    model's own permutes, ConvNeXt's around its layer norm).
    Transposed again, a depthwise convolution's group ending in such a permute was timed
    storing its channels W apart: 29 us alone where it runs in 15.7 (ConvNeXt-T's stage-2
    convolution at batch 32, H200), and cuDNN's 42 us kept the others."""
    block = fn.body.block
    first = block.first_op
    kept = fn.attributes.get(NCHW_INPUTS_ATTR)
    nchw = {block.args[i] for i in ints(kept)} if kept is not None else set()
    nchw |= {a for a in block.args if a.uses and all(transposes(u.operation, TO_NCHW) for u in a.uses)}
    for arg in [a for a in block.args if _spatial(a.type) and a not in nchw]:
        n, c, h, w = shape_of(arg)
        nhwc = block.insert_arg(TensorType(arg.type.element_type, [n, h, w, c]), arg.index)  # type: ignore[attr-defined]
        back = tcp.TransposeOp.make([nhwc], {"permutation": i64_array(TO_NCHW)})
        if first is None:
            block.add_op(back)
        else:
            Rewriter.insert_op(back, InsertPoint.before(first))
        arg.replace_all_uses_with(back.result)
        block.erase_arg(arg)
    ret = block.last_op
    assert isinstance(ret, func.ReturnOp)
    kept = fn.attributes.get(NCHW_OUTPUTS_ATTR)
    nchw_results = set(ints(kept)) if kept is not None else set()
    results = []
    for i, v in enumerate(ret.operands):
        if _spatial(v.type) and i not in nchw_results and not transposes(v.owner, TO_NHWC):
            to_nhwc = tcp.TransposeOp.make([v], {"permutation": i64_array(TO_NHWC)})
            Rewriter.insert_op(to_nhwc, InsertPoint.before(ret))
            v = to_nhwc.result
        results.append(v)
    Rewriter.replace_op(ret, func.ReturnOp(*results))
    fn.function_type = FunctionType.from_lists([a.type for a in block.args], [v.type for v in results])
