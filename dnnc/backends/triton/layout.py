"""Which axis of a kernel's iteration space its loads are contiguous along.

A kernel that walks its output in row-major order stores coalesced, but reads an
input whose dimensions are permuted relative to the output (``tcp.transpose``
NCHW <-> NHWC) with a stride between neighbouring lanes. ``source_axes`` follows
the index ops of a group backwards from a value and tells, for every tensor the
group reads from memory, which axis of that value each of its axes moves with;
``tile_axes`` uses it to pick the two output axes of a tiled kernel (loads along
one, stores along the other), and row kernels use it to see whether their input is
contiguous along the rows rather than the reduced columns.

Only performance depends on this: the kernels compute the same values whatever
axes are chosen.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.ir import Operation, SSAValue

from dnnc.ir import tcp
from dnnc.ir.attrs import ints
from dnnc.ir.types import numel, shape_of

MIN_TILED_RUN = 8
"""Tile only when the load axis has at least this many elements: shorter runs of the
input read about as well in the output's own order."""

SAME_AXES = (*tcp.ELEMENTWISE_OPS, tcp.MaxPool2dOp, tcp.AvgPool2dOp, tcp.BroadcastOp, tcp.SliceOp, tcp.PadOp, tcp.ConcatOp)
"""Ops whose operands of the result's rank have the result's axes (sizes may differ)."""

Axes = tuple[int | None, ...]
"""For each axis of a value, the axis of the traced value it moves with (None: no single one)."""


def _reshape_axes(src: Sequence[int], dst: Sequence[int], axes: Axes) -> Axes:
    """Axes of a reshape's input from its result's, matched from the right (unit
    dimensions aside): an equal dimension moves with its counterpart; one that is the
    product of a run of the other side's (``[N, G, C/G, H*W] -> [N, C, H, W]`` merges
    the group's channels and splits the positions) is contiguous along the innermost
    of the run, so the innermost input axis of a run moves with the innermost result
    axis, and the others get None. Runs of equal size with no equal dimension inside
    (``[4, 6] -> [3, 8]``) are one run: their innermost axes run together."""
    out: list[int | None] = [None] * len(src)
    big_src = [i for i, n in enumerate(src) if n != 1]
    big_dst = [j for j, n in enumerate(dst) if n != 1]
    i, j = len(big_src) - 1, len(big_dst) - 1
    while i >= 0 and j >= 0:
        inner_src, inner_dst = big_src[i], big_dst[j]
        size_src, size_dst = src[inner_src], dst[inner_dst]
        while size_src != size_dst:
            if size_src < size_dst and i > 0:
                i -= 1
                size_src *= src[big_src[i]]
            elif size_dst < size_src and j > 0:
                j -= 1
                size_dst *= dst[big_dst[j]]
            else:
                return tuple(out)
        out[inner_src] = axes[inner_dst]
        i, j = i - 1, j - 1
    return tuple(out)


def _operand_axes(op: Operation, result: SSAValue, axes: Axes) -> list[tuple[SSAValue, Axes]]:
    rank = len(shape_of(result))
    if isinstance(op, tcp.TransposeOp):
        src: list[int | None] = [None] * rank
        for i, p in enumerate(ints(op.permutation)):
            src[p] = axes[i]
        return [(op.input, tuple(src))]
    if isinstance(op, tcp.ReshapeOp):
        return [(op.input, _reshape_axes(shape_of(op.input), shape_of(result), axes))]
    if isinstance(op, tcp.GatherOp):
        return [(v, (None,) * len(shape_of(v))) for v in op.operands]
    if isinstance(op, tcp.BatchNormOp):
        channel = (axes[1],)
        return [(op.input, axes), *((v, channel) for v in op.operands[1:])]
    if isinstance(op, SAME_AXES):
        return [(v, axes if len(shape_of(v)) == rank else (None,) * len(shape_of(v))) for v in op.operands]
    return [(v, (None,) * len(shape_of(v))) for v in op.operands]


def source_axes(value: SSAValue, inside: Callable[[Operation], bool]) -> dict[SSAValue, Axes]:
    """Every value ``value`` is computed from that is read from memory (a block
    argument, or a result of an op for which ``inside`` is false), with its axes as
    axes of ``value``. A value reached along several paths keeps the first."""
    found: dict[SSAValue, Axes] = {}
    seen: set[tuple[SSAValue, Axes]] = set()
    stack: list[tuple[SSAValue, Axes]] = [(value, tuple(range(len(shape_of(value)))))]
    while stack:
        v, axes = stack.pop()
        if (v, axes) in seen:
            continue
        seen.add((v, axes))
        op = v.owner
        if isinstance(op, (tcp.ConstantOp, tcp.IotaOp)):
            continue  # computed in registers, wherever they are defined
        if not isinstance(op, Operation) or not inside(op):
            found.setdefault(v, axes)
            continue
        stack.extend(reversed(_operand_axes(op, v, axes)))
    return found


def last_axis(shape: Sequence[int]) -> int | None:
    """The innermost axis that is not of size 1 (what consecutive addresses run along)."""
    big = [i for i, n in enumerate(shape) if n != 1]
    return big[-1] if big else None


def load_axis(value: SSAValue, inside: Callable[[Operation], bool]) -> int | None:
    """The axis of ``value`` its largest input is contiguous along (None: not one axis)."""
    sources = source_axes(value, inside)
    if not sources:
        return None
    main = max(sources, key=numel)  # dicts keep order: the first of equal sizes wins
    axis = last_axis(shape_of(main))
    return None if axis is None else sources[main][axis]


def tile_axes(outputs: Sequence[SSAValue], inside: Callable[[Operation], bool]) -> tuple[int, int] | None:
    """``(load, store)`` axes of the outputs' shape for a kernel tiled over both, when
    the main input is contiguous along another axis than the outputs; else None."""
    shapes = {shape_of(y) for y in outputs}
    if len(shapes) != 1:
        return None
    (shape,) = shapes
    store = last_axis(shape)
    load = load_axis(outputs[0], inside)
    if store is None or load is None or load == store or shape[load] < MIN_TILED_RUN:
        return None
    return load, store
