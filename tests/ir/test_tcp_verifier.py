"""Each tcp op's verifier: malformed ops are rejected with a message naming the
op and what was expected, and type inference builds the types the verifier wants."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import StringAttr, TensorType, f32, i64
from xdsl.ir import Block
from xdsl.utils.exceptions import VerifyException

from dnnc.errors import IRError
from dnnc.ir import tcp
from dnnc.ir.attrs import bool_attr, float_attr, i64_array, int_attr
from dnnc.ir.builder import TcpBuilder
from dnnc.ir.text import parse_ir
from dnnc.ir.types import tensor_type

# (name, function body, argument types, expected message fragment)
BAD = [
    ("add_types", "%r = tcp.add %a, %b : tensor<2x3xf32>", "tensor<2x3xf32>, tensor<3xf32>", "tcp.add"),
    ("add_bool", "%r = tcp.add %a, %a : tensor<4xi1>", "tensor<4xi1>", "element type i1 is not one of"),
    ("div_int", "%r = tcp.div %a, %a : tensor<4xi64>", "tensor<4xi64>", "element type i64 is not one of f32, f16, bf16"),
    ("exp_int", "%r = tcp.exp %a : tensor<4xi32>", "tensor<4xi32>", "tcp.exp: operand element type i32"),
    ("clamp_no_bounds", "%r = tcp.clamp %a : tensor<4xf32>", "tensor<4xf32>", "needs a min or a max bound"),
    (
        "clamp_inverted",
        "%r = tcp.clamp %a {min = 2.0 : f64, max = 1.0 : f64} : tensor<4xf32>",
        "tensor<4xf32>",
        "greater than max",
    ),
    ("gelu_mode", '%r = tcp.gelu %a {approximate = "fast"} : tensor<4xf32>', "tensor<4xf32>", "approximate must be one of"),
    (
        "compare_predicate",
        '%r = tcp.compare %a, %a {predicate = "lq"} : tensor<4xf32> -> tensor<4xi1>',
        "tensor<4xf32>",
        "predicate must be one of",
    ),
    (
        "compare_result",
        '%r = tcp.compare %a, %a {predicate = "lt"} : tensor<4xf32> -> tensor<4xf32>',
        "tensor<4xf32>",
        "tcp.compare: result type 4xf32",
    ),
    (
        "select_condition",
        "%r = tcp.select %a, %a, %a : tensor<4xf32>, tensor<4xf32>",
        "tensor<4xf32>",
        "condition element type f32",
    ),
    ("cast_shape", "%r = tcp.cast %a : tensor<4xf32> to tensor<2xf16>", "tensor<4xf32>", "cannot change the shape"),
    (
        "reshape_count",
        "%r = tcp.reshape %a : tensor<2x3xf32> to tensor<5xf32>",
        "tensor<2x3xf32>",
        "cannot reshape 2x3xf32 to 5xf32",
    ),
    (
        "broadcast_rank",
        "%r = tcp.broadcast %a : tensor<3xf32> to tensor<2x3xf32>",
        "tensor<3xf32>",
        "same rank, only size-1 dims grow",
    ),
    (
        "broadcast_size",
        "%r = tcp.broadcast %a : tensor<2x3xf32> to tensor<4x3xf32>",
        "tensor<2x3xf32>",
        "cannot broadcast 2x3xf32 to 4x3xf32",
    ),
    (
        "transpose_perm",
        "%r = tcp.transpose %a {permutation = array<i64: 0, 0>} : tensor<2x3xf32> -> tensor<2x2xf32>",
        "tensor<2x3xf32>",
        "is not a permutation",
    ),
    (
        "concat_mismatch",
        "%r = tcp.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>",
        "tensor<2x3xf32>, tensor<2x4xf32>",
        "do not agree off axis 0",
    ),
    (
        "concat_axis",
        "%r = tcp.concat %a {axis = -1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>",
        "tensor<2x3xf32>",
        "axis -1 is out of range",
    ),
    (
        "slice_bounds",
        "%r = tcp.slice %a {starts = array<i64: 0, 2>, limits = array<i64: 2, 1>, strides = array<i64: 1, 1>} : tensor<2x3xf32> -> tensor<2x0xf32>",
        "tensor<2x3xf32>",
        "dimension 1: slice [2:1:1] is not normalized",
    ),
    (
        "slice_rank",
        "%r = tcp.slice %a {starts = array<i64: 0>, limits = array<i64: 2>, strides = array<i64: 1>} : tensor<2x3xf32> -> tensor<2xf32>",
        "tensor<2x3xf32>",
        "starts needs 2 values, got 1",
    ),
    (
        "pad_negative",
        "%r = tcp.pad %a {low = array<i64: -1>, high = array<i64: 0>, value = 0.0 : f64} : tensor<4xf32> -> tensor<3xf32>",
        "tensor<4xf32>",
        "padding must be non-negative",
    ),
    (
        "pad_value_kind",
        "%r = tcp.pad %a {low = array<i64: 1>, high = array<i64: 0>, value = 0 : i64} : tensor<4xf32> -> tensor<5xf32>",
        "tensor<4xf32>",
        "does not suit 4xf32",
    ),
    (
        "gather_float_indices",
        "%r = tcp.gather %a, %b {axis = 0 : i64} : (tensor<4x2xf32>, tensor<3xf32>) -> tensor<3x2xf32>",
        "tensor<4x2xf32>, tensor<3xf32>",
        "indices element type f32",
    ),
    (
        "matmul_k",
        "%r = tcp.matmul %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>",
        "tensor<2x3xf32>, tensor<4x5xf32>",
        "needs [M, K] x [K, N]",
    ),
    (
        "batch_matmul_batch",
        "%r = tcp.batch_matmul %a, %b : (tensor<2x3x4xf32>, tensor<3x4x5xf32>) -> tensor<2x3x5xf32>",
        "tensor<2x3x4xf32>, tensor<3x4x5xf32>",
        "needs [B, M, K] x [B, K, N]",
    ),
    (
        "conv_groups",
        "%r = tcp.conv2d %a, %b {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x3x5x5xf32>, tensor<4x3x1x1xf32>) -> tensor<1x4x5x5xf32>",
        "tensor<1x3x5x5xf32>, tensor<4x3x1x1xf32>",
        "do not fit groups = 2",
    ),
    (
        "conv_stride",
        "%r = tcp.conv2d %a, %b {stride = array<i64: 0, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x5x5xf32>, tensor<4x3x1x1xf32>) -> tensor<1x4x5x5xf32>",
        "tensor<1x3x5x5xf32>, tensor<4x3x1x1xf32>",
        "stride must be positive",
    ),
    (
        "conv_kernel_too_big",
        "%r = tcp.conv2d %a, %b {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x2x2xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x1x1xf32>",
        "tensor<1x3x2x2xf32>, tensor<4x3x3x3xf32>",
        "does not fit the padded input",
    ),
    (
        "conv_result",
        "%r = tcp.conv2d %a, %b {stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>",
        "tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>",
        "does not match 1x4x4x4xf32",
    ),
    (
        "pool_ceil_asymmetric",
        "%r = tcp.max_pool2d %a {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 1, 0, 0>, dilation = array<i64: 1, 1>, ceil_mode = true} : tensor<1x1x5x5xf32> -> tensor<1x1x3x3xf32>",
        "tensor<1x1x5x5xf32>",
        "ceil_mode needs symmetric padding",
    ),
    (
        "softmax_axis",
        "%r = tcp.softmax %a {axis = 2 : i64} : tensor<2x3xf32>",
        "tensor<2x3xf32>",
        "axis 2 is out of range for rank 2",
    ),
    (
        "layer_norm_weight",
        "%r = tcp.layer_norm %a, %b, %b {axis = 1 : i64, epsilon = 1.0e-05 : f64} : tensor<2x3xf32>, tensor<2xf32>",
        "tensor<2x3xf32>, tensor<2xf32>",
        "weight and bias must be [3]",
    ),
    (
        "batch_norm_channels",
        "%r = tcp.batch_norm %a, %b, %b, %b, %b {epsilon = 1.0e-05 : f64} : tensor<1x3x2x2xf32>, tensor<4xf32>",
        "tensor<1x3x2x2xf32>, tensor<4xf32>",
        "per-channel vectors must be [3]",
    ),
    (
        "reduce_axes_order",
        "%r = tcp.reduce_sum %a {axes = array<i64: 1, 0>, keepdim = false} : tensor<2x3xf32> -> tensor<f32>",
        "tensor<2x3xf32>",
        "must be sorted and unique",
    ),
    (
        "reduce_no_axes",
        "%r = tcp.reduce_max %a {axes = array<i64>, keepdim = false} : tensor<2x3xf32> -> tensor<2x3xf32>",
        "tensor<2x3xf32>",
        "needs at least one axis",
    ),
    (
        "reduce_mean_int",
        "%r = tcp.reduce_mean %a {axes = array<i64: 0>, keepdim = false} : tensor<2xi64> -> tensor<i64>",
        "tensor<2xi64>",
        "element type i64",
    ),
    ("constant_kind", "%r = tcp.constant {value = 1 : i64} : tensor<2xf32>", "", "needs a float value"),
    ("iota_rank", "%r = tcp.iota {start = 0 : i64, step = 1 : i64} : tensor<2x2xi64>", "", "must be a rank-1"),
    ("iota_step", "%r = tcp.iota {start = 0 : i64, step = 0 : i64} : tensor<4xi64>", "", "step must not be zero"),
    ("param_dtype", "%r = tcp.param @w : tensor<2xf64>", "", "unsupported element type"),
]


def _function(body: str, args: str) -> str:
    names = ["%a", "%b"][: len([a for a in args.split(", ") if a])]
    arg_list = ", ".join(f"{n}: {t}" for n, t in zip(names, args.split(", ")))
    return f"func.func @f({arg_list}) {{\n  {body}\n  func.return\n}}\n"


@pytest.mark.parametrize("name,body,args,message", BAD, ids=[b[0] for b in BAD])
def test_verifier_rejects(name: str, body: str, args: str, message: str) -> None:
    with pytest.raises(IRError, match=None) as info:
        parse_ir(_function(body, args), f"{name}.mlir")
    text = str(info.value)
    assert message in text, text
    assert f"{name}.mlir" in text


def test_group_body_must_match_captures() -> None:
    text = """
    func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
      %g = tcp.isolated_group(%x) : (tensor<4xf32>) -> tensor<4xf32> {
      ^bb0(%a: tensor<4xf32>):
        %r = tcp.reshape %a : tensor<4xf32> to tensor<2x2xf32>
        tcp.yield %r : tensor<2x2xf32>
      }
      func.return %g : tensor<4xf32>
    }"""
    with pytest.raises(IRError, match="tcp.yield types must match"):
        parse_ir(text)


def test_group_is_isolated_from_above() -> None:
    text = """
    func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
      %g = tcp.isolated_group() : () -> tensor<4xf32> {
        %n = tcp.neg %x : tensor<4xf32>
        tcp.yield %n : tensor<4xf32>
      }
      func.return %g : tensor<4xf32>
    }"""
    with pytest.raises(IRError):
        parse_ir(text)


def test_parse_error_names_file_and_line() -> None:
    with pytest.raises(IRError) as info:
        parse_ir("func.func @f(%x: tensor<4xf32>) {\n  %r = tcp.nope %x : tensor<4xf32>\n}\n", "model.mlir")
    assert "model.mlir" in str(info.value) and "2:" in str(info.value)


def _block(*types: TensorType) -> tuple[Block, TcpBuilder]:
    block = Block(arg_types=list(types))
    return block, TcpBuilder.at_end(block)


def test_inference_builds_verified_types() -> None:
    block, b = _block(tensor_type((2, 3, 9, 7), f32), tensor_type((5, 3, 3, 3), f32))
    x, w = block.args
    props = dict(stride=i64_array([2, 1]), padding=i64_array([1, 0, 2, 2]), dilation=i64_array([1, 2]), groups=int_attr(1))
    conv = b.build(tcp.Conv2dOp, [x, w], **props)
    # H: (9 + 1 + 0 - 3) // 2 + 1 = 4; W: (7 + 4 - 5) // 1 + 1 = 7
    assert conv.type == tensor_type((2, 5, 4, 7), f32)
    pooled = b.build(
        tcp.MaxPool2dOp,
        [conv],
        kernel=i64_array([2, 2]),
        stride=i64_array([2, 2]),
        padding=i64_array([0, 0, 0, 0]),
        dilation=i64_array([1, 1]),
        ceil_mode=bool_attr(True),
    )
    assert pooled.type == tensor_type((2, 5, 2, 4), f32)
    summed = b.build(tcp.ReduceSumOp, [pooled], axes=i64_array([1, 3]), keepdim=bool_attr(False))
    assert summed.type == tensor_type((2, 2), f32)
    cmp = b.build(tcp.CompareOp, [summed, summed], predicate=StringAttr("ge"))
    assert str(cmp.type) == "tensor<2x2xi1>"
    for op in block.ops:
        op.verify()


def test_inference_rejects_with_op_name() -> None:
    block, b = _block(tensor_type((2, 3), f32), tensor_type((4,), i64))
    with pytest.raises(VerifyException, match="tcp.gather: axis 2 is out of range"):
        b.build(tcp.GatherOp, [block.args[0], block.args[1]], axis=int_attr(2))
    with pytest.raises(VerifyException, match="epsilon must be non-negative"):
        w = b.constant(1.0, (3,), f32)
        b.build(tcp.LayerNormOp, [block.args[0], w, w], axis=int_attr(1), epsilon=float_attr(-1.0))


def test_spread_pad_or_crop_and_flip_build_the_shapes_they_say() -> None:
    """A transposed convolution's input as both frontends build it: ``stride - 1`` zeros
    after each pixel (one pad of a reshaped tensor), then a pad that crops where negative;
    a kernel reversed along an axis is one gather of ``n - 1 .. 0``."""
    block, b = _block(tensor_type((2, 3, 4, 5), f32))
    (x,) = block.args
    spread = b.spread(x, [3, 2])
    assert spread.type == tensor_type((2, 3, 12, 10), f32)
    assert [op.name for op in block.ops] == ["tcp.reshape", "tcp.pad", "tcp.reshape"]
    assert b.spread(x, [1, 1]) is x
    cropped = b.pad_or_crop(spread, [0, 0, 1, -2], [0, 0, -2, 3])
    assert cropped.type == tensor_type((2, 3, 11, 11), f32)
    assert [op.name for op in block.ops][3:] == ["tcp.pad", "tcp.slice", "tcp.slice"]
    flipped = b.flip(x, 3)
    assert flipped.type == x.type and flipped.owner.name == "tcp.gather"
    assert b.flip(b.reshape(x, (2, 3, 20, 1)), 3).owner.name == "tcp.reshape", "a length-1 axis needs no gather"
