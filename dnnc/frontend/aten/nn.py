"""Matmuls, convolution, norms, softmax and pooling."""

from __future__ import annotations

import math
from typing import Any

import torch
from xdsl.ir import SSAValue

from dnnc.frontend.aten.elementwise import binary
from dnnc.frontend.aten.reductions import reduce
from dnnc.frontend.aten.registry import aten, normalize_axis, rule
from dnnc.frontend.emitter import Emitter, Unavailable
from dnnc.ir import tcp
from dnnc.ir.attrs import bool_attr, float_attr, i64_array, int_attr
from dnnc.ir.types import element_of, shape_of, torch_dtype


def _per_axis(em: Emitter, values: Any, name: str, dims: int, default: Any = None) -> list[int]:
    """A convolution's or pool's ``stride``, ``padding``... as one int per spatial axis
    (one value given stands for every axis)."""
    if values is None or (isinstance(values, (list, tuple)) and len(values) == 0):
        values = default
    values = [values] if isinstance(values, int) else list(values)
    if len(values) == 1:
        values = values * dims
    if len(values) != dims:
        em.unsupported(f"{name} {values} ({dims}-D only)")
    return [int(v) for v in values]


def _pair(em: Emitter, values: Any, name: str, default: Any = None) -> list[int]:
    return _per_axis(em, values, name, 2, default)


def _one_axis(em: Emitter, values: Any, name: str, default: Any = None) -> list[int]:
    """A 1-D convolution's argument, which becomes a 2-D one's over a height of 1."""
    return _per_axis(em, values, name, 1, default)


@rule(aten.mm.default)
def mm(em: Emitter, self: Any, mat2: Any) -> SSAValue:
    return em.build(tcp.MatmulOp, [em.value(self), em.value(mat2)])


@rule(aten.bmm.default)
def bmm(em: Emitter, self: Any, mat2: Any) -> SSAValue:
    return em.build(tcp.BatchMatmulOp, [em.value(self), em.value(mat2)])


@rule(aten.addmm.default)
def addmm(em: Emitter, self: Any, mat1: Any, mat2: Any, beta: Any = 1, alpha: Any = 1) -> SSAValue:
    """beta * self + alpha * (mat1 @ mat2): a matmul and a broadcast bias add."""
    product = em.build(tcp.MatmulOp, [em.value(mat1), em.value(mat2)])
    if alpha != 1:
        product = binary(em, tcp.MulOp, product, alpha)
    if beta == 0:
        return product
    bias = em.value(self) if beta == 1 else binary(em, tcp.MulOp, self, beta)
    return binary(em, tcp.AddOp, product, bias)


@rule(aten.convolution.default)
def convolution(
    em: Emitter,
    input: Any,
    weight: Any,
    bias: Any,
    stride: Any,
    padding: Any,
    dilation: Any,
    transposed: bool,
    output_padding: Any,
    groups: int,
) -> SSAValue:
    x, w = em.value(input), em.value(weight)
    rank = len(shape_of(x))
    if transposed:
        return _conv_transpose(em, x, w, bias, stride, padding, dilation, output_padding, groups)
    if rank == 5:
        return _conv3d(em, x, w, bias, stride, padding, dilation, groups)
    if rank == 3:  # conv1d as a conv2d over a height of 1
        x = em.reshape(x, (shape_of(x)[0], shape_of(x)[1], 1, shape_of(x)[2]))
        w = em.reshape(w, (*shape_of(w)[:2], 1, shape_of(w)[2]))
        stride, padding = [1, *_one_axis(em, stride, "stride")], [0, *_one_axis(em, padding, "padding")]
        dilation = [1, *_one_axis(em, dilation, "dilation")]
    elif rank != 4:
        em.unsupported(f"{rank - 2}-D convolution (only 1-D, 2-D and 3-D are supported)")
    y = _conv2d(em, x, w, _pair(em, stride, "stride"), _pair(em, padding, "padding"), _pair(em, dilation, "dilation"), groups)
    return em.reshape(_add_bias(em, y, bias), shape_of(em.result_type()))


def _conv2d(
    em: Emitter, x: SSAValue, w: SSAValue, stride: list[int], padding: list[int], dilation: list[int], groups: int
) -> SSAValue:
    """The ``tcp.conv2d`` every convolution becomes (``padding``: one amount per axis, both sides)."""
    return em.build(
        tcp.Conv2dOp,
        [x, w],
        stride=i64_array(stride),
        padding=i64_array([padding[0], padding[0], padding[1], padding[1]]),
        dilation=i64_array(dilation),
        groups=int_attr(groups),
    )


def _conv_transpose(
    em: Emitter, x: SSAValue, w: SSAValue, bias: Any, stride: Any, padding: Any, dilation: Any, output_padding: Any, groups: int
) -> SSAValue:
    """A transposed convolution (decoders, upsampling heads, vocoders, 3-D segmentation
    networks) as a forward one.

    A kernel that tiles the output (kernel = stride, no padding or dilation, one group:
    DPT's and SAM's upsampling) is a 1x1 convolution to ``cout x prod(kernel)`` channels
    whose pixels are then spread into their patches. Any other is the convolution of the
    input with ``stride - 1`` zeros between its pixels, padded by ``dilation x (kernel -
    1) - padding`` (plus ``output_padding`` at the end; a negative pad crops), with the
    kernel flipped in space and its input and output channels swapped within each group.
    The kernel's rearrangement is fold-params' work when it is a weight. 1-D goes through
    2-D; 3-D through ``_conv3d``."""
    rank = len(shape_of(x))
    if rank == 3:  # 1-D as 2-D over a height of 1
        n, c, length = shape_of(x)
        y = _conv_transpose(
            em,
            em.reshape(x, (n, c, 1, length)),
            em.reshape(w, (*shape_of(w)[:2], 1, shape_of(w)[2])),
            bias,
            [1, *_one_axis(em, stride, "stride")],
            [0, *_one_axis(em, padding, "padding")],
            [1, *_one_axis(em, dilation, "dilation")],
            [0, *_one_axis(em, output_padding, "output_padding", [0])],
            groups,
        )
        return em.reshape(y, (n, shape_of(y)[1], shape_of(y)[3]))
    if rank not in (4, 5):
        em.unsupported(f"{rank - 2}-D transposed convolution (only 1-D, 2-D and 3-D are supported)")
    dims = rank - 2
    n, cin, *size = shape_of(x)
    _, cout_g, *kernel = shape_of(w)
    cout = cout_g * groups
    strides, pads = _per_axis(em, stride, "stride", dims), _per_axis(em, padding, "padding", dims)
    dilations, extra = _per_axis(em, dilation, "dilation", dims), _per_axis(em, output_padding, "output_padding", dims, [0])
    if kernel == strides and not any(pads + extra) and dilations == [1] * dims and groups == 1:
        taps = math.prod(kernel)
        weights = em.reshape(em.transpose(w, (*range(1, rank), 0)), (cout * taps, cin, *[1] * dims))
        y = _forward_conv(em, x, weights, [0] * dims, [1] * dims, 1)
        y = em.reshape(y, (n, cout, *kernel, *size))  # per pixel, its patch
        order = [0, 1] + [a for d in range(dims) for a in (2 + dims + d, 2 + d)]  # (size_d, kernel_d) pairs
        return _add_bias(em, em.reshape(em.transpose(y, order), (n, cout, *[s * k for s, k in zip(size, kernel)])), bias)
    spread = em.spread(x, strides)
    low = [d * (k - 1) - p for d, k, p in zip(dilations, kernel, pads)]
    high = [lo + e - (st - 1) for lo, e, st in zip(low, extra, strides)]  # the trailing zeros count already
    spread = em.pad_or_crop(spread, [0, 0, *low], [0, 0, *high])
    flipped = w
    for axis in range(2, rank):
        flipped = em.flip(flipped, axis)
    weights = em.reshape(flipped, (groups, cin // groups, cout_g, *kernel))
    weights = em.reshape(em.transpose(weights, (0, 2, 1, *range(3, 3 + dims))), (cout, cin // groups, *kernel))
    return _add_bias(em, _forward_conv(em, spread, weights, [0] * dims, dilations, groups), bias)


def _forward_conv(em: Emitter, x: SSAValue, w: SSAValue, padding: list[int], dilation: list[int], groups: int) -> SSAValue:
    """A unit-stride 2-D or 3-D convolution (3-D through ``_conv3d``), without bias."""
    if len(padding) == 3:
        return _conv3d(em, x, w, None, [1, 1, 1], padding, dilation, groups)
    return _conv2d(em, x, w, [1, 1], padding, dilation, groups)


def _add_bias(em: Emitter, y: SSAValue, bias: Any) -> SSAValue:
    """``y`` plus a per-channel ``bias`` (channels on axis 1), or ``y`` where there is none."""
    if bias is None:
        return y
    shape = shape_of(y)
    b = em.reshape(em.value(bias), (1, shape[1], *[1] * (len(shape) - 2)))
    return em.build(tcp.AddOp, [y, em.broadcast_to(b, shape)])


def _conv3d(em: Emitter, x: SSAValue, w: SSAValue, bias: Any, stride: Any, padding: Any, dilation: Any, groups: int) -> SSAValue:
    """A 3-D convolution (video models: a patch embedding, temporal and spatio-temporal
    kernels) as one 2-D convolution, so both GPU backends run it as they run any other.

    A kernel that is 1x1 in space with unit spatial stride is a 2-D convolution over
    (time, height x width). Otherwise time folds into the batch: each of the kernel's
    ``kt`` time taps reads a strided slice of the time-padded input, the slices are
    stacked into the input channels (tap-major within each group) and the kernel's taps
    into its input channels in the same order, so one 2-D convolution sums over them."""
    n, c, t, h, wd = shape_of(x)
    o, cg, kt, kh, kw = shape_of(w)
    (st, sh, sw), (pt, ph, pw) = _per_axis(em, stride, "stride", 3), _per_axis(em, padding, "padding", 3)
    dt, dh, dw = _per_axis(em, dilation, "dilation", 3)
    t_out = (t + 2 * pt - dt * (kt - 1) - 1) // st + 1
    if (kh, kw, sh, sw, ph, pw) == (1, 1, 1, 1, 0, 0):
        flat = em.reshape(x, (n, c, t, h * wd))
        y = _conv2d(em, flat, em.reshape(w, (o, cg, kt, 1)), [st, 1], [pt, 0], [dt, 1], groups)
        y = em.reshape(y, (n, o, t_out, h, wd))
    else:
        x = em.pad_or_crop(x, [0, 0, pt, 0, 0], [0, 0, pt, 0, 0])
        taps = []
        for i in range(kt):
            start = i * dt
            tap = em.slice(x, 2, start, start + (t_out - 1) * st + 1, st)  # n, c, t_out, h, w
            tap = em.transpose(tap, (0, 2, 1, 3, 4))
            taps.append(em.reshape(tap, (n, t_out, groups, 1, cg, h, wd)))
        stacked = taps[0] if kt == 1 else em.build(tcp.ConcatOp, [taps], axis=int_attr(3))
        stacked = em.reshape(stacked, (n * t_out, kt * c, h, wd))
        kernel = em.reshape(em.transpose(w, (0, 2, 1, 3, 4)), (o, kt * cg, kh, kw))
        y = _conv2d(em, stacked, kernel, [sh, sw], [ph, pw], [dh, dw], groups)
        _, _, h_out, w_out = shape_of(y)
        y = em.transpose(em.reshape(y, (n, t_out, o, h_out, w_out)), (0, 2, 1, 3, 4))
    return _add_bias(em, y, bias)


def _vector_or(em: Emitter, arg: Any, channels: int, element: Any, fill: float) -> SSAValue:
    return em.value(arg) if arg is not None else em.constant(fill, (channels,), element)


@rule(aten._native_batch_norm_legit_no_training.default)
def batch_norm(
    em: Emitter,
    input: Any,
    weight: Any,
    bias: Any,
    running_mean: Any,
    running_var: Any,
    momentum: Any,
    eps: float,
) -> tuple[object, ...]:
    x = em.value(input)
    channels, element = shape_of(x)[1], element_of(x)
    operands = [
        x,
        _vector_or(em, weight, channels, element, 1.0),
        _vector_or(em, bias, channels, element, 0.0),
        em.value(running_mean),
        em.value(running_var),
    ]
    y = em.build(tcp.BatchNormOp, operands, epsilon=float_attr(eps))
    return y, Unavailable("the batch mean"), Unavailable("the batch inverse std")


@rule(aten._native_batch_norm_legit.default, aten.native_batch_norm.default, aten._native_batch_norm_legit_functional.default)
def batch_norm_training(em: Emitter, **_: Any) -> SSAValue:
    em.unsupported("batch norm in training mode (call model.eval() before exporting)")


@rule(aten.native_layer_norm.default)
def layer_norm(em: Emitter, input: Any, normalized_shape: Any, weight: Any, bias: Any, eps: float) -> tuple[object, ...]:
    x = em.value(input)
    shape, element = shape_of(x), element_of(x)
    axis = len(shape) - len(normalized_shape)
    norm_shape = shape[axis:]
    w = em.value(weight) if weight is not None else em.constant(1.0, norm_shape, element)
    b = em.value(bias) if bias is not None else em.constant(0.0, norm_shape, element)
    y = em.build(tcp.LayerNormOp, [x, w, b], axis=int_attr(axis), epsilon=float_attr(eps))
    return y, Unavailable("the layer-norm mean"), Unavailable("the layer-norm inverse std")


@rule(aten.native_group_norm.default)
def group_norm(
    em: Emitter, input: Any, weight: Any, bias: Any, N: int, C: int, HxW: int, group: int, eps: float
) -> tuple[object, ...]:
    """A layer norm over each group's channels and positions (``[N, G, C/G, HxW]``,
    the last two axes, no affine: splat constants), then the per-channel affine, so
    the generated kernel is the layer-norm kernel with the affine as its epilogue."""
    x = em.value(input)
    shape, element = shape_of(x), element_of(x)
    if group < 1 or C % group:
        em.unsupported(f"group norm of {C} channels in {group} groups (groups must divide the channels)")
    grouped = (N, group, C // group, HxW)
    xg = em.reshape(x, grouped)
    ones, zeros = em.constant(1.0, grouped[2:], element), em.constant(0.0, grouped[2:], element)
    y = em.build(tcp.LayerNormOp, [xg, ones, zeros], axis=int_attr(2), epsilon=float_attr(eps))
    per_channel = (1, group, C // group, 1)
    if weight is not None:
        y = em.build(tcp.MulOp, [y, em.broadcast_to(em.reshape(em.value(weight), per_channel), grouped)])
    if bias is not None:
        y = em.build(tcp.AddOp, [y, em.broadcast_to(em.reshape(em.value(bias), per_channel), grouped)])
    return em.reshape(y, shape), Unavailable("the group-norm mean"), Unavailable("the group-norm inverse std")


@rule(aten._softmax.default)
def softmax(em: Emitter, self: Any, dim: int, half_to_float: bool) -> SSAValue:
    out = em.result_type()
    x = em.cast(em.value(self), out.element_type)
    return em.build(tcp.SoftmaxOp, [x], axis=int_attr(normalize_axis(em, dim, len(shape_of(x)))))


@rule(aten._log_softmax.default)
def log_softmax(em: Emitter, self: Any, dim: int, half_to_float: bool) -> SSAValue:
    """x - max - log(sum(exp(x - max))), the numerically stable form."""
    out = em.result_type()
    x = em.cast(em.value(self), out.element_type)
    shape = shape_of(x)
    axis = normalize_axis(em, dim, len(shape))
    shifted = em.build(tcp.SubOp, [x, em.broadcast_to(reduce(em, tcp.ReduceMaxOp, x, [axis], True), shape)])
    total = reduce(em, tcp.ReduceSumOp, em.build(tcp.ExpOp, [shifted]), [axis], True)
    return em.build(tcp.SubOp, [shifted, em.broadcast_to(em.build(tcp.LogOp, [total]), shape)])


@rule(aten.max_pool2d_with_indices.default, aten.max_pool2d.default)
def max_pool2d(
    em: Emitter, self: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False
) -> object:
    kernel = _pair(em, kernel_size, "kernel_size")
    ph, pw = _pair(em, padding, "padding")
    y = em.build(
        tcp.MaxPool2dOp,
        [em.value(self)],
        kernel=i64_array(kernel),
        stride=i64_array(_pair(em, stride, "stride", kernel)),
        padding=i64_array([ph, ph, pw, pw]),
        dilation=i64_array(_pair(em, dilation, "dilation")),
        ceil_mode=bool_attr(ceil_mode),
    )
    if em.node is not None and em.node.target == aten.max_pool2d.default:
        return y
    return y, Unavailable("the max-pool indices")


@rule(aten.avg_pool2d.default)
def avg_pool2d(
    em: Emitter,
    self: Any,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: Any = None,
) -> SSAValue:
    if divisor_override is not None:
        em.unsupported("avg_pool2d with divisor_override")
    kernel = _pair(em, kernel_size, "kernel_size")
    ph, pw = _pair(em, padding, "padding")
    return em.build(
        tcp.AvgPool2dOp,
        [em.value(self)],
        kernel=i64_array(kernel),
        stride=i64_array(_pair(em, stride, "stride", kernel)),
        padding=i64_array([ph, ph, pw, pw]),
        ceil_mode=bool_attr(ceil_mode),
        count_include_pad=bool_attr(count_include_pad),
    )


@rule(aten._adaptive_avg_pool2d.default, aten.adaptive_avg_pool2d.default)
def adaptive_avg_pool2d(em: Emitter, self: Any, output_size: Any) -> SSAValue:
    x = em.value(self)
    h, w = shape_of(x)[-2:]
    oh, ow = _pair(em, output_size, "output_size")
    if (oh, ow) == (1, 1):
        return reduce(em, tcp.ReduceMeanOp, x, [len(shape_of(x)) - 2, len(shape_of(x)) - 1], True)
    if len(shape_of(x)) != 4:
        em.unsupported(f"adaptive average pooling of a rank-{len(shape_of(x))} input (expected [N, C, H, W])")
    if h % oh or w % ow:
        return _adaptive_windows(em, x, (oh, ow))
    kernel = i64_array([h // oh, w // ow])
    return em.build(
        tcp.AvgPool2dOp,
        [x],
        kernel=kernel,
        stride=kernel,
        padding=i64_array([0, 0, 0, 0]),
        ceil_mode=bool_attr(False),
        count_include_pad=bool_attr(True),
    )


def _adaptive_windows(em: Emitter, x: SSAValue, out: tuple[int, int]) -> SSAValue:
    """Adaptive average pooling where the sizes do not divide: output ``i`` of an axis
    averages input ``[floor(i * n / m), ceil((i + 1) * n / m))`` (PyTorch's windows,
    of at most ``k`` elements): the sum over ``t < k`` of the element at ``start + t``
    (a gather by a small index parameter) times ``1 / length`` where ``t < length``,
    else 0 (a weight parameter), one axis after the other."""
    node = em.node.name if em.node is not None else "adaptive_pool"
    element = element_of(x)
    for axis, m in ((2, out[0]), (3, out[1])):
        n = shape_of(x)[axis]
        starts = [i * n // m for i in range(m)]
        ends = [-(-(i + 1) * n // m) for i in range(m)]
        k = max(e - b for b, e in zip(starts, ends))
        shape = list(shape_of(x))
        shape[axis] = m
        column = [1] * 4
        column[axis] = m
        total: SSAValue | None = None
        for t in range(k):
            index = torch.tensor([min(b + t, n - 1) for b in starts], dtype=torch.int64)
            weight = torch.tensor([1.0 / (e - b) if b + t < e else 0.0 for b, e in zip(starts, ends)]).to(torch_dtype(element))
            picked = em.build(tcp.GatherOp, [x, em.param(f"{node}.index{axis}_{t}", index)], axis=int_attr(axis))
            w = em.broadcast_to(em.reshape(em.param(f"{node}.weight{axis}_{t}", weight), column), shape)
            term = em.build(tcp.MulOp, [picked, w])
            total = term if total is None else em.build(tcp.AddOp, [total, term])
        assert total is not None
        x = total
    return x
