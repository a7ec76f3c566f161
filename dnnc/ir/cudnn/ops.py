"""The ``cudnn`` dialect: the cuDNN Graph API, one op per graph node.

A ``cudnn.graph`` is one cuDNN operation graph, built and executed as a unit. Its
block arguments are the graph's tensor descriptors: logical dims in cuDNN's order
(``[N, C, H, W]`` for convolutions, ``[B, M, K]`` for matmuls) and the strides that
say how the dims lie in memory, written as ``tensor<dims x T, strided<[...]>>``. A
descriptor is a strided view of its operand's buffer (the operand is an ordinary
row-major tcp tensor), so an NHWC activation is a ``[N, H, W, C]`` tensor outside
and a ``[N, C, H, W]`` descriptor with strides ``[HWC, 1, WC, C]`` inside; a bias is
``[1, C, 1, 1]`` and broadcasts. Graph results are written through the strides in
``result_strides`` into row-major buffers of the result types.

Values inside the graph are cuDNN's virtual tensors: they have dims and an element
type, no strides. cuDNN keeps them in float32 (the graph's intermediate type); the
reference semantics (``dnnc.backends.reference``) compute them in its precision.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, FloatAttr, IntegerAttr, StridedLayoutAttr, StringAttr, TensorType
from xdsl.ir import Attribute, Block, Dialect, Region, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator, Pure, RecursiveMemoryEffect

from dnnc.ir.attrs import ints, scalar
from dnnc.ir.tcp.base import TcpOp, check_elements, check_len, fail
from dnnc.ir.types import FLOAT_TYPES, describe, numel

POINTWISE_MODES: dict[str, int] = {
    # mode -> arity. Names follow the cuDNN frontend's pygraph methods.
    "add": 2,
    "sub": 2,
    "mul": 2,
    "div": 2,
    "max": 2,
    "min": 2,
    "relu": 1,
    "gelu": 1,
    "gelu_approx_tanh": 1,
    "sigmoid": 1,
    "tanh": 1,
    "swish": 1,
    "exp": 1,
    "log": 1,
    "sqrt": 1,
    "rsqrt": 1,
    "neg": 1,
    "abs": 1,
    "erf": 1,
}

REDUCTION_MODES = ("add", "max", "min", "mul", "avg")


def strides_of(t: Attribute) -> tuple[int, ...] | None:
    """The strides a descriptor type carries, or None for a virtual tensor."""
    if isinstance(t, TensorType) and isinstance(t.encoding, StridedLayoutAttr):
        return tuple(int(s) for s in t.encoding.get_strides())
    return None


def descriptor_type(element: Attribute, dims: Sequence[int], strides: Sequence[int]) -> TensorType:
    return TensorType(element, list(dims), StridedLayoutAttr(list(strides)))


def row_major_strides(dims: Sequence[int]) -> tuple[int, ...]:
    strides, step = [], 1
    for d in reversed(dims):
        strides.append(step)
        step *= max(int(d), 1)
    return tuple(reversed(strides))


def span(dims: Sequence[int], strides: Sequence[int]) -> int:
    """Elements from the first to one past the last element the view touches."""
    if any(d == 0 for d in dims):
        return 0
    return 1 + sum((d - 1) * s for d, s in zip(dims, strides))


def fills(dims: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether the strides lay the dims out one to one over ``[0, numel)``: a permutation
    of a row-major layout (the stride of a size-1 dim does not matter). A span equal to
    the element count is not enough: ``[2, 2, 2]`` with strides ``[1, 1, 5]`` spans 8
    elements but writes two of them twice and two never."""
    if any(d == 0 for d in dims):
        return True  # nothing to write
    step = 1
    for s, d in sorted((int(s), int(d)) for d, s in zip(dims, strides) if d != 1):
        if s != step:
            return False
        step *= d
    return True


def broadcast_dims(op: str, shapes: Sequence[Sequence[int]]) -> list[int]:
    """cuDNN broadcasting: equal ranks, each dim equal or 1."""
    rank = len(shapes[0])
    if any(len(s) != rank for s in shapes):
        raise fail(op, "operands must have one rank, got " + ", ".join(str(list(s)) for s in shapes))
    out = []
    for dims in zip(*shapes):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            raise fail(op, "operand dims " + ", ".join(str(list(s)) for s in shapes) + " do not broadcast")
        out.append(sizes.pop() if sizes else 1)
    return out


class CudnnOp(TcpOp):
    """Node ops share tcp's infer-once base: result types follow from operands."""


@irdl_op_definition
class GraphOp(CudnnOp):
    """One cuDNN operation graph. ``plan``: the execution plan (engine id and knobs, as
    JSON) a tuning spec chose for it, built without measuring; a plan tuned on a GPU is
    the kernel's record, kept out of the IR (``backends.interface``)."""

    name = "cudnn.graph"
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    result_strides = prop_def(ArrayAttr)
    plan = opt_prop_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove(), RecursiveMemoryEffect())
    assembly_format = "`(` $inputs `)` attr-dict `:` functional-type($inputs, $outputs) $body"

    def __init__(
        self, inputs: Sequence[SSAValue], result_types: Sequence[TensorType], strides: Sequence[Sequence[int]], body: Block
    ):
        super().__init__(
            operands=[list(inputs)],
            result_types=[list(result_types)],
            regions=[Region(body)],
            properties={"result_strides": ArrayAttr([StridedLayoutAttr(list(s)) for s in strides])},
        )

    def output_strides(self) -> list[tuple[int, ...]]:
        return [tuple(int(s) for s in a.get_strides()) for a in self.result_strides.data]  # type: ignore[attr-defined]

    def verify_(self) -> None:
        block = self.body.block
        if len(block.args) != len(self.inputs):
            raise fail(self.name, f"has {len(self.inputs)} inputs but {len(block.args)} descriptors")
        for i, (arg, operand) in enumerate(zip(block.args, self.inputs)):
            t, o = arg.type, operand.type
            strides = strides_of(t)
            if strides is None:
                raise fail(self.name, f"descriptor {i} ({describe(t)}) needs strides: tensor<... , strided<[...]>>")
            assert isinstance(t, TensorType) and isinstance(o, TensorType)
            if t.element_type != o.element_type:
                raise fail(self.name, f"descriptor {i} element type differs from its operand {describe(o)}")
            if len(strides) != len(t.get_shape()):
                raise fail(self.name, f"descriptor {i} has {len(t.get_shape())} dims but {len(strides)} strides")
            if span(t.get_shape(), strides) > numel(o):
                raise fail(self.name, f"descriptor {i} {describe(t)} reaches past its operand {describe(o)}")
        last = block.last_op
        if not isinstance(last, ReturnOp):
            raise fail(self.name, "body must end with cudnn.return")
        strides = self.output_strides()
        if not len(last.values) == len(self.outputs) == len(strides):
            raise fail(self.name, "cudnn.return, the results and result_strides must have one entry per output")
        for i, (v, r, s) in enumerate(zip(last.values, self.outputs, strides)):
            vt, rt = v.type, r.type
            assert isinstance(vt, TensorType) and isinstance(rt, TensorType)
            if vt.element_type != rt.element_type:
                raise fail(self.name, f"output {i}: returned {describe(vt)} but the result is {describe(rt)}")
            dims = vt.get_shape()
            if len(s) != len(dims) or numel(dims) != numel(rt) or not fills(dims, s):
                raise fail(self.name, f"output {i}: strides {list(s)} of {list(dims)} do not fill the result {describe(rt)}")


@irdl_op_definition
class ReturnOp(CudnnOp):
    """Ends a ``cudnn.graph`` with the tensors marked as graph outputs."""

    name = "cudnn.return"
    values = var_operand_def(TensorType)
    traits = traits_def(IsTerminator(), HasParent(GraphOp), Pure())
    assembly_format = "$values `:` type($values) attr-dict"

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[list(values)])


@irdl_op_definition
class ConvFpropOp(CudnnOp):
    """Forward convolution (cross-correlation). image ``[N, C, H, W]``, weight
    ``[K, C / G, R, S]``; the group count G is ``C`` over the weight's C."""

    name = "cudnn.conv_fprop"
    image = operand_def(TensorType)
    weight = operand_def(TensorType)
    pre_padding = prop_def(DenseArrayBase)
    post_padding = prop_def(DenseArrayBase)
    stride = prop_def(DenseArrayBase)
    dilation = prop_def(DenseArrayBase)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$image `,` $weight attr-dict `:` `(` type($image) `,` type($weight) `)` `->` type($result)"

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType]:
        x, w = operand_types
        check_elements(cls.name, x, FLOAT_TYPES)
        if x.element_type != w.element_type:
            raise fail(cls.name, f"image {describe(x)} and weight {describe(w)} differ in element type")
        (n, c, h, wd), (k, cg, r, s) = _rank4(cls.name, x), _rank4(cls.name, w)
        pre, post, stride, dil = (ints(props[p]) for p in ("pre_padding", "post_padding", "stride", "dilation"))
        for name, v in (("pre_padding", pre), ("post_padding", post), ("stride", stride), ("dilation", dil)):
            check_len(cls.name, name, v, 2)
        if min(stride) < 1 or min(dil) < 1 or min(pre) < 0 or min(post) < 0:
            raise fail(cls.name, "strides and dilations must be positive, paddings non-negative")
        if cg < 1 or c % cg or k % (c // cg):
            raise fail(cls.name, f"weight {describe(w)} does not fit {c} image channels")
        ho = (h + pre[0] + post[0] - dil[0] * (r - 1) - 1) // stride[0] + 1
        wo = (wd + pre[1] + post[1] - dil[1] * (s - 1) - 1) // stride[1] + 1
        if ho < 1 or wo < 1:
            raise fail(cls.name, f"filter {r}x{s} does not fit the padded image {h}x{wd}")
        return [TensorType(x.element_type, [n, k, ho, wo])]


@irdl_op_definition
class MatmulOp(CudnnOp):
    """``[B, M, K] x [B, K, N] -> [B, M, N]``; a batch dim of 1 broadcasts."""

    name = "cudnn.matmul"
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$a `,` $b attr-dict `:` `(` type($a) `,` type($b) `)` `->` type($result)"

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType]:
        a, b = operand_types
        check_elements(cls.name, a, FLOAT_TYPES)
        sa, sb = a.get_shape(), b.get_shape()
        if len(sa) != 3 or len(sb) != 3 or sa[2] != sb[1] or a.element_type != b.element_type:
            raise fail(cls.name, f"needs [B, M, K] and [B, K, N] of one element type, got {describe(a)} and {describe(b)}")
        batch = broadcast_dims(cls.name, [sa[:1], sb[:1]])
        return [TensorType(a.element_type, [*batch, sa[1], sb[2]])]


@irdl_op_definition
class PointwiseOp(CudnnOp):
    """An elementwise node; operands broadcast (dims equal or 1). ``relu`` takes optional
    ``lower_clip``/``upper_clip`` (so a clamp to [0, 6] is one node)."""

    name = "cudnn.pointwise"
    args = var_operand_def(TensorType)
    mode = prop_def(StringAttr)
    lower_clip = opt_prop_def(FloatAttr)
    upper_clip = opt_prop_def(FloatAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$args attr-dict `:` type($args) `->` type($result)"

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType]:
        mode = props["mode"]
        assert isinstance(mode, StringAttr)
        arity = POINTWISE_MODES.get(mode.data)
        if arity is None:
            raise fail(cls.name, f"unknown mode {mode.data!r}; known: {', '.join(POINTWISE_MODES)}")
        if len(operand_types) != arity:
            raise fail(cls.name, f"mode {mode.data} takes {arity} operands, got {len(operand_types)}")
        if ("lower_clip" in props or "upper_clip" in props) and mode.data != "relu":
            raise fail(cls.name, "clips belong to mode relu")
        for t in operand_types:
            check_elements(cls.name, t, FLOAT_TYPES)
        dims = broadcast_dims(cls.name, [t.get_shape() for t in operand_types])
        return [TensorType(operand_types[0].element_type, dims)]

    def clips(self) -> tuple[float | None, float | None]:
        lo, hi = self.lower_clip, self.upper_clip
        return (None if lo is None else float(scalar(lo)), None if hi is None else float(scalar(hi)))


@irdl_op_definition
class ReductionOp(CudnnOp):
    """Reduces the dims listed in ``axes`` to size 1."""

    name = "cudnn.reduction"
    input = operand_def(TensorType)
    mode = prop_def(StringAttr)
    axes = prop_def(DenseArrayBase)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType]:
        (x,) = operand_types
        mode = props["mode"]
        assert isinstance(mode, StringAttr)
        if mode.data not in REDUCTION_MODES:
            raise fail(cls.name, f"unknown mode {mode.data!r}; known: {', '.join(REDUCTION_MODES)}")
        shape = list(x.get_shape())
        for a in ints(props["axes"]):
            if not 0 <= a < len(shape):
                raise fail(cls.name, f"axis {a} is out of range for {describe(x)}")
            shape[a] = 1
        return [TensorType(x.element_type, shape)]


@irdl_op_definition
class LayerNormOp(CudnnOp):
    """Inference layer norm over every dim but the first; scale and bias are
    ``[1, *x.dims[1:]]``."""

    name = "cudnn.layernorm"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = operand_def(TensorType)
    epsilon = prop_def(FloatAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input `,` $scale `,` $bias attr-dict `:` type($input) `,` type($scale) `,` type($bias) `->` type($result)"

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType]:
        x, scale, bias = operand_types
        check_elements(cls.name, x, FLOAT_TYPES)
        want = [1, *x.get_shape()[1:]]
        for what, t in (("scale", scale), ("bias", bias)):
            if list(t.get_shape()) != want:
                raise fail(cls.name, f"{what} must be {want} for input {describe(x)}, got {describe(t)}")
        return [TensorType(x.element_type, list(x.get_shape()))]


@irdl_op_definition
class SdpaOp(CudnnOp):
    """Scaled dot-product attention, ``softmax(q k^T * scale [+ causal mask]) v`` with
    q ``[B, H, Sq, D]``, k ``[B, H, Skv, D]``, v ``[B, H, Skv, Dv]``."""

    name = "cudnn.sdpa"
    q = operand_def(TensorType)
    k = operand_def(TensorType)
    v = operand_def(TensorType)
    scale = prop_def(FloatAttr)
    causal = prop_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$q `,` $k `,` $v attr-dict `:` type($q) `,` type($k) `,` type($v) `->` type($result)"

    @classmethod
    def infer(cls, operand_types: Sequence[TensorType], props: Mapping[str, Attribute]) -> Sequence[TensorType]:
        q, k, v = operand_types
        check_elements(cls.name, q, FLOAT_TYPES)
        (b, h, sq, d), (bk, hk, skv, dk), (bv, hv, sv, dv) = (_rank4(cls.name, t) for t in (q, k, v))
        if (b, h, d) != (bk, hk, dk) or (b, h, skv) != (bv, hv, sv):
            raise fail(cls.name, f"q {describe(q)}, k {describe(k)} and v {describe(v)} do not fit together")
        return [TensorType(q.element_type, [b, h, sq, dv])]


def _rank4(op: str, t: TensorType) -> tuple[int, int, int, int]:
    shape = t.get_shape()
    if len(shape) != 4:
        raise fail(op, f"needs a rank-4 tensor, got {describe(t)}")
    return tuple(shape)  # type: ignore[return-value]


NODE_OPS: tuple[type[CudnnOp], ...] = (ConvFpropOp, MatmulOp, PointwiseOp, ReductionOp, LayerNormOp, SdpaOp)
CUDNN_OPS: tuple[type[CudnnOp], ...] = (GraphOp, ReturnOp, *NODE_OPS)
CUDNN = Dialect("cudnn", list(CUDNN_OPS), [])
