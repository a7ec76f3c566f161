"""assign-layouts: convolutions run NHWC (activations) and KRSC (weights).

cuDNN's fast convolution engines want channels-last tensors. For every cuDNN conv
group this pass makes the group take and return channels-last tensors: outside the
group an explicit ``tcp.transpose`` to NHWC before, and one back to NCHW after;
inside, the inverse transpose, so the group means exactly what it meant before.
Then ``simplify-shapes`` cancels the back-and-forth pairs between consecutive
groups (activations stay NHWC across conv chains), ``fold-params`` turns the
transposed weights into new KRSC parameters once at compile time, and
``lower-cudnn`` reads the transposes at the group boundary as descriptor strides.
A transpose survives only where a non-cuDNN op needs NCHW.

fp16/bf16 tensor cores want channel counts that are multiples of 8, and cuDNN has
first-layer kernels for exactly 4: a conv whose input has fewer (the RGB stem) gets
its NHWC input zero-padded in C and its weight padded to match (folded at compile
time); zeros add nothing to the sums.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, bf16, f16
from xdsl.ir import Block, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from dnnc.backends.interface import GROUP_BACKEND_ATTR, GROUP_KIND_ATTR, group_attr
from dnnc.ir import tcp
from dnnc.ir.analysis import TO_NCHW, TO_NHWC
from dnnc.ir.attrs import float_attr, i64_array, scalar
from dnnc.ir.outline import capture_transposed, replace_capture
from dnnc.ir.types import element_of, shape_of


def transpose(value: SSAValue, perm: tuple[int, ...]) -> tcp.TransposeOp:
    return tcp.TransposeOp.make([value], {"permutation": i64_array(perm)})


def is_cudnn_conv_group(op: object) -> bool:
    return (
        isinstance(op, tcp.IsolatedGroupOp)
        and group_attr(op, GROUP_BACKEND_ATTR) == "cudnn"
        and (group_attr(op, GROUP_KIND_ATTR) or "").startswith("conv")
    )


@dataclass(frozen=True)
class AssignLayouts(ModulePass):
    name = "assign-layouts"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in op.walk():
            if isinstance(fn, func.FuncOp):
                made: dict[tuple[SSAValue, tuple[int, ...]], SSAValue] = {}
                for group in [g for g in fn.body.block.ops if is_cudnn_conv_group(g)]:
                    channels_last(group, made)


def channels_last(group: tcp.IsolatedGroupOp, made: dict[tuple[SSAValue, tuple[int, ...]], SSAValue]) -> tcp.IsolatedGroupOp:
    """``made`` remembers the NHWC copies already made, so a tensor read by two
    groups (a residual and a conv input) is transposed once."""
    block = group.body.block
    conv = next(o for o in block.ops if isinstance(o, tcp.Conv2dOp))
    out_shape = shape_of(conv.result)
    for index, arg in enumerate(list(block.args)):
        if arg is conv.input or arg is conv.weight or shape_of(arg) == out_shape:
            _arg_to_nhwc(group, index, made)
    _pad_input_channels(group, block, conv)
    return _results_to_nhwc(group)


CHANNEL_MULTIPLE = 8
FIRST_LAYER_CHANNELS = 4
"""Inputs of up to this many channels are padded to it, not to ``CHANNEL_MULTIPLE``:
cuDNN's first-layer engines take 4 channels. ResNet-50's 7x7 stride-2 stem at b128 ran
0.208 ms on 4 channels and 0.611 on 8 (best plans); a 3x3 stride-2 stem at b32, 0.017
and 0.033 (H200, cuDNN 9.19)."""


def padded_channels(channels: int) -> int:
    """The channel count a convolution's fp16/bf16 input is padded to."""
    if channels <= FIRST_LAYER_CHANNELS:
        return FIRST_LAYER_CHANNELS
    return channels + -channels % CHANNEL_MULTIPLE


def _pad_input_channels(group: tcp.IsolatedGroupOp, block: Block, conv: tcp.Conv2dOp) -> None:
    channels = shape_of(conv.input)[1]
    pad = padded_channels(channels) - channels
    if element_of(conv.input) not in (bf16, f16) or int(scalar(conv.groups)) != 1 or pad == 0:
        return
    for operand in (conv.input, conv.weight):
        back = operand.owner  # the transpose from the NHWC/KRSC block argument
        if not isinstance(back, tcp.TransposeOp) or back.input not in block.args:
            return
    for operand in (conv.input, conv.weight):
        back = operand.owner
        assert isinstance(back, tcp.TransposeOp)
        index = block.args.index(back.input)
        padded = tcp.PadOp.make(
            [group.operands[index]], {"low": i64_array([0, 0, 0, 0]), "high": i64_array([0, 0, 0, pad]), "value": float_attr(0.0)}
        )
        Rewriter.insert_op(padded, InsertPoint.before(group))
        replace_capture(group, index, padded.result, lambda _, new, back=back: Rewriter.replace_op(back, transpose(new, TO_NCHW)))
    # the conv's result type does not change: padded channels meet zero weights


def _arg_to_nhwc(group: tcp.IsolatedGroupOp, index: int, made: dict[tuple[SSAValue, tuple[int, ...]], SSAValue]) -> None:
    source = group.operands[index]
    if (source, TO_NHWC) not in made:
        outside = transpose(source, TO_NHWC)
        Rewriter.insert_op(outside, InsertPoint.before(group))
        made[(source, TO_NHWC)] = outside.result
    capture_transposed(group, index, made[(source, TO_NHWC)], TO_NCHW)


def _results_to_nhwc(group: tcp.IsolatedGroupOp) -> tcp.IsolatedGroupOp:
    block = group.body.block
    yield_op = block.last_op
    assert isinstance(yield_op, tcp.YieldOp)
    values = []
    for v in yield_op.values:
        if len(shape_of(v)) == 4:
            t = transpose(v, TO_NHWC)
            Rewriter.insert_op(t, InsertPoint.before(yield_op))
            v = t.result
        values.append(v)
    Rewriter.replace_op(yield_op, tcp.YieldOp(values))
    group.body.detach_block(block)
    new = tcp.IsolatedGroupOp(list(group.operands), [v.type for v in values], block)  # type: ignore[misc]
    new.attributes.update(group.attributes)
    Rewriter.insert_op(new, InsertPoint.before(group))
    for old_result, new_result in zip(group.outputs, new.outputs):
        new_result.name_hint = old_result.name_hint
        if len(shape_of(old_result)) == 4:
            back = transpose(new_result, TO_NCHW)
            Rewriter.insert_op(back, InsertPoint.after(new))
            old_result.replace_all_uses_with(back.result)
        else:
            old_result.replace_all_uses_with(new_result)
    group.detach()
    group.erase()
    return new
