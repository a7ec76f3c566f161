"""Resizing (``F.interpolate``: nearest, nearest-exact, linear and bilinear, 1-D and
2-D) as gathers along each resized axis with small index and weight tensors,
computed here by PyTorch's own rules and stored as parameters: the whole resize is
index arithmetic and a few multiply-adds that any kernel fuses.

Index maps of the nearest modes are read off PyTorch's own op run on the positions
(``arange``) of each axis, so they match it exactly; linear weights follow PyTorch's
source-index rule (``align_corners`` either way, an explicit scale factor used as
given) in float32, its compute type for float32, float16 and bfloat16.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from dnnc.frontend.aten.registry import aten, rule
from dnnc.frontend.aten.shape import gather
from dnnc.frontend.emitter import Emitter
from dnnc.ir import tcp
from dnnc.ir.types import element_of, shape_of


def _scales(em: Emitter, spatial: int, scales: Any) -> list[float | None]:
    if scales is None:
        return [None] * spatial
    scales = list(scales)
    if len(scales) != spatial:
        em.unsupported(f"{len(scales)} scale factors for {spatial} resized dims")
    return [None if s is None else float(s) for s in scales]


def _nearest_map(resize: Callable[[torch.Tensor], torch.Tensor], sizes: list[int], axis: int) -> torch.Tensor:
    """The source index of every output position along ``axis``: PyTorch's own resize
    (``resize``, the exported op with its arguments) of a tensor holding each
    position's coordinate along that axis."""
    shape = [1] * len(sizes)
    shape[axis] = sizes[axis]
    probe = torch.arange(sizes[axis], dtype=torch.float32).reshape(1, 1, *shape).expand(1, 1, *sizes).contiguous()
    index: list[Any] = [0] * len(sizes)
    index[axis] = slice(None)
    return resize(probe)[(0, 0, *index)].round().to(torch.int64)


def _resize_nearest(em: Emitter, x_arg: Any, resize: Callable[[torch.Tensor], torch.Tensor], kind: str) -> SSAValue:
    x = em.value(x_arg)
    sizes = list(shape_of(x)[2:])
    node = em.node.name if em.node is not None else "resize"
    for axis in range(len(sizes)):
        index = _nearest_map(resize, sizes, axis)
        if torch.equal(index, torch.arange(sizes[axis])):
            continue
        x = gather(em, x, em.param(f"{node}.{kind}_index{axis}", index), axis + 2)
    return x


def _linear_weights(n: int, m: int, align_corners: bool, scale: float | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per output position: the two source indices and the second one's weight."""
    f = torch.float32
    if align_corners:
        step = torch.tensor((n - 1) / (m - 1) if m > 1 else 0.0, dtype=f)
        src = step * torch.arange(m, dtype=f)
    else:
        step = torch.tensor(1.0 / scale if scale is not None and scale > 0 else n / m, dtype=f)
        src = (step * (torch.arange(m, dtype=f) + 0.5) - 0.5).clamp(min=0)
    first = src.floor().to(torch.int64).clamp(max=n - 1)
    weight = (src - first.to(f)).clamp(0, 1)
    second = first + (first < n - 1).to(torch.int64)
    return first, second, weight


def _resize_linear(em: Emitter, x_arg: Any, align_corners: bool, scales: list[float | None]) -> SSAValue:
    x = em.value(x_arg)
    element = element_of(x)
    x = em.cast(x, f32)
    out = list(shape_of(em.result_type())[2:])
    node = em.node.name if em.node is not None else "resize"
    for axis, (n, m) in enumerate(zip(shape_of(x)[2:], out)):
        first, second, weight = _linear_weights(n, m, align_corners, scales[axis])
        d = axis + 2
        shape = list(shape_of(x))
        shape[d] = m
        column = [1] * len(shape)
        column[d] = m
        w1 = em.broadcast_to(em.reshape(em.param(f"{node}.weight{axis}", weight), column), shape)
        w0 = em.build(tcp.SubOp, [em.constant(1.0, shape, f32), w1])
        a = gather(em, x, em.param(f"{node}.index{axis}", first), d)
        b = gather(em, x, em.param(f"{node}.next{axis}", second), d)
        x = em.build(tcp.AddOp, [em.build(tcp.MulOp, [a, w0]), em.build(tcp.MulOp, [b, w1])])
    return em.cast(x, element)


@rule(aten.upsample_nearest2d.vec, aten.upsample_nearest1d.vec, aten._upsample_nearest_exact2d.vec)
def nearest_vec(em: Emitter, input: Any, output_size: Any, scale_factors: Any) -> SSAValue:
    op = em.node.target if em.node is not None else aten.upsample_nearest2d.vec
    kind = "exact" if op == aten._upsample_nearest_exact2d.vec else "nearest"
    return _resize_nearest(em, input, lambda probe: op(probe, output_size, scale_factors), kind)  # type: ignore[operator]


@rule(aten.upsample_nearest2d.default)
def nearest2d(em: Emitter, input: Any, output_size: Any, scales_h: Any = None, scales_w: Any = None) -> SSAValue:
    return _resize_nearest(em, input, lambda p: aten.upsample_nearest2d.default(p, output_size, scales_h, scales_w), "nearest")


@rule(aten.upsample_nearest1d.default)
def nearest1d(em: Emitter, input: Any, output_size: Any, scales: Any = None) -> SSAValue:
    return _resize_nearest(em, input, lambda p: aten.upsample_nearest1d.default(p, output_size, scales), "nearest")


@rule(aten.upsample_bilinear2d.vec, aten.upsample_linear1d.vec)
def linear_vec(em: Emitter, input: Any, output_size: Any, align_corners: bool, scale_factors: Any) -> SSAValue:
    spatial = len(shape_of(em.value(input))) - 2
    return _resize_linear(em, input, align_corners, _scales(em, spatial, scale_factors))


@rule(aten.upsample_bilinear2d.default)
def bilinear2d(
    em: Emitter, input: Any, output_size: Any, align_corners: bool, scales_h: Any = None, scales_w: Any = None
) -> SSAValue:
    return _resize_linear(em, input, align_corners, _scales(em, 2, [scales_h, scales_w]))


@rule(aten.upsample_linear1d.default)
def linear1d(em: Emitter, input: Any, output_size: Any, align_corners: bool, scales: Any = None) -> SSAValue:
    return _resize_linear(em, input, align_corners, _scales(em, 1, [scales]))
