"""Indexing and in-place updates: gathers by index tensors (``gather``, advanced
indexing with several index tensors, ``flip``), scatters (``scatter``, ``index_put``,
``slice_scatter``, ``select_scatter``, ``copy``), uninitialized tensors and
``as_strided`` where it is a view.

Everything becomes ``tcp.gather`` / ``tcp.take_along`` / ``tcp.scatter`` plus index
arithmetic (``tcp.iota``, integer ops, ``tcp.select``), so a generated kernel
evaluates it in place: in-place updates that export writes as ``*_scatter`` ops move
no more data than the update itself.
"""

from __future__ import annotations

import math
from typing import Any

from xdsl.dialects.builtin import StringAttr, i64
from xdsl.ir import SSAValue

from dnnc.frontend.aten.registry import aten, normalize_axis, rule
from dnnc.frontend.aten.shape import gather, normalized_slice
from dnnc.frontend.emitter import Emitter
from dnnc.ir import tcp
from dnnc.ir.attrs import float_attr, int_attr
from dnnc.ir.types import INDEX_TYPES, element_of, shape_of, tensor_type


def _positions(em: Emitter, n: int, axis: int, shape: tuple[int, ...]) -> SSAValue:
    """``i`` at every element of ``shape`` whose coordinate along ``axis`` is ``i``."""
    iota = em.emit(tcp.IotaOp(0, 1, tensor_type((n,), i64)))
    column = [1] * len(shape)
    column[axis] = n
    return em.broadcast_to(em.reshape(iota, column), shape)


def _compare(em: Emitter, a: SSAValue, predicate: str, b: SSAValue) -> SSAValue:
    return em.build(tcp.CompareOp, [a, b], predicate=StringAttr(predicate))


def _int(em: Emitter, value: int, like: SSAValue) -> SSAValue:
    return em.constant(value, shape_of(like), element_of(like))


def _index_tensor(em: Emitter, arg: Any, n: int, shape: tuple[int, ...] | None = None) -> SSAValue:
    """An integer index tensor (broadcast to ``shape``), negative indices wrapped by ``n``."""
    idx = em.value(arg)
    if element_of(idx) not in INDEX_TYPES:
        em.unsupported(f"index tensor of {element_of(idx)}: boolean masks give data-dependent shapes (expected int64 or int32)")
    if shape is not None:
        idx = em.broadcast_to(idx, shape)
    negative = _compare(em, idx, "lt", _int(em, 0, idx))
    return em.build(tcp.SelectOp, [negative, em.build(tcp.AddOp, [idx, _int(em, n, idx)]), idx])


def _broadcast_shape(em: Emitter, shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    rank = max(len(s) for s in shapes)
    out = []
    for dims in zip(*[(1,) * (rank - len(s)) + s for s in shapes]):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            em.unsupported(f"index tensors of shapes {[list(s) for s in shapes]} do not broadcast together")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def _flat_indices(em: Emitter, x: SSAValue, indices: Any) -> tuple[SSAValue, SSAValue, int]:
    """Advanced indexing as one gather: ``x`` with its indexed dims merged into one axis
    (moved to the front first where they are not adjacent, as PyTorch places the
    result's index dims), the flat index into that axis (broadcast over the index
    tensors), and the axis."""
    shape = shape_of(x)
    given = [i for i, ix in enumerate(indices) if ix is not None]
    if not given:
        em.unsupported("indexing with no index tensor")
    index_shape = _broadcast_shape(em, [tuple(em.meta(indices[i]).shape) for i in given])
    if given != list(range(given[0], given[-1] + 1)):  # not adjacent: the indexed dims go first
        rest = [d for d in range(len(shape)) if d not in given]
        x = em.transpose(x, [*given, *rest])
        shape = shape_of(x)
        positions = dict(zip(given, range(len(given))))
        given = list(range(len(given)))
    else:
        positions = {d: d for d in given}
    first, last = given[0], given[-1]
    x = em.reshape(x, (*shape[:first], math.prod(shape[first : last + 1]), *shape[last + 1 :]))
    flat: SSAValue | None = None
    for original, d in positions.items():
        idx = _index_tensor(em, indices[original], shape[d], index_shape)
        stride = math.prod(shape[d + 1 : last + 1])
        term = idx if stride == 1 else em.build(tcp.MulOp, [idx, _int(em, stride, idx)])
        flat = term if flat is None else em.build(tcp.AddOp, [em.cast(flat, element_of(term)), term])
    assert flat is not None
    return x, flat, first


@rule(aten.index.Tensor)
def index(em: Emitter, self: Any, indices: Any) -> SSAValue:
    """``x[i, j]`` with index tensors (and full slices where an entry is None)."""
    x, flat, axis = _flat_indices(em, em.value(self), indices)
    return em.reshape(gather(em, x, flat, axis), shape_of(em.result_type()))


@rule(aten.gather.default)
def take_along(em: Emitter, self: Any, dim: int, index: Any, sparse_grad: bool = False) -> SSAValue:
    x = em.value(self)
    axis = normalize_axis(em, dim, len(shape_of(x)))
    idx = _index_tensor(em, index, shape_of(x)[axis])
    return em.build(tcp.TakeAlongOp, [x, idx], axis=int_attr(axis))


@rule(aten.flip.default)
def flip(em: Emitter, self: Any, dims: Any) -> SSAValue:
    x = em.value(self)
    for d in sorted({normalize_axis(em, d, len(shape_of(x))) for d in dims}):
        n = shape_of(x)[d]
        if n > 1:
            x = gather(em, x, em.emit(tcp.IotaOp(n - 1, -1, tensor_type((n,), i64))), d)
    return x


def _scatter(em: Emitter, x: SSAValue, axis: int, index: SSAValue, updates: SSAValue, mode: str) -> SSAValue:
    return em.build(tcp.ScatterOp, [x, index, updates], axis=int_attr(axis), mode=StringAttr(mode))


def _updates(em: Emitter, src: Any, index: SSAValue, element: Any) -> SSAValue:
    """``src`` (a tensor, sliced to the index's shape where larger, or a scalar) as updates."""
    shape = shape_of(index)
    if isinstance(src, (bool, int, float)):
        return em.constant(src, shape, element)
    u = em.cast(em.value(src), element)
    for axis, (n, m) in enumerate(zip(shape_of(u), shape)):
        if n < m:
            em.unsupported(f"scatter source {list(shape_of(u))} is smaller than the index {list(shape)}")
        u = em.slice(u, axis, 0, m)
    return u


@rule(aten.scatter.src, aten.scatter.value, aten.scatter_add.default, aten.scatter.reduce, aten.scatter.value_reduce)
def scatter(em: Emitter, self: Any, dim: int, index: Any, src: Any = None, value: Any = None, reduce: Any = None) -> SSAValue:
    x = em.value(self)
    axis = normalize_axis(em, dim, len(shape_of(x)))
    idx = _index_tensor(em, index, shape_of(x)[axis])
    add = reduce in ("add", "sum") or (em.node is not None and em.node.target == aten.scatter_add.default)
    if reduce is not None and not add:
        em.unsupported(f"scatter with reduce={reduce!r} (dnnc scatters with replace or add)")
    updates = _updates(em, src if src is not None else value, idx, element_of(x))
    return _scatter(em, x, axis, idx, updates, "add" if add else "replace")


@rule(aten.scatter_reduce.two)
def scatter_reduce(em: Emitter, self: Any, dim: int, index: Any, src: Any, reduce: str, include_self: bool = True) -> SSAValue:
    if reduce != "sum" or not include_self:
        em.unsupported(f"scatter_reduce with reduce={reduce!r}, include_self={include_self} (dnnc takes sum with include_self)")
    return scatter(em, self, dim, index, src, reduce="add")


@rule(aten.index_put.default, aten.index_put.hacked_twin)
def index_put(em: Emitter, self: Any, indices: Any, values: Any, accumulate: bool = False) -> SSAValue:
    """``x[i, j] = v`` (``+=`` with ``accumulate``): a scatter into ``x`` with its indexed
    dims merged, of ``v`` broadcast to what ``x[i, j]`` would be."""
    x0 = em.value(self)
    given = [i for i, ix in enumerate(indices) if ix is not None]
    if given and given != list(range(given[0], given[-1] + 1)):
        em.unsupported(f"index_put with index tensors on dims {given}, which are not next to each other")
    merged, flat, axis = _flat_indices(em, x0, indices)
    mshape = shape_of(merged)
    m = math.prod(shape_of(flat))
    target = (*mshape[:axis], m, *mshape[axis + 1 :])
    picked = (*mshape[:axis], *shape_of(flat), *mshape[axis + 1 :])
    column = [1] * len(target)
    column[axis] = m
    idx = em.broadcast_to(em.reshape(flat, column), target)
    updates = em.reshape(em.broadcast_to(em.cast(em.value(values), element_of(x0)), picked), target)
    out = _scatter(em, merged, axis, idx, updates, "add" if accumulate else "replace")
    return em.reshape(out, shape_of(x0))


@rule(aten.slice_scatter.default)
def slice_scatter(em: Emitter, self: Any, src: Any, dim: int = 0, start: Any = None, end: Any = None, step: int = 1) -> SSAValue:
    """``x[start:end:step] = src`` along ``dim``. With step 1 the result is the slices
    around ``src`` joined; with a larger step each position picks ``src`` where it
    lies on the step (index arithmetic on the positions)."""
    x = em.value(self)
    shape = shape_of(x)
    axis = normalize_axis(em, dim, len(shape))
    n = shape[axis]
    b, e = normalized_slice(start, end, n)
    u = em.cast(em.value(src), element_of(x))
    if step < 1:
        em.unsupported(f"slice_scatter step {step} (must be positive)")
    if step == 1:
        parts = [em.slice(x, axis, 0, b), u, em.slice(x, axis, e, n)]
        parts = [p for p in parts if shape_of(p)[axis] > 0]
        return parts[0] if len(parts) == 1 else em.build(tcp.ConcatOp, [parts], axis=int_attr(axis))
    m = shape_of(u)[axis]
    pos = _positions(em, n, axis, shape)
    offset = em.build(tcp.SubOp, [pos, _int(em, b, pos)])
    on_step = _compare(em, em.build(tcp.RemainderOp, [offset, _int(em, step, pos)]), "eq", _int(em, 0, pos))
    inside = em.build(
        tcp.LogicalAndOp,
        [_compare(em, pos, "ge", _int(em, b, pos)), _compare(em, pos, "lt", _int(em, e, pos))],
    )
    take = em.build(tcp.LogicalAndOp, [inside, on_step])
    j = em.build(tcp.ClampOp, [em.build(tcp.FloorDivOp, [offset, _int(em, step, pos)])], **_bounds(0, m - 1))
    picked = em.build(tcp.TakeAlongOp, [u, j], axis=int_attr(axis))
    return em.build(tcp.SelectOp, [take, picked, x])


def _bounds(lo: int, hi: int) -> dict[str, Any]:
    return {"min": float_attr(lo), "max": float_attr(hi)}


@rule(aten.select_scatter.default)
def select_scatter(em: Emitter, self: Any, src: Any, dim: int, index: int) -> SSAValue:
    x = em.value(self)
    axis = normalize_axis(em, dim, len(shape_of(x)))
    n = shape_of(x)[axis]
    if not -n <= index < n:
        em.unsupported(f"index {index} is out of range for dimension {dim} of size {n}")
    index %= n
    column = list(shape_of(x))
    column[axis] = 1
    u = em.reshape(em.cast(em.value(src), element_of(x)), column)
    return slice_scatter(em, x, u, axis, index, index + 1)


@rule(aten.copy.default)
def copy(em: Emitter, self: Any, src: Any, non_blocking: bool = False) -> SSAValue:
    """``self.copy_(src)`` as a value: ``src`` in ``self``'s shape and type."""
    out = em.result_type()
    return em.operand(src, shape_of(out), out.element_type)


@rule(aten.empty.memory_format, aten.empty_like.default, aten.new_empty.default)
def empty(em: Emitter, **_: Any) -> SSAValue:
    """Uninitialized memory holds anything: zeros are one such value (what export
    writes into it comes after, as ``*_scatter`` ops)."""
    t = em.result_type()
    return em.constant(0, shape_of(t), t.element_type)


@rule(aten.new_zeros.default, aten.new_ones.default, aten.new_full.default)
def new_filled(em: Emitter, self: Any, size: Any, fill_value: Any = None, **_: Any) -> SSAValue:
    t = em.result_type()
    target = em.node.target if em.node is not None else None
    value = {aten.new_zeros.default: 0, aten.new_ones.default: 1}.get(target, fill_value)  # type: ignore[arg-type]
    if not isinstance(value, (bool, int, float)):
        em.unsupported(f"fill value {value!r} is not a Python number")
    return em.constant(value, shape_of(t), t.element_type)


@rule(aten.as_strided.default)
def as_strided(em: Emitter, self: Any, size: Any, stride: Any, storage_offset: Any = None) -> SSAValue:
    """A view of ``self``'s storage (laid out by its own strides) that tcp writes as a
    slice of the flat storage, reshapes, transposes and broadcasts: the requested
    strides lay the non-broadcast dims out densely over a run of the storage. Other
    strides (windows that overlap, gaps between rows) are refused, naming them."""
    x = em.value(self)
    meta = em.meta(self)
    size, stride = [int(s) for s in size], [int(s) for s in stride]
    total = math.prod(meta.shape)
    offset = int(meta.storage_offset() if storage_offset is None else storage_offset) - meta.storage_offset()
    kept = [d for d, (n, s) in enumerate(zip(size, stride)) if not (s == 0 and n > 1)]
    kept_size = [size[d] for d in kept]
    dense = _dense_order(kept_size, [stride[d] for d in kept])
    in_order = _dense_order(list(meta.shape), list(meta.stride()))
    if dense is None or in_order is None or offset < 0 or offset + math.prod(kept_size) > total:
        em.unsupported(
            f"as_strided of {list(meta.shape)} (strides {list(meta.stride())}) to size {size}, strides {stride}, "
            f"offset {storage_offset or 0}: only views that lay their elements out densely over the storage "
            "(and broadcast) are supported"
        )
    storage = em.reshape(em.transpose(x, in_order), (total,))
    storage = em.slice(storage, 0, offset, offset + math.prod(kept_size))
    physical = em.reshape(storage, [kept_size[d] for d in dense])
    view = em.transpose(physical, [dense.index(d) for d in range(len(kept))])
    full = [1] * len(size)
    for i, d in enumerate(kept):
        full[d] = kept_size[i]
    return em.broadcast_to(em.reshape(view, full), size)


def _dense_order(sizes: list[int], strides: list[int]) -> list[int] | None:
    """The dims from outermost to innermost in memory, when ``strides`` lay ``sizes``
    out densely from offset 0 (a size-1 dim keeps its place), else None."""
    big = sorted((d for d in range(len(sizes)) if sizes[d] != 1), key=lambda d: -strides[d])
    step = 1
    for d in reversed(big):
        if strides[d] != step:
            return None
        step *= sizes[d]
    outer_first = iter(big)
    return [d if sizes[d] == 1 else next(outer_first) for d in range(len(sizes))]
