"""Neural-network ops: matmul, convolution, pooling, softmax and the norms.

Convolution and pooling use NCHW activations and OIHW weights as the logical
order; padding is ``(top, bottom, left, right)`` so that asymmetric padding (as
StableHLO allows) needs no extra op. Accumulation is at least float32 everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, IntegerAttr, TensorType
from xdsl.ir import Attribute
from xdsl.irdl import VarConstraint, base, irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import Pure

from dnnc.ir.attrs import ints, scalar
from dnnc.ir.tcp.base import TcpOp, check_axis, check_elements, check_len, check_same, fail
from dnnc.ir.types import FLOAT_TYPES, describe


def _check_positive(op: str, name: str, values: Sequence[int]) -> None:
    if any(v < 1 for v in values):
        raise fail(op, f"{name} must be positive, got {list(values)}")


def _check_padding(op: str, padding: Sequence[int]) -> None:
    check_len(op, "padding", padding, 4)
    if any(p < 0 for p in padding):
        raise fail(op, f"padding must be non-negative, got {list(padding)}")


def _window_out(size: int, pad_lo: int, pad_hi: int, window: int, stride: int, dilation: int, ceil: bool) -> int:
    """Output length of a sliding window, with PyTorch's ceil_mode rule: the last
    window must start inside the input or the leading padding."""
    span = size + pad_lo + pad_hi - dilation * (window - 1) - 1
    if span < 0:
        return 0
    out = (-(-span // stride) if ceil else span // stride) + 1
    if ceil and (out - 1) * stride >= size + pad_lo:
        out -= 1
    return out


def _check_float_pair(op: str, a: TensorType, b: TensorType) -> None:
    check_elements(op, a, FLOAT_TYPES)
    if a.element_type != b.element_type:
        raise fail(op, f"element types differ: {describe(a)} and {describe(b)}")


class _MatmulBase(TcpOp):
    """``[*B, M, K] x [*B, K, N] -> [*B, M, N]`` with ``BATCH_DIMS`` leading batch dims."""

    BATCH_DIMS: ClassVar[int] = 0
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` `(` type($lhs) `,` type($rhs) `)` `->` type($result)"

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType]:
        a, b = operand_types
        _check_float_pair(cls.name, a, b)
        sa, sb = a.get_shape(), b.get_shape()
        rank = cls.BATCH_DIMS + 2
        if len(sa) != rank or len(sb) != rank or sa[:-2] != sb[:-2] or sa[-1] != sb[-2]:
            batch = "[B, " if cls.BATCH_DIMS else "["
            raise fail(cls.name, f"needs {batch}M, K] x {batch}K, N], got {describe(a)} x {describe(b)}")
        return [TensorType(a.element_type, [*sa[:-1], sb[-1]])]


@irdl_op_definition
class MatmulOp(_MatmulBase):
    """``[M, K] x [K, N] -> [M, N]``."""

    name = "tcp.matmul"


@irdl_op_definition
class BatchMatmulOp(_MatmulBase):
    """``[B, M, K] x [B, K, N] -> [B, M, N]``, one matmul per batch entry."""

    name = "tcp.batch_matmul"
    BATCH_DIMS: ClassVar[int] = 1


@irdl_op_definition
class Conv2dOp(TcpOp):
    """2-D cross-correlation. input ``[N, C, H, W]``, weight ``[O, C / groups, KH, KW]``,
    result ``[N, O, HO, WO]``; ``groups = C`` with ``O = C`` is a depthwise conv.
    No bias: a bias is a broadcast ``tcp.add`` after it."""

    name = "tcp.conv2d"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    stride = prop_def(DenseArrayBase)
    padding = prop_def(DenseArrayBase)
    dilation = prop_def(DenseArrayBase)
    groups = prop_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input `,` $weight attr-dict `:` `(` type($input) `,` type($weight) `)` `->` type($result)"

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType]:
        x, w = operand_types
        _check_float_pair(cls.name, x, w)
        sx, sw = x.get_shape(), w.get_shape()
        if len(sx) != 4 or len(sw) != 4:
            raise fail(cls.name, f"needs a rank-4 input and weight, got {describe(x)} and {describe(w)}")
        stride, padding, dilation = ints(props["stride"]), ints(props["padding"]), ints(props["dilation"])
        groups = scalar(props["groups"])
        check_len(cls.name, "stride", stride, 2)
        check_len(cls.name, "dilation", dilation, 2)
        _check_positive(cls.name, "stride", stride)
        _check_positive(cls.name, "dilation", dilation)
        _check_padding(cls.name, padding)
        n, c, h, wd = sx
        o, cg, kh, kw = sw
        if groups < 1 or c % groups or o % groups or cg * groups != c:
            raise fail(cls.name, f"input channels {c} and weight {describe(w)} do not fit groups = {groups}")
        ho = _window_out(h, padding[0], padding[1], kh, stride[0], dilation[0], False)
        wo = _window_out(wd, padding[2], padding[3], kw, stride[1], dilation[1], False)
        if ho < 1 or wo < 1:
            raise fail(cls.name, f"kernel {kh}x{kw} does not fit the padded input {h}x{wd}")
        return [TensorType(x.element_type, [n, o, ho, wo])]


def _pool_infer(op: str, x: TensorType, props: Mapping[str, Attribute], dilation: Sequence[int]) -> TensorType:
    check_elements(op, x, FLOAT_TYPES)
    shape = x.get_shape()
    if len(shape) != 4:
        raise fail(op, f"needs an [N, C, H, W] input, got {describe(x)}")
    kernel, stride, padding = ints(props["kernel"]), ints(props["stride"]), ints(props["padding"])
    ceil = bool(scalar(props["ceil_mode"]))
    for name, values in (("kernel", kernel), ("stride", stride), ("dilation", dilation)):
        check_len(op, name, values, 2)
        _check_positive(op, name, values)
    _check_padding(op, padding)
    if ceil and (padding[0] != padding[1] or padding[2] != padding[3]):
        raise fail(op, f"ceil_mode needs symmetric padding, got {list(padding)}")
    ho = _window_out(shape[2], padding[0], padding[1], kernel[0], stride[0], dilation[0], ceil)
    wo = _window_out(shape[3], padding[2], padding[3], kernel[1], stride[1], dilation[1], ceil)
    if ho < 1 or wo < 1:
        raise fail(op, f"window {kernel[0]}x{kernel[1]} does not fit the padded input {shape[2]}x{shape[3]}")
    return TensorType(x.element_type, [shape[0], shape[1], ho, wo])


@irdl_op_definition
class MaxPool2dOp(TcpOp):
    """Max over each window of an ``[N, C, H, W]`` input; padding counts as -inf.
    ``ceil_mode`` follows PyTorch (needs symmetric padding)."""

    name = "tcp.max_pool2d"
    input = operand_def(TensorType)
    kernel = prop_def(DenseArrayBase)
    stride = prop_def(DenseArrayBase)
    padding = prop_def(DenseArrayBase)
    dilation = prop_def(DenseArrayBase)
    ceil_mode = prop_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType]:
        return [_pool_infer(cls.name, operand_types[0], props, ints(props["dilation"]))]


@irdl_op_definition
class AvgPool2dOp(TcpOp):
    """Mean over each window of an ``[N, C, H, W]`` input. With
    ``count_include_pad`` the divisor is the window clipped to the padded input,
    otherwise the number of real input elements in the window (PyTorch's rule; a
    window of padding only is then 0 / 0 = NaN). Global average pooling is
    ``tcp.reduce_mean`` over H and W."""

    name = "tcp.avg_pool2d"
    input = operand_def(TensorType)
    kernel = prop_def(DenseArrayBase)
    stride = prop_def(DenseArrayBase)
    padding = prop_def(DenseArrayBase)
    ceil_mode = prop_def(IntegerAttr)
    count_include_pad = prop_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType]:
        return [_pool_infer(cls.name, operand_types[0], props, (1, 1))]


@irdl_op_definition
class SoftmaxOp(TcpOp):
    """``exp(x - max) / sum(exp(x - max))`` along ``axis``."""

    name = "tcp.softmax"
    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    axis = prop_def(IntegerAttr)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($result)"

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType]:
        (x,) = operand_types
        check_elements(cls.name, x, FLOAT_TYPES)
        check_axis(cls.name, scalar(props["axis"]), len(x.get_shape()))
        return [x]


@irdl_op_definition
class LayerNormOp(TcpOp):
    """Normalize over dimensions ``axis..rank-1`` with the biased variance, then
    ``* weight + bias`` (both shaped like those dimensions):
    ``(x - mean) / sqrt(var + eps) * weight + bias``."""

    name = "tcp.layer_norm"
    T: ClassVar = VarConstraint("T", base(TensorType))
    V: ClassVar = VarConstraint("V", base(TensorType))
    input = operand_def(T)
    weight = operand_def(V)
    bias = operand_def(V)
    axis = prop_def(IntegerAttr)
    epsilon = prop_def(FloatAttr)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$input `,` $weight `,` $bias attr-dict `:` type($input) `,` type($weight)"

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType]:
        x, w, b = operand_types
        check_elements(cls.name, x, FLOAT_TYPES)
        shape = x.get_shape()
        axis = scalar(props["axis"])
        check_axis(cls.name, axis, len(shape))
        check_same(cls.name, [w, b])
        if w.element_type != x.element_type or tuple(w.get_shape()) != tuple(shape[axis:]):
            raise fail(cls.name, f"weight and bias must be {list(shape[axis:])} of the input's type, got {describe(w)}")
        if scalar(props["epsilon"]) < 0:
            raise fail(cls.name, "epsilon must be non-negative")
        return [x]


@irdl_op_definition
class RmsNormOp(TcpOp):
    """Root-mean-square norm over dimensions ``axis..rank-1``, then ``* weight``
    (shaped like those dimensions): ``x / sqrt(mean(x^2) + eps) * weight``
    (Llama's and T5's norm; no mean is subtracted)."""

    name = "tcp.rms_norm"
    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    weight = operand_def(TensorType)
    axis = prop_def(IntegerAttr)
    epsilon = prop_def(FloatAttr)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$input `,` $weight attr-dict `:` type($input) `,` type($weight)"

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType]:
        x, w = operand_types
        check_elements(cls.name, x, FLOAT_TYPES)
        shape = x.get_shape()
        axis = scalar(props["axis"])
        check_axis(cls.name, axis, len(shape))
        if w.element_type != x.element_type or tuple(w.get_shape()) != tuple(shape[axis:]):
            raise fail(cls.name, f"weight must be {list(shape[axis:])} of the input's type, got {describe(w)}")
        if scalar(props["epsilon"]) < 0:
            raise fail(cls.name, "epsilon must be non-negative")
        return [x]


@irdl_op_definition
class BatchNormOp(TcpOp):
    """Inference batch norm over channel axis 1:
    ``(x - mean) / sqrt(var + eps) * scale + offset`` with per-channel ``[C]`` vectors.
    Canonicalization folds it into a preceding conv or matmul where it can."""

    name = "tcp.batch_norm"
    T: ClassVar = VarConstraint("T", base(TensorType))
    V: ClassVar = VarConstraint("V", base(TensorType))
    input = operand_def(T)
    scale = operand_def(V)
    offset = operand_def(V)
    mean = operand_def(V)
    variance = operand_def(V)
    epsilon = prop_def(FloatAttr)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$input `,` $scale `,` $offset `,` $mean `,` $variance attr-dict `:` type($input) `,` type($scale)"

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType]:
        x, *vectors = operand_types
        check_elements(cls.name, x, FLOAT_TYPES)
        shape = x.get_shape()
        if len(shape) < 2:
            raise fail(cls.name, f"needs a channel axis 1, got {describe(x)}")
        check_same(cls.name, vectors)
        if vectors[0] != TensorType(x.element_type, [shape[1]]):
            raise fail(cls.name, f"per-channel vectors must be [{shape[1]}] of the input's type, got {describe(vectors[0])}")
        if scalar(props["epsilon"]) < 0:
            raise fail(cls.name, "epsilon must be non-negative")
        return [x]


NN_OPS = (MatmulOp, BatchMatmulOp, Conv2dOp, MaxPool2dOp, AvgPool2dOp, SoftmaxOp, LayerNormOp, RmsNormOp, BatchNormOp)
