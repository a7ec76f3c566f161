"""triton-channels-last: a Triton 1x1 convolution hands its result on channels-last, as
cuDNN's convolutions do.

``assign-layouts`` makes every cuDNN convolution take and give NHWC tensors, so the
transposes between two of them cancel. A Triton convolution between them read its
NHWC input as index arithmetic but stored NCHW: the next cuDNN convolution then needed
a transpose kernel of its own, and a residual stream through Triton convolutions stayed
NCHW beside its NHWC copy. This pass follows each partitioned 1x1 convolution (stride
1, no padding: a GEMM over pixels, as fast reading and writing NHWC as NCHW) with a
transpose to NHWC inside its kernel (the same ``dnnc.part``, pinned there so that
``sink-transposes`` does not move it down the epilogue too) and one back to NCHW
outside it. ``sink-transposes`` moves the one back below the epilogue (bias, residual
add, activation), where a neighbour that wants NHWC cancels it (``simplify-shapes``);
a neighbour that wants NCHW takes it into its kernel or this one as index arithmetic,
so no kernel is added either way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from dnnc.backends.triton.fusion import PART_ATTR
from dnnc.backends.triton.ops import is_pixelwise_conv
from dnnc.ir import tcp
from dnnc.ir.analysis import PINNED_ATTR, TO_NCHW, TO_NHWC
from dnnc.ir.attrs import i64_array, scalar
from dnnc.ir.types import shape_of


@dataclass(frozen=True)
class TritonChannelsLast(ModulePass):
    name = "triton-channels-last"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for conv in [o for o in op.walk() if isinstance(o, tcp.Conv2dOp) and PART_ATTR in o.attributes]:
            if not is_pixelwise_conv(conv) or scalar(conv.groups) != 1 or not conv.result.uses:
                continue
            if math.prod(shape_of(conv.result)[2:]) == 1:
                continue  # one pixel (a squeeze-excite FC): both layouts are one, and the transposes would become reshapes the kernel cannot end in
            to_nhwc = tcp.TransposeOp.make([conv.result], {"permutation": i64_array(TO_NHWC)})
            to_nhwc.attributes[PART_ATTR] = conv.attributes[PART_ATTR]
            to_nhwc.attributes[PINNED_ATTR] = UnitAttr()
            back = tcp.TransposeOp.make([to_nhwc.result], {"permutation": i64_array(TO_NCHW)})
            Rewriter.insert_op([to_nhwc, back], InsertPoint.after(conv))
            conv.result.replace_uses_with_if(back.result, lambda use, own=to_nhwc: use.operation is not own)
