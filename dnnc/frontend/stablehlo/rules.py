"""One import rule per StableHLO op: ``fn(im, op, operands) -> [tcp values]``.

Layouts are made explicit: a convolution or pooling in any dimension order is
transposed to NCHW around the tcp op (canonicalization and the GPU layout pass
cancel the transposes between ops); ``dot_general`` becomes transposes, reshapes
and a (batch) matmul; ``broadcast_in_dim`` a reshape and a broadcast.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import prod
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from xdsl.ir import SSAValue

from dnnc.ir import tcp
from dnnc.ir.analysis import inverse_permutation, splat_value
from dnnc.ir.attrs import float_attr, i64_array, int_attr, str_attr
from dnnc.ir.types import element_of, is_float, shape_of, tensor_type, torch_dtype
from dnnc.rules import RuleTable

if TYPE_CHECKING:
    from dnnc.frontend.stablehlo.importer import Importer

Rule = Callable[["Importer", Any, list[SSAValue]], list[SSAValue]]
RULES: RuleTable[str, Rule] = RuleTable("StableHLO import")
rule = RULES.rule


def _ir() -> Any:
    from jaxlib.mlir import ir

    return ir


def ints(op: Any, name: str, default: Sequence[int] | None = None) -> list[int]:
    """An integer array attribute (``array<i64: ...>`` or ``dense<...>``) as a list."""
    ir = _ir()
    if name not in op.attributes:
        if default is None:
            raise KeyError(name)
        return list(default)
    attr = op.attributes[name]
    for kind in (ir.DenseI64ArrayAttr, ir.DenseI32ArrayAttr):
        try:
            return [int(v) for v in kind(attr)]
        except (ValueError, TypeError):
            pass
    return [int(v) for v in np.array(ir.DenseIntElementsAttr(attr)).reshape(-1)]


def _bools(op: Any, name: str) -> list[bool]:
    ir = _ir()
    if name not in op.attributes:
        return []
    try:
        return [bool(v) for v in ir.DenseBoolArrayAttr(op.attributes[name])]
    except (ValueError, TypeError):
        return [bool(v) for v in np.array(ir.DenseElementsAttr(op.attributes[name])).reshape(-1)]


# Sources ------------------------------------------------------------------------------


@rule("stablehlo.constant")
def _constant(im: Importer, op: Any, args: list[SSAValue]) -> list[SSAValue]:
    ir = _ir()
    t = im.type_of(op.results[0])
    attr = ir.DenseElementsAttr(op.attributes["value"])
    if attr.is_splat:
        splat = attr.get_splat_value()
        value = ir.FloatAttr(splat).value if is_float(t.element_type) else ir.IntegerAttr(splat).value
        return [im.constant(value, shape_of(t), t.element_type)]
    array = np.array(attr)
    dtype = torch_dtype(t.element_type)
    tensor = (
        torch.from_numpy(array.astype(np.float32) if dtype == torch.bfloat16 else array.copy()).to(dtype).reshape(shape_of(t))
    )
    name = im.params.fresh_name("constant")
    im.params.add(name, tensor.contiguous())
    return [im.emit(tcp.ParamOp(name, t))]


@rule("stablehlo.reverse")
def _reverse(im: Importer, op: Any, args: list[SSAValue]) -> list[SSAValue]:
    """Reversed along ``dimensions`` (a flipped kernel: ``lax.conv_transpose`` with
    ``transpose_kernel=True``)."""
    (x,) = args
    for axis in ints(op, "dimensions"):
        x = im.flip(x, axis)
    return [x]


@rule("stablehlo.iota")
def _iota(im: Importer, op: Any, args: list[SSAValue]) -> list[SSAValue]:
    t = im.type_of(op.results[0])
    shape, dim = shape_of(t), ints_scalar(op, "iota_dimension")
    line = im.emit(tcp.IotaOp(0, 1, tensor_type([shape[dim]], t.element_type)))
    return [im.broadcast_to(im.reshape(line, [shape[dim] if i == dim else 1 for i in range(len(shape))]), shape)]


def ints_scalar(op: Any, name: str) -> int:
    return int(_ir().IntegerAttr(op.attributes[name]).value)


# Elementwise --------------------------------------------------------------------------

_BINARY = {
    "stablehlo.add": tcp.AddOp,
    "stablehlo.subtract": tcp.SubOp,
    "stablehlo.multiply": tcp.MulOp,
    "stablehlo.divide": tcp.DivOp,
    "stablehlo.maximum": tcp.MaximumOp,
    "stablehlo.minimum": tcp.MinimumOp,
    "stablehlo.power": tcp.PowOp,
    "stablehlo.and": tcp.LogicalAndOp,
    "stablehlo.or": tcp.LogicalOrOp,
}
_UNARY = {
    "stablehlo.exponential": tcp.ExpOp,
    "stablehlo.log": tcp.LogOp,
    "stablehlo.tanh": tcp.TanhOp,
    "stablehlo.logistic": tcp.SigmoidOp,
    "stablehlo.sqrt": tcp.SqrtOp,
    "stablehlo.rsqrt": tcp.RsqrtOp,
    "stablehlo.negate": tcp.NegOp,
    "stablehlo.abs": tcp.AbsOp,
    "stablehlo.not": tcp.LogicalNotOp,
    "chlo.erf": tcp.ErfOp,
}


def _binary(im: Importer, op: Any, args: list[SSAValue]) -> list[SSAValue]:
    kind = _BINARY[op.operation.name]
    if kind in (tcp.LogicalAndOp, tcp.LogicalOrOp) and str(element_of(args[0])) != "i1":
        im.fail("bitwise and/or of integers is not supported (only of booleans)")
    if kind in (tcp.MaximumOp, tcp.MinimumOp) and is_float(element_of(args[0])):
        # max(x, 0) is how JAX writes ReLU: as a clamp it is the ReLU every backend's patterns know
        for x, bound in ((args[0], args[1]), (args[1], args[0])):
            value = splat_value(bound)
            if value == (float("-inf") if kind is tcp.MaximumOp else float("inf")):
                return [x]  # max(x, -inf) and min(x, inf) are x (NaN stays NaN)
            if value is not None:
                side = "min" if kind is tcp.MaximumOp else "max"
                return [im.build(tcp.ClampOp, [x], **{side: float_attr(float(value))})]
    return [im.build(kind, args)]


def _unary(im: Importer, op: Any, args: list[SSAValue]) -> list[SSAValue]:
    return [im.build(_UNARY[op.operation.name], args)]


for _name in _BINARY:
    RULES[_name] = _binary
for _name in _UNARY:
    RULES[_name] = _unary


@rule("chlo.erfc")
def _erfc(im: Importer, op: Any, args: list[SSAValue]) -> list[SSAValue]:
    (x,) = args
    one = im.constant(1.0, shape_of(x), element_of(x))
    return [im.build(tcp.SubOp, [one, im.build(tcp.ErfOp, [x])])]


@rule("stablehlo.convert")
def _convert(im: Importer, op: Any, args: list[SSAValue]) -> list[SSAValue]:
    return [im.cast(args[0], im.type_of(op.results[0]).element_type)]


_PREDICATES = {"EQ": "eq", "NE": "ne", "LT": "lt", "LE": "le", "GT": "gt", "GE": "ge"}


@rule("stablehlo.compare")
def _compare(im: Importer, op: Any, args: list[SSAValue]) -> list[SSAValue]:
    from jaxlib.mlir.dialects import stablehlo

    direction = stablehlo.ComparisonDirectionAttr(op.attributes["comparison_direction"]).value
    return [im.build(tcp.CompareOp, args, predicate=str_attr(_PREDICATES[direction]))]


@rule("stablehlo.select")
def _select(im: Importer, op: Any, args: list[SSAValue]) -> list[SSAValue]:
    pred, on_true, on_false = args
    pred = im.broadcast_to(pred, shape_of(on_true))
    return [im.build(tcp.SelectOp, [pred, on_true, on_false])]


@rule("stablehlo.clamp")
def _clamp(im: Importer, op: Any, args: list[SSAValue]) -> list[SSAValue]:
    lo, hi = splat_value(args[0]), splat_value(args[2])
    if lo is not None and hi is not None and is_float(element_of(args[1])):
        return [im.build(tcp.ClampOp, [args[1]], min=float_attr(float(lo)), max=float_attr(float(hi)))]
    low, x, high = (im.broadcast_to(v, shape_of(args[1])) for v in args)
    return [im.build(tcp.MaximumOp, [im.build(tcp.MinimumOp, [x, high]), low])]


# Shapes -------------------------------------------------------------------------------


@rule("stablehlo.reshape")
def _reshape(im: Importer, op: Any, args: list[SSAValue]) -> list[SSAValue]:
    return [im.reshape(args[0], shape_of(im.type_of(op.results[0])))]


@rule("stablehlo.transpose")
def _transpose(im: Importer, op: Any, args: list[SSAValue]) -> list[SSAValue]:
    return [im.transpose(args[0], ints(op, "permutation"))]


@rule("stablehlo.broadcast_in_dim")
def _broadcast_in_dim(im: Importer, op: Any, args: list[SSAValue]) -> list[SSAValue]:
    (x,) = args
    out = shape_of(im.type_of(op.results[0]))
    dims = ints(op, "broadcast_dimensions")
    order = sorted(range(len(dims)), key=dims.__getitem__)
    x = im.transpose(x, order)  # operand dims in the order they appear in the result
    src = shape_of(x)
    placed = dict(zip(sorted(dims), src))
    x = im.reshape(x, [placed.get(i, 1) for i in range(len(out))])
    return [im.broadcast_to(x, out)]


@rule("stablehlo.concatenate")
def _concatenate(im: Importer, op: Any, args: list[SSAValue]) -> list[SSAValue]:
    return [im.build(tcp.ConcatOp, [args], axis=int_attr(ints_scalar(op, "dimension")))]


@rule("stablehlo.slice")
def _slice(im: Importer, op: Any, args: list[SSAValue]) -> list[SSAValue]:
    return [
        im.build(
            tcp.SliceOp,
            args,
            starts=i64_array(ints(op, "start_indices")),
            limits=i64_array(ints(op, "limit_indices")),
            strides=i64_array(ints(op, "strides")),
        )
    ]


def _splat_of(im: Importer, value: SSAValue, what: str) -> float | int:
    found = splat_value(value)
    if found is None:
        im.fail(f"{what} must be a constant")
    return found


@rule("stablehlo.pad")
def _pad(im: Importer, op: Any, args: list[SSAValue]) -> list[SSAValue]:
    x, value = args
    low, high, interior = ints(op, "edge_padding_low"), ints(op, "edge_padding_high"), ints(op, "interior_padding")
    if any(interior) or any(v < 0 for v in (*low, *high)):
        im.fail(f"interior or negative padding (low {low}, high {high}, interior {interior}) is not supported")
    fill = _splat_of(im, value, "the padding value")
    attr = float_attr(float(fill)) if is_float(element_of(x)) else int_attr(int(fill))
    return [im.build(tcp.PadOp, [x], low=i64_array(low), high=i64_array(high), value=attr)]


@rule("stablehlo.gather")
def _gather(im: Importer, op: Any, args: list[SSAValue]) -> list[SSAValue]:
    """Row lookups (``jnp.take(table, ids, axis)``, embeddings): whole slices of one axis."""
    from jaxlib.mlir.dialects import stablehlo

    x, indices = args
    d = stablehlo.GatherDimensionNumbers(op.attributes["dimension_numbers"])
    shape, idx_shape, sizes = shape_of(x), shape_of(indices), ints(op, "slice_sizes")
    collapsed, start_map = list(d.collapsed_slice_dims), list(d.start_index_map)
    if len(start_map) != 1 or collapsed != start_map or list(d.operand_batching_dims):
        im.fail("only gathers of whole slices along one axis (jnp.take, embeddings) are supported")
    axis = start_map[0]
    if sizes != [1 if i == axis else n for i, n in enumerate(shape)]:
        im.fail(f"slice sizes {sizes} do not take whole slices of {list(shape)} along axis {axis}")
    if d.index_vector_dim < len(idx_shape):
        if idx_shape[d.index_vector_dim] != 1:
            im.fail("index vectors longer than 1 are not supported")
        indices = im.reshape(indices, [n for i, n in enumerate(idx_shape) if i != d.index_vector_dim])
    y = im.build(tcp.GatherOp, [x, indices], axis=int_attr(axis))
    batch = len(shape_of(indices))
    # tcp puts the index dims at ``axis``; StableHLO puts the offset (slice) dims at ``offset_dims``
    offset_dims = list(d.offset_dims)
    rank = len(shape_of(y))
    slice_axes = [i for i in range(rank) if not axis <= i < axis + batch]
    perm = [0] * rank
    batch_positions = [i for i in range(rank) if i not in offset_dims]
    for pos, src in zip(offset_dims, slice_axes):
        perm[pos] = src
    for pos, src in zip(batch_positions, range(axis, axis + batch)):
        perm[pos] = src
    return [im.transpose(y, perm)]


# Contractions -------------------------------------------------------------------------


@rule("stablehlo.dot_general")
def _dot_general(im: Importer, op: Any, args: list[SSAValue]) -> list[SSAValue]:
    from jaxlib.mlir.dialects import stablehlo

    lhs, rhs = args
    d = stablehlo.DotDimensionNumbers(op.attributes["dot_dimension_numbers"])
    lb, rb = list(d.lhs_batching_dimensions), list(d.rhs_batching_dimensions)
    lc, rc = list(d.lhs_contracting_dimensions), list(d.rhs_contracting_dimensions)
    ls, rs = shape_of(lhs), shape_of(rhs)
    lf = [i for i in range(len(ls)) if i not in lb + lc]
    rf = [i for i in range(len(rs)) if i not in rb + rc]
    batch = [ls[i] for i in lb]
    m, k, n = prod(ls[i] for i in lf), prod(ls[i] for i in lc), prod(rs[i] for i in rf)
    a = im.reshape(im.transpose(lhs, lb + lf + lc), [*([prod(batch)] if lb else []), m, k])
    b = im.reshape(im.transpose(rhs, rb + rc + rf), [*([prod(batch)] if rb else []), k, n])
    a, b = _same_element(im, a, b)
    y = im.build(tcp.BatchMatmulOp if lb else tcp.MatmulOp, [a, b])
    out = im.type_of(op.results[0])
    y = im.reshape(y, [*batch, *(ls[i] for i in lf), *(rs[i] for i in rf)])
    return [im.cast(y, out.element_type)]


def _same_element(im: Importer, a: SSAValue, b: SSAValue) -> tuple[SSAValue, SSAValue]:
    if element_of(a) != element_of(b):
        im.fail(f"operands of different element types ({element_of(a)}, {element_of(b)}) are not supported")
    return a, b


def _to_nchw(im: Importer, x: SSAValue, batch: int, feature: int, spatial: Sequence[int]) -> SSAValue:
    return im.transpose(x, [batch, feature, *spatial])


def _from_nchw(im: Importer, y: SSAValue, batch: int, feature: int, spatial: Sequence[int]) -> SSAValue:
    return im.transpose(y, inverse_permutation([batch, feature, *spatial]))


@rule("stablehlo.convolution")
def _convolution(im: Importer, op: Any, args: list[SSAValue]) -> list[SSAValue]:
    from jaxlib.mlir.dialects import stablehlo

    x, w = args
    d = stablehlo.ConvDimensionNumbers(op.attributes["dimension_numbers"])
    spatial = list(d.input_spatial_dimensions)
    if len(spatial) != 2:
        im.fail(f"{len(spatial)}-D convolution is not supported (only 2-D)")
    strides = ints(op, "window_strides", [1, 1])
    padding = ints(op, "padding", [0, 0, 0, 0])
    if ints_scalar(op, "batch_group_count") != 1:
        im.fail("batch_group_count other than 1 is not supported")
    xi = _to_nchw(im, x, d.input_batch_dimension, d.input_feature_dimension, spatial)
    wi = _to_nchw(im, w, d.kernel_output_feature_dimension, d.kernel_input_feature_dimension, list(d.kernel_spatial_dimensions))
    for axis, reversed_ in enumerate(_bools(op, "window_reversal"), start=2):
        if reversed_:
            wi = im.flip(wi, axis)
    # Input dilation (a transposed convolution: lax.conv_transpose) puts stride - 1 zeros
    # between the input's pixels before the padding applies; a negative padding crops.
    dilation = ints(op, "lhs_dilation", [1, 1])
    if dilation != [1, 1] or any(p < 0 for p in padding):
        xi = im.spread(xi, dilation)
        low, high = padding[0::2], [p - (k - 1) for p, k in zip(padding[1::2], dilation)]  # the spread's trailing zeros count
        xi = im.pad_or_crop(xi, [0, 0, *low], [0, 0, *high])
        padding = [0, 0, 0, 0]
    y = im.build(
        tcp.Conv2dOp,
        [xi, wi],
        stride=i64_array(strides),
        padding=i64_array(padding),
        dilation=i64_array(ints(op, "rhs_dilation", [1, 1])),
        groups=int_attr(ints_scalar(op, "feature_group_count")),
    )
    return [_from_nchw(im, y, d.output_batch_dimension, d.output_feature_dimension, list(d.output_spatial_dimensions))]


# Reductions ---------------------------------------------------------------------------


_REDUCERS = ("stablehlo.add", "stablehlo.maximum", "stablehlo.minimum", "stablehlo.and", "stablehlo.or")


def _body_op(im: Importer, op: Any, allowed: Sequence[str] = _REDUCERS) -> str:
    """The one combining op of a reduction body (``stablehlo.add``, ``maximum`` ...)."""
    ops = [o.operation.name for o in op.regions[0].blocks[0].operations]
    if len(ops) != 2 or ops[1] != "stablehlo.return" or ops[0] not in allowed:
        shown = ", ".join(a.removeprefix("stablehlo.") for a in allowed)
        im.fail(f"only {shown} reductions are supported (the body is {', '.join(ops)})")
    return ops[0]


def _init_value(im: Importer, value: SSAValue) -> float:
    return float(_splat_of(im, value, "the initial value"))


def _reduce_max(im: Importer, x: SSAValue, axes: list[int]) -> SSAValue:
    return im.build(tcp.ReduceMaxOp, [x], axes=i64_array(axes), keepdim=int_attr(0))


@rule("stablehlo.reduce")
def _reduce(im: Importer, op: Any, args: list[SSAValue]) -> list[SSAValue]:
    """Sum, max, min, all and any over ``dimensions``; an initial value that is not the
    reduction's identity is combined with the result."""
    if len(args) != 2:
        im.fail("variadic reductions (several inputs) are not supported")
    x, init = args
    kind, init_value = _body_op(im, op), _init_value(im, init)
    axes = sorted(ints(op, "dimensions"))
    if kind == "stablehlo.add":
        y, identity, combine = im.build(tcp.ReduceSumOp, [x], axes=i64_array(axes), keepdim=int_attr(0)), 0.0, tcp.AddOp
    elif kind == "stablehlo.maximum":
        y, identity, combine = _reduce_max(im, x, axes), float("-inf"), tcp.MaximumOp
    elif kind == "stablehlo.minimum":
        y, identity, combine = im.build(tcp.NegOp, [_reduce_max(im, im.build(tcp.NegOp, [x]), axes)]), float("inf"), tcp.MinimumOp
    elif kind == "stablehlo.or":  # any: the max of booleans
        y, identity, combine = _reduce_max(im, x, axes), 0.0, tcp.LogicalOrOp
    else:  # all: not any of the negations
        y = im.build(tcp.LogicalNotOp, [_reduce_max(im, im.build(tcp.LogicalNotOp, [x]), axes)])
        identity, combine = 1.0, tcp.LogicalAndOp
    if init_value != identity:
        y = im.build(combine, [y, im.constant(init_value, shape_of(y), element_of(y))])
    return [y]


@rule("stablehlo.reduce_window")
def _reduce_window(im: Importer, op: Any, args: list[SSAValue]) -> list[SSAValue]:
    """Max or sum pooling over two axes of a rank-4 tensor (the others have windows of 1)."""
    if len(args) != 2:
        im.fail("variadic reduce_window is not supported")
    x, init = args
    kind, init_value = _body_op(im, op, ("stablehlo.add", "stablehlo.maximum")), _init_value(im, init)
    shape = shape_of(x)
    window = ints(op, "window_dimensions")
    strides = ints(op, "window_strides", [1] * len(shape))
    padding = ints(op, "padding", [0] * (2 * len(shape)))
    if any(v != 1 for v in ints(op, "base_dilations", [1] * len(shape))):
        im.fail("base dilations are not supported")
    dilations = ints(op, "window_dilations", [1] * len(shape))
    pooled = [i for i in range(len(shape)) if window[i] != 1 or strides[i] != 1 or padding[2 * i] or padding[2 * i + 1]]
    if len(shape) != 4 or len(pooled) > 2:
        im.fail(f"only 2-D pooling of rank-4 tensors is supported (window {window}, strides {strides})")
    if len(pooled) < 2:  # pool over the last axes with windows of 1 as well
        others = [i for i in range(4) if i not in pooled]
        pooled = sorted(pooled + others[len(others) - (2 - len(pooled)) :])
    rest = [i for i in range(4) if i not in pooled]
    xi = _to_nchw(im, x, rest[0], rest[1], pooled)
    kernel = [window[i] for i in pooled]
    pad = [padding[2 * pooled[0]], padding[2 * pooled[0] + 1], padding[2 * pooled[1]], padding[2 * pooled[1] + 1]]
    common = {"kernel": i64_array(kernel), "stride": i64_array([strides[i] for i in pooled]), "padding": i64_array(pad)}
    if kind == "stablehlo.maximum":
        if init_value != float("-inf"):
            im.fail(f"max pooling with initial value {init_value} (not -inf) is not supported")
        y = im.build(tcp.MaxPool2dOp, [xi], dilation=i64_array([dilations[i] for i in pooled]), ceil_mode=int_attr(0), **common)
    else:
        if init_value != 0 or any(dilations[i] != 1 for i in pooled):
            im.fail("sum pooling needs an initial value of 0 and no window dilation")
        mean = im.build(tcp.AvgPool2dOp, [xi], ceil_mode=int_attr(0), count_include_pad=int_attr(1), **common)
        y = im.build(tcp.MulOp, [mean, im.constant(float(kernel[0] * kernel[1]), shape_of(mean), element_of(mean))])
    return [_from_nchw(im, y, rest[0], rest[1], pooled)]
