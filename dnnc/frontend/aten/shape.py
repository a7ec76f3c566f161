"""Views and data movement: reshape-like views, expand, permute, cat, slicing,
splitting, padding and indexing. Negative dimensions and indices are normalized
here so that tcp attributes are always non-negative."""

from __future__ import annotations

import sys
from typing import Any

from xdsl.ir import SSAValue

from dnnc.frontend.aten.registry import aten, normalize_axis, rule
from dnnc.frontend.emitter import Emitter
from dnnc.ir import tcp
from dnnc.ir.attrs import int_attr
from dnnc.ir.types import INDEX_TYPES, element_of, shape_of


@rule(
    aten.view.default,
    aten._unsafe_view.default,
    aten.reshape.default,
    aten.unsqueeze.default,
    aten.squeeze.default,
    aten.squeeze.dim,
    aten.squeeze.dims,
    aten.flatten.using_ints,
)
def reshape(em: Emitter, self: Any, **_: Any) -> SSAValue:
    return em.reshape(em.value(self), shape_of(em.result_type()))


@rule(aten.expand.default)
def expand(em: Emitter, self: Any, size: Any, implicit: bool = False) -> SSAValue:
    return em.broadcast_to(em.value(self), shape_of(em.result_type()))


@rule(aten.repeat.default)
def repeat(em: Emitter, self: Any, repeats: Any) -> SSAValue:
    x = em.value(self)
    shape = (1,) * (len(repeats) - len(shape_of(x))) + shape_of(x)
    interleaved = [d for n in shape for d in (1, n)]
    x = em.reshape(x, interleaved)
    x = em.broadcast_to(x, [d for r, n in zip(repeats, shape) for d in (r, n)])
    return em.reshape(x, shape_of(em.result_type()))


@rule(aten.permute.default)
def permute(em: Emitter, self: Any, dims: Any) -> SSAValue:
    rank = len(shape_of(em.value(self)))
    return em.transpose(em.value(self), [normalize_axis(em, d, rank) for d in dims])


@rule(aten.t.default)
def t(em: Emitter, self: Any) -> SSAValue:
    x = em.value(self)
    return em.transpose(x, [1, 0]) if len(shape_of(x)) == 2 else x


@rule(aten.transpose.int)
def transpose(em: Emitter, self: Any, dim0: int, dim1: int) -> SSAValue:
    x = em.value(self)
    rank = len(shape_of(x))
    perm = list(range(rank))
    a, b = normalize_axis(em, dim0, rank), normalize_axis(em, dim1, rank)
    perm[a], perm[b] = perm[b], perm[a]
    return em.transpose(x, perm)


@rule(aten.cat.default)
def cat(em: Emitter, tensors: Any, dim: int = 0) -> SSAValue:
    out = em.result_type()
    rank = len(shape_of(out))
    # torch.cat skips legacy empty 1-D tensors.
    parts = [em.cast(em.value(t), out.element_type) for t in tensors if shape_of(em.value(t)) != (0,) or rank == 1]
    if len(parts) == 1:
        return parts[0]
    return em.build(tcp.ConcatOp, [parts], axis=int_attr(normalize_axis(em, dim, rank)))


def _clip_index(i: Any, n: int, default: int) -> int:
    if i is None:
        return default
    i = int(i)
    if i < 0:
        i += n
    return min(max(i, 0), n)


def normalized_slice(start: Any, end: Any, n: int) -> tuple[int, int]:
    """``start:end`` on a dim of ``n`` as PyTorch reads it: negatives from the end,
    clipped to ``[0, n]``, an end before the start giving an empty slice."""
    b = _clip_index(start, n, 0)
    return b, max(_clip_index(end if end != sys.maxsize else None, n, n), b)


@rule(aten.slice.Tensor)
def slice_(em: Emitter, self: Any, dim: int = 0, start: Any = None, end: Any = None, step: int = 1) -> SSAValue:
    x = em.value(self)
    shape = shape_of(x)
    axis = normalize_axis(em, dim, len(shape))
    if step < 1:
        em.unsupported(f"slice step {step} (must be positive)")
    b, e = normalized_slice(start, end, shape[axis])
    return em.slice(x, axis, b, e, step)


@rule(aten.select.int)
def select(em: Emitter, self: Any, dim: int, index: int) -> SSAValue:
    x = em.value(self)
    shape = shape_of(x)
    axis = normalize_axis(em, dim, len(shape))
    if not -shape[axis] <= index < shape[axis]:
        em.unsupported(f"index {index} is out of range for dimension {dim} of size {shape[axis]}")
    index %= shape[axis]
    return em.reshape(em.slice(x, axis, index, index + 1), shape_of(em.result_type()))


def _split(em: Emitter, self: Any, sizes: list[int], dim: int) -> tuple[SSAValue, ...]:
    x = em.value(self)
    axis = normalize_axis(em, dim, len(shape_of(x)))
    parts, offset = [], 0
    for size in sizes:
        parts.append(em.slice(x, axis, offset, offset + size))
        offset += size
    return tuple(parts)


@rule(aten.split_with_sizes.default)
def split_with_sizes(em: Emitter, self: Any, split_sizes: Any, dim: int = 0) -> tuple[SSAValue, ...]:
    return _split(em, self, list(split_sizes), dim)


@rule(aten.split.Tensor)
def split(em: Emitter, self: Any, split_size: int, dim: int = 0) -> tuple[SSAValue, ...]:
    n = shape_of(em.value(self))[normalize_axis(em, dim, len(shape_of(em.value(self))))]
    sizes = [min(split_size, n - i) for i in range(0, n, split_size)]
    return _split(em, self, sizes, dim)


def gather(em: Emitter, table: SSAValue, indices: SSAValue, axis: int) -> SSAValue:
    if element_of(indices) not in INDEX_TYPES:
        em.unsupported("indices must be int32 or int64 (boolean masks give data-dependent shapes)")
    return em.build(tcp.GatherOp, [table, indices], axis=int_attr(axis))


@rule(aten.embedding.default)
def embedding(em: Emitter, weight: Any, indices: Any, **_: Any) -> SSAValue:
    return gather(em, em.value(weight), em.value(indices), 0)


@rule(aten.index_select.default)
def index_select(em: Emitter, self: Any, dim: int, index: Any) -> SSAValue:
    x = em.value(self)
    return gather(em, x, em.value(index), normalize_axis(em, dim, len(shape_of(x))))


@rule(aten.constant_pad_nd.default)
def constant_pad_nd(em: Emitter, self: Any, pad: Any, value: Any = 0) -> SSAValue:
    x = em.value(self)
    rank = len(shape_of(x))
    if len(pad) % 2 or len(pad) // 2 > rank:
        em.unsupported(f"pad {list(pad)} does not fit rank {rank}")
    low, high = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):  # pairs start at the last dimension
        low[rank - 1 - i], high[rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    return em.pad_or_crop(x, low, high, value)
