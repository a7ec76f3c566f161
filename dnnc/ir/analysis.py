"""Facts about values that several passes need."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from xdsl.dialects import func
from xdsl.ir import Block, Operation, SSAValue
from xdsl.traits import IsTerminator

from dnnc.ir import tcp
from dnnc.ir.attrs import ints, scalar
from dnnc.ir.types import numel, shape_of

SOURCE_OPS = tcp.SOURCE_OPS


def inner_op_names(op: Operation) -> list[str]:
    """The ops inside ``op``'s body by short name (a group's, a cuDNN graph's), its
    terminator left out; the op's own name where it has no body."""
    names = [inner.name.split(".")[-1] for region in op.regions for block in region.blocks for inner in block.ops]
    return [n for n in names if n not in ("yield", "return")] or [op.name.split(".")[-1]]


def compile_time_values(block: Block) -> set[SSAValue]:
    """Values computable before any input is known: sources, and pure tcp ops whose
    operands are all compile-time (isolated groups are left to their backend)."""
    known: set[SSAValue] = set()
    for op in block.ops:
        if isinstance(op, SOURCE_OPS) or (
            isinstance(op, tcp.TcpOp)
            and not op.regions  # groups and graphs are left to their backend
            and not op.has_trait(IsTerminator)
            and op.operands
            and all(v in known for v in op.operands)
        ):
            known.update(op.results)
    return known


def is_compile_time(value: SSAValue) -> bool:
    """Whether ``value`` depends on sources only (an iterative walk: deep graphs
    must not hit the recursion limit)."""
    stack, seen = [value], set()
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        owner = v.owner
        if isinstance(owner, SOURCE_OPS):
            continue
        if not isinstance(owner, tcp.TcpOp) or owner.regions or not owner.operands:
            return False
        stack.extend(owner.operands)
    return True


OUTPUT_VIEW_SHARE = 0.9
"""A returned slice keeping at least this share of its input is handed out as a view."""


def is_output_view(op: Operation) -> bool:
    """A unit-stride slice that keeps nearly all of its input and feeds only the program's
    results (the columns of a padded product): it runs as a view, and the copy every
    returned value gets copies the span it covers, a few percent more than its elements,
    instead of a kernel writing it out first."""
    if not isinstance(op, tcp.SliceOp) or not op.result.uses:
        return False
    if any(not isinstance(use.operation, func.ReturnOp) for use in op.result.uses):
        return False
    if any(s != 1 for s in ints(op.strides)):
        return False
    return numel(op.result) >= OUTPUT_VIEW_SHARE * numel(op.input)


def moves_no_data(op: Operation) -> bool:
    """A top-level op no backend takes that runs as a view: a row-major reshape, or a
    returned slice."""
    return isinstance(op, tcp.ReshapeOp) or is_output_view(op)


TO_NHWC = (0, 2, 3, 1)
"""The permutation that takes NCHW data channels-last."""
TO_NCHW = (0, 3, 1, 2)
"""The permutation that takes channels-last data back to NCHW."""


def permutes_as_reshape(shape: Sequence[int], perm: Sequence[int]) -> bool:
    """Whether transposing a tensor of ``shape`` by ``perm`` keeps the order of all its
    dimensions larger than 1: a reshape, no data moved."""
    kept = [p for p in perm if shape[p] != 1]
    return kept == sorted(kept)


def inverse_permutation(perm: Sequence[int]) -> list[int]:
    """``q`` with ``q[perm[i]] = i``: the transpose that undoes ``perm``."""
    out = [0] * len(perm)
    for i, p in enumerate(perm):
        out[p] = i
    return out


def splat_value(value: SSAValue) -> float | int | None:
    """The one value of a splat constant, seen through broadcasts, reshapes and casts; else None."""
    owner = value.owner
    while isinstance(owner, tcp.BroadcastOp | tcp.ReshapeOp | tcp.CastOp):
        owner = owner.input.owner
    return owner.scalar if isinstance(owner, tcp.ConstantOp) else None  # type: ignore[return-value]


def is_one_by_one_conv(op: object) -> bool:
    """A 1x1 unpadded convolution, of any stride: each output pixel reads one input pixel
    (the one its stride puts it on), every tap inside the input."""
    if not isinstance(op, tcp.Conv2dOp):
        return False
    _, _, kh, kw = shape_of(op.weight)
    return (kh, kw) == (1, 1) and not any(ints(op.padding))


def is_ungrouped_conv(op: object) -> bool:
    """A convolution every output channel of which reads every input channel: an implicit
    GEMM whose K runs over all input channels (not a grouped or depthwise one)."""
    return isinstance(op, tcp.Conv2dOp) and int(scalar(op.groups)) == 1


def transposes(op: object, permutation: tuple[int, ...]) -> bool:
    """Whether ``op`` is a transpose by ``permutation`` (``TO_NHWC``, ``TO_NCHW``)."""
    return isinstance(op, tcp.TransposeOp) and tuple(ints(op.permutation)) == permutation


def is_channelwise_conv(op: object) -> bool:
    """A convolution whose every output channel reads one input channel (depthwise, with
    or without a channel multiplier): as an implicit GEMM its tiles would be one column
    wide, so Triton gives it a kernel of its own (``kernels._channelwise_conv``)."""
    return isinstance(op, tcp.Conv2dOp) and shape_of(op.weight)[1] == 1 and int(scalar(op.groups)) > 1


def is_pixelwise_conv(op: object) -> bool:
    """A 1x1, stride-1, unpadded convolution: each output pixel reads its own input pixel,
    so as an implicit GEMM it is a plain GEMM over the pixels, and its rows are as
    contiguous in an NHWC tensor as in an NCHW one."""
    return is_one_by_one_conv(op) and tuple(ints(op.stride)) == (1, 1)  # type: ignore[attr-defined]


def has_one_use(value: SSAValue) -> bool:
    uses = iter(value.uses)
    return next(uses, None) is not None and next(uses, None) is None


PINNED_ATTR = "dnnc.pinned"
"""On a transpose a pass placed where it is on purpose (a kernel's output layout,
``triton-channels-last``): ``sink-transposes`` does not move it."""


NCHW_OUTPUTS_ATTR = "dnnc.nchw_outputs"
"""On a group holding a depthwise convolution extracted to be timed alone
(``partition.extract``): the 4-D results that the whole program's readers take NCHW
(``taken_channels_last`` is false for them), which ``triton-channels-last-boundary``
leaves NCHW."""


def taken_channels_last(value: SSAValue) -> bool:
    """Whether every reader of a 4-D value takes it channels-last in a GPU program: a
    convolution's input (cuDNN's and Triton's read NHWC), a transpose to NHWC (a model's
    own permute), elementwise ops whose results are taken so, a lone reduction or pooling,
    or a reduction of short rows (``SHORT_ROWS``) beside none but such elementwise readers
    (``sink-transposes`` moves the transpose back to NCHW through those, and the
    reduction's kernel reads it as rows of channels, ``fusion.reduction_prologue``): a
    squeeze-excite block's mean beside its scaling.
    Where another reader takes the value NCHW, it is stored NCHW: a depthwise
    convolution's kernel then stores its channels H x W apart."""
    known: dict[SSAValue, bool] = {}

    def taken(v: SSAValue) -> bool:
        if v not in known:
            readers = [u.operation for u in v.uses]
            known[v] = bool(readers) and all(_takes_channels_last(u.operation, u.index, readers, taken) for u in v.uses)
        return known[v]

    return taken(value)


def _takes_channels_last(op: Operation, index: int, readers: list[Operation], taken: Callable[[SSAValue], bool]) -> bool:
    if isinstance(op, tcp.Conv2dOp):
        return index == 0
    if isinstance(op, tcp.TransposeOp):
        return transposes(op, TO_NHWC)
    if isinstance(op, (tcp.ReduceOp, tcp.MaxPool2dOp, tcp.AvgPool2dOp)):
        if len(readers) == 1:
            return True
        return reduces_short_rows(op) and sum(not isinstance(r, tcp.ELEMENTWISE_OPS) for r in readers) == 1
    if isinstance(op, tcp.ELEMENTWISE_OPS):
        return all(len(shape_of(r)) == 4 and taken(r) for r in op.results)
    return False


SHORT_ROWS = 1024
"""The longest rows (elements reduced into one) of a reduction that reads a channels-last
tensor beside another reader of it. A squeeze-excite block's mean over H, W of an NHWC
tensor runs one program per tile of channels down the whole image: EfficientNet-B0's
56 x 56 means at batch 32 ran 51.7 and 82.0 us so, storing the activation before them
NHWC, against 23.3 and 34.2 us storing it NCHW; at 28 x 28 (784) both ran 6.5-7.5 us
(H200, ``compile-profile-2026-11-30-h200-mobilenetv3-efficientnet-b32-squeeze-excite.json``)."""


def reduces_short_rows(op: Operation) -> bool:
    """A reduction whose rows hold at most ``SHORT_ROWS`` elements."""
    if not isinstance(op, tcp.ReduceOp):
        return False
    shape = shape_of(op.operands[0])
    return math.prod(shape[a] for a in ints(op.axes)) <= SHORT_ROWS


NCHW_INPUTS_ATTR = "dnnc.nchw_inputs"
"""On a group extracted to be timed alone (``partition.extract``): the 4-D inputs that the
whole program hands it NCHW (``handed_channels_last`` is false for them), which
``triton-channels-last-boundary`` leaves NCHW."""


def handed_channels_last(value: SSAValue) -> bool:
    """Whether a 4-D value reaches its readers channels-last in a GPU program: an ungrouped
    convolution's result (cuDNN's and Triton's convolutions store NHWC), seen through the
    elementwise ops and poolings that ``sink-transposes`` runs in its layout, or a
    channels-last tensor brought back to NCHW. A norm's or a product's result, a program
    input, arrive NCHW: a convolution reading one reads its channels H x W apart."""
    seen: set[Operation] = set()
    stack = [value]
    while stack:
        owner = stack.pop().owner
        if not isinstance(owner, Operation) or owner in seen:
            continue
        seen.add(owner)
        if isinstance(owner, tcp.Conv2dOp):
            if is_ungrouped_conv(owner):
                return True
        elif isinstance(owner, tcp.TransposeOp):
            if tuple(ints(owner.permutation)) == TO_NCHW:
                return True
        elif isinstance(owner, (*tcp.ELEMENTWISE_OPS, tcp.MaxPool2dOp, tcp.AvgPool2dOp)):
            stack.extend(v for v in owner.operands if len(shape_of(v)) == 4)
    return False
