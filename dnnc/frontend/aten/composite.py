"""Rules for the ops ``torch.export`` keeps before decomposing to core ATen (conv1d,
conv2d, conv3d, conv_transpose1d/2d/3d, linear, batch_norm, group_norm, layer_norm,
dropout, softmax, pad, chunk, unbind, ``Tensor.to``, ...; ``min.other`` and ``__and__`` share the rules of
``minimum`` and ``bitwise_and``), written as
the core ops they decompose to. Decomposing re-traces the whole graph, about 60% of export
(mobilenetv2_100: 2.1 s export, 2.7 s decomposition on a CPU); a graph whose every op has
a rule here or among the core ops is imported as exported (``torch_export.for_import``),
any other is decomposed first. A rule here refuses what its core form would not cover the
same way, and the importer then decomposes and imports again."""

from __future__ import annotations

import math
from typing import Any

import torch
from xdsl.dialects.builtin import i1
from xdsl.ir import SSAValue

from dnnc.frontend.aten.elementwise import binary, clamp_value
from dnnc.frontend.aten.nn import batch_norm as batch_norm_inference
from dnnc.frontend.aten.nn import convolution
from dnnc.frontend.aten.nn import group_norm as native_group_norm
from dnnc.frontend.aten.nn import layer_norm as native_layer_norm
from dnnc.frontend.aten.nn import softmax as softmax_core
from dnnc.frontend.aten.registry import aten, normalize_axis, rule
from dnnc.frontend.aten.shape import constant_pad_nd, reshape, split
from dnnc.frontend.emitter import Emitter
from dnnc.ir import tcp
from dnnc.ir.types import shape_of


@rule(aten.conv1d.default, aten.conv2d.default, aten.conv3d.default)
def conv(
    em: Emitter, input: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0, dilation: Any = 1, groups: int = 1
) -> SSAValue:
    """conv1d, conv2d and conv3d of a batch; an unbatched input is left to the
    decomposition, which adds the batch dimension around the convolution."""
    spatial = len(shape_of(em.value(weight))) - 2
    if len(shape_of(em.value(input))) != spatial + 2:
        em.unsupported(f"conv{spatial}d of an unbatched input")
    return convolution(em, input, weight, bias, stride, padding, dilation, False, [0] * spatial, groups)


@rule(aten.conv_transpose1d.default, aten.conv_transpose2d.input, aten.conv_transpose3d.input)
def conv_transpose(
    em: Emitter,
    input: Any,
    weight: Any,
    bias: Any = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: int = 1,
    dilation: Any = 1,
) -> SSAValue:
    """conv_transpose1d, 2d and 3d of a batch (an unbatched input is left to the
    decomposition)."""
    spatial = len(shape_of(em.value(weight))) - 2
    if len(shape_of(em.value(input))) != spatial + 2:
        em.unsupported(f"conv_transpose{spatial}d of an unbatched input")
    return convolution(em, input, weight, bias, stride, padding, dilation, True, output_padding, groups)


@rule(aten.batch_norm.default)
def batch_norm(
    em: Emitter,
    input: Any,
    weight: Any,
    bias: Any,
    running_mean: Any,
    running_var: Any,
    training: bool,
    momentum: Any,
    eps: float,
    cudnn_enabled: bool = False,
) -> SSAValue:
    if training or running_mean is None or running_var is None:
        em.unsupported("batch norm in training mode (call model.eval() before exporting)")
    return batch_norm_inference(em, input, weight, bias, running_mean, running_var, momentum, eps)[0]  # type: ignore[return-value]


@rule(aten.layer_norm.default)
def layer_norm(
    em: Emitter,
    input: Any,
    normalized_shape: Any,
    weight: Any = None,
    bias: Any = None,
    eps: float = 1e-5,
    cudnn_enable: bool = True,
) -> SSAValue:
    return native_layer_norm(em, input, normalized_shape, weight, bias, eps)[0]  # type: ignore[return-value]


@rule(aten.group_norm.default)
def group_norm(
    em: Emitter, input: Any, num_groups: int, weight: Any = None, bias: Any = None, eps: float = 1e-5, cudnn_enabled: bool = True
) -> SSAValue:
    shape = shape_of(em.value(input))
    if len(shape) < 2:
        em.unsupported(f"group norm of a {len(shape)}-d tensor")
    return native_group_norm(em, input, weight, bias, shape[0], shape[1], math.prod(shape[2:]), num_groups, eps)[0]  # type: ignore[return-value]


@rule(aten.to.dtype, aten.to.dtype_layout, aten.to.device, aten.to.other)
def to(em: Emitter, self: Any, *args: Any, **kwargs: Any) -> SSAValue:
    """``Tensor.to``: a cast to the result's element type (the device is the program's,
    and a tcp value has no layout or strides); another layout than strided is refused."""
    layout = kwargs.get("layout")
    if layout is not None and layout != torch.strided:
        em.unsupported(f"conversion to the {layout} layout")
    return em.cast(em.value(self), em.result_type().element_type)


@rule(aten.diff.default)
def diff(em: Emitter, self: Any, n: int = 1, dim: int = -1, prepend: Any = None, append: Any = None) -> SSAValue:
    """``x[1:] - x[:-1]`` along ``dim``; more than one difference, prepended or appended
    values and booleans (where it is an exclusive or) go through the decomposition."""
    x = em.value(self)
    shape = shape_of(x)
    if n != 1 or prepend is not None or append is not None or em.result_type().element_type == i1:
        em.unsupported("diff with n > 1, prepend, append or of booleans")
    axis = normalize_axis(em, dim, len(shape))
    return binary(em, tcp.SubOp, em.slice(x, axis, 1, shape[axis]), em.slice(x, axis, 0, shape[axis] - 1))


@rule(aten.dropout.default)
def dropout(em: Emitter, input: Any, p: float, train: bool) -> SSAValue:
    if train and p > 0:
        em.unsupported("dropout in training mode (call model.eval() before exporting)")
    return em.value(input)


@rule(aten.linear.default)
def linear(em: Emitter, input: Any, weight: Any, bias: Any = None) -> SSAValue:
    """``input @ weight.T + bias`` as the decomposition writes it: the input flattened
    to rows, a matmul with the transposed weight, the bias added, the rows shaped back."""
    x, w = em.value(input), em.value(weight)
    shape = shape_of(x)
    if len(shape) < 2 or len(shape_of(w)) != 2:
        em.unsupported("linear of a vector")
    rows = (math.prod(shape[:-1]), shape[-1])
    y = em.build(tcp.MatmulOp, [em.reshape(x, rows), em.transpose(w, [1, 0])])
    if bias is not None:
        y = em.build(tcp.AddOp, [y, em.broadcast_to(em.value(bias), shape_of(y))])
    return em.reshape(y, (*shape[:-1], shape_of(w)[0]))


@rule(aten.hardsigmoid.default)
def hardsigmoid(em: Emitter, self: Any) -> SSAValue:
    """``clamp(x + 3, 0, 6) / 6``."""
    return binary(em, tcp.DivOp, clamp_value(em, binary(em, tcp.AddOp, self, 3), 0.0, 6.0), 6)


@rule(aten.hardswish.default)
def hardswish(em: Emitter, self: Any) -> SSAValue:
    """``x * clamp(x + 3, 0, 6) / 6``."""
    return binary(em, tcp.DivOp, binary(em, tcp.MulOp, self, clamp_value(em, binary(em, tcp.AddOp, self, 3), 0.0, 6.0)), 6)


@rule(aten.unbind.int)
def unbind(em: Emitter, self: Any, dim: int = 0) -> tuple[SSAValue, ...]:
    x = em.value(self)
    shape = shape_of(x)
    axis = normalize_axis(em, dim, len(shape))
    rest = shape[:axis] + shape[axis + 1 :]
    return tuple(em.reshape(em.slice(x, axis, i, i + 1), rest) for i in range(shape[axis]))


@rule(aten.softmax.int)
def softmax(em: Emitter, self: Any, dim: int, dtype: Any = None) -> SSAValue:
    return softmax_core(em, self, dim, False)


@rule(aten.pad.default)
def pad(em: Emitter, self: Any, pad: Any, mode: str = "constant", value: Any = None) -> SSAValue:
    if mode != "constant":
        em.unsupported(f"{mode} padding")
    return constant_pad_nd(em, self, pad, 0 if value is None else value)


@rule(aten.contiguous.default)
def contiguous(em: Emitter, self: Any, memory_format: Any = None) -> SSAValue:
    return em.value(self)  # a tcp value has no strides


@rule(aten.reshape_as.default)
def reshape_as(em: Emitter, self: Any, other: Any) -> SSAValue:
    return reshape(em, self)


@rule(aten.chunk.default)
def chunk(em: Emitter, self: Any, chunks: int, dim: int = 0) -> tuple[SSAValue, ...]:
    """Parts of ``ceil(n / chunks)`` along ``dim``, the last one shorter (as torch.chunk)."""
    shape = shape_of(em.value(self))
    n = shape[normalize_axis(em, dim, len(shape))]
    return split(em, self, max(1, math.ceil(n / chunks)), dim)
