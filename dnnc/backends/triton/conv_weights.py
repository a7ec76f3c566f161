"""triton-conv-weights: a partitioned Triton convolution that reads a channels-last input
reads its weight channels-last too.

Such a convolution's K runs over (kh, kw, input channel), channels fastest, so a K tile
reads the NHWC input along its contiguous axis (``kernels._conv_operands``). Its weight,
stored OIHW, then has its channels 9 elements apart for a 3x3 window: every 2-byte value
of a weight tile was its own 32-byte sector. At batch 1 the weight is the larger operand
by far (ResNet-50's stage-4 3x3 convolution: 4.7 MB of weight, 50 KB of input), and the
convolution took 19 us split eight ways where cuDNN's took 12.6 (H100,
``bench/split_k_probe.py``). Here the weight parameter is stored again as OHWI (a new
parameter, the old one dropped when nothing else reads it) and brought back to OIHW by a
transpose in the convolution's kernel (its ``dnnc.part``): index arithmetic on the load, so
a K tile reads the weight along its channels as well.

It runs after ``fold-params`` (which would fold the transpose back into an OIHW parameter)
and before ``triton-fuse``. Only a window larger than one pixel and a weight that is a
parameter qualify: a 1x1 weight is OI either way. A depthwise convolution's weight is
stored IHWO instead (``TO_IHWO``): its kernel reads one tap for many output channels.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.rewriter import InsertPoint, Rewriter

from dnnc.backends.triton.fusion import PART_ATTR
from dnnc.backends.triton.ops import reads_channels_last
from dnnc.ir import tcp
from dnnc.ir.analysis import TO_NCHW, is_channelwise_conv
from dnnc.ir.attrs import i64_array
from dnnc.ir.params import ParamStore
from dnnc.ir.rewriting import ParamPass
from dnnc.ir.types import shape_of

TO_OHWI = (0, 2, 3, 1)
"""OIHW -> OHWI (the weight's channels innermost), the same permutation as NCHW -> NHWC."""
TO_IHWO = (1, 2, 3, 0)
"""OIHW -> IHWO (the output channels innermost): a depthwise weight ``[O, 1, KH, KW]`` as
``[1, KH, KW, O]``, one tap's weights contiguous along the channels its kernel's tile runs
along (``kernels._channelwise_strips``); OHWI would leave them KH x KW apart."""
FROM_IHWO = (3, 0, 1, 2)


def reads_weight_channels_first(op: object) -> bool:
    """A partitioned convolution with a window, reading a channels-last input, whose
    weight is a stored OIHW parameter."""
    if not isinstance(op, tcp.Conv2dOp) or PART_ATTR not in op.attributes or not reads_channels_last(op):
        return False
    _, _, kh, kw = shape_of(op.weight)
    return kh * kw > 1 and isinstance(op.weight.owner, tcp.ParamOp)


@dataclass(frozen=True)
class TritonConvWeights(ParamPass):
    name = "triton-conv-weights"

    def apply_with_params(self, ctx: Context, op: ModuleOp, params: ParamStore) -> None:
        stored: dict[tuple[str, str], str] = {}  # (an OIHW parameter, layout) -> its copy (a weight shared by two convolutions)
        for conv in [o for o in op.walk() if reads_weight_channels_first(o)]:
            assert isinstance(conv, tcp.Conv2dOp)
            source = conv.weight.owner
            assert isinstance(source, tcp.ParamOp)
            layout, to, back_to = ("ihwo", TO_IHWO, FROM_IHWO) if is_channelwise_conv(conv) else ("ohwi", TO_OHWI, TO_NCHW)
            key = (source.param_name, layout)
            if key not in stored:
                stored[key] = params.fresh_name(f"{source.param_name}.{layout}")
                params.add(stored[key], params[source.param_name].permute(*to).contiguous())
            element = conv.weight.type.element_type  # type: ignore[attr-defined]
            shape = shape_of(conv.weight)
            copy = tcp.ParamOp(stored[key], TensorType(element, [shape[a] for a in to]))
            back = tcp.TransposeOp.make([copy.result], {"permutation": i64_array(back_to)})
            back.attributes[PART_ATTR] = conv.attributes[PART_ATTR]
            Rewriter.insert_op([copy, back], InsertPoint.before(conv))
            conv.operands = [conv.operands[0], back.result, *conv.operands[2:]]
