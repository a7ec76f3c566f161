"""The cuDNN backend's compile-time half, on the CPU: the ``cudnn`` dialect (text round
trip, verifier messages), the reference semantics of every node op against PyTorch
written out independently (through small ``cudnn.graph`` programs whose descriptors are
strided views: NHWC activations, KRSC weights, transposed matmul operands; f32, f16,
bf16), and the whole ``CUDNN_STAGE`` on the test models: the same results on the
reference backend, the graphs and kinds each model should give, no transposes left
between conv graphs, and convolution weights stored KRSC at compile time.

Tolerances: ``dnnc.numerics.TOLERANCE``. The reference backend computes in float32;
the expected values are float64 from the same (rounded) inputs.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest
import torch
from torch import nn
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue

from dnnc.backends.reference import ReferenceExecutor
from dnnc.backends.reference.cudnn_rules import view_through
from dnnc.errors import IRError
from dnnc.ir import cudnn, tcp
from dnnc.ir.attrs import float_attr, i64_array, int_attr, ints, str_attr
from dnnc.ir.params import ParamStore
from dnnc.ir.program import Program
from dnnc.ir.text import parse_ir, print_ir
from dnnc.ir.types import shape_of, tensor_type
from dnnc.pipeline import CUDNN_STAGE, run_stage
from tests.numerics import assert_matches

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
TO_NHWC = (0, 2, 3, 1)
STAGE_LIT = Path(__file__).parents[2] / "lit" / "passes" / "cudnn_stage.mlir"


# ----------------------------------------------------------------------------------------
# Small graph programs


def nhwc(n: int, c: int, h: int, w: int) -> tuple[int, ...]:
    """Strides of an [N, C, H, W] descriptor over a row-major [N, H, W, C] buffer."""
    return (h * w * c, 1, w * c, c)


class Graph:
    """One ``cudnn.graph`` in a ``forward`` function. The operands are row-major
    buffers of the given shapes, each seen through a descriptor (dims, strides)."""

    def __init__(self, dtype: torch.dtype, operands: Sequence[Sequence[int]], descriptors: Sequence[tuple[Sequence[int], ...]]):
        self.dtype = dtype
        self.operands = [tuple(s) for s in operands]
        element = tensor_type((1,), dtype).element_type
        self.block = Block(arg_types=[cudnn.descriptor_type(element, dims, strides) for dims, strides in descriptors])
        self.args: list[SSAValue] = list(self.block.args)

    def add(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def program(self, value: SSAValue, result_shape: Sequence[int], strides: Sequence[int]) -> Program:
        """Returns ``value`` written through ``strides`` into a ``result_shape`` tensor.
        The program goes through its text form, which is what is verified and run."""
        self.block.add_op(cudnn.ReturnOp([value]))
        result = tensor_type(tuple(result_shape), self.dtype)
        fn = func.FuncOp("forward", ([tensor_type(s, self.dtype) for s in self.operands], [result]))
        graph = cudnn.GraphOp(list(fn.body.block.args), [result], [strides], self.block)
        fn.body.block.add_ops([graph, func.ReturnOp(graph.outputs[0])])
        program = Program(parse_ir(print_ir(ModuleOp([fn]))), ParamStore())
        program.verify()
        return program


def run(program: Program, *inputs: torch.Tensor) -> torch.Tensor:
    (out,) = ReferenceExecutor(program, "float32").run(list(inputs))
    assert out.dtype == inputs[0].dtype
    return out


def randn(rng: torch.Generator, shape: Sequence[int], dtype: torch.dtype, scale: float = 1.0, shift: float = 0.0) -> torch.Tensor:
    return (torch.randn(tuple(shape), generator=rng) * scale + shift).to(dtype)


# ----------------------------------------------------------------------------------------
# (a) The dialect: text round trip and verifier

SAMPLE = """
func.func @forward(%x: tensor<2x6x6x4xf16>, %w: tensor<8x3x3x4xf16>, %b: tensor<1x8x1x1xf16>) -> (tensor<2x6x6x8xf16>, tensor<2x1xf16>) {
  %g:2 = cudnn.graph(%x, %w, %b) {kind = "conv_bias_relu", plan = "{\\"engine\\": 3}", result_strides = [strided<[288, 1, 48, 8]>, strided<[1, 1, 1, 1]>]} : (tensor<2x6x6x4xf16>, tensor<8x3x3x4xf16>, tensor<1x8x1x1xf16>) -> (tensor<2x6x6x8xf16>, tensor<2x1xf16>) {
  ^bb0(%xd: tensor<2x4x6x6xf16, strided<[144, 1, 24, 4]>>, %wd: tensor<8x4x3x3xf16, strided<[36, 1, 12, 4]>>, %bd: tensor<1x8x1x1xf16, strided<[8, 1, 1, 1]>>):
    %c = cudnn.conv_fprop %xd, %wd {pre_padding = array<i64: 1, 0>, post_padding = array<i64: 1, 2>, stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>} : (tensor<2x4x6x6xf16, strided<[144, 1, 24, 4]>>, tensor<8x4x3x3xf16, strided<[36, 1, 12, 4]>>) -> tensor<2x8x6x6xf16>
    %a = cudnn.pointwise %c, %bd {mode = "add"} : tensor<2x8x6x6xf16>, tensor<1x8x1x1xf16, strided<[8, 1, 1, 1]>> -> tensor<2x8x6x6xf16>
    %r = cudnn.pointwise %a {mode = "relu", lower_clip = 0.000000e+00 : f64, upper_clip = 6.000000e+00 : f64} : tensor<2x8x6x6xf16> -> tensor<2x8x6x6xf16>
    %s = cudnn.reduction %r {mode = "avg", axes = array<i64: 1, 2, 3>} : tensor<2x8x6x6xf16> -> tensor<2x1x1x1xf16>
    cudnn.return %r, %s : tensor<2x8x6x6xf16>, tensor<2x1x1x1xf16>
  }
  %h = cudnn.graph(%g#0, %g#0) {result_strides = [strided<[288, 48, 8, 1]>]} : (tensor<2x6x6x8xf16>, tensor<2x6x6x8xf16>) -> tensor<2x6x6x8xf16> {
  ^bb0(%t: tensor<2x6x6x8xf16, strided<[288, 48, 8, 1]>>, %sc: tensor<1x6x6x8xf16, strided<[288, 48, 8, 1]>>):
    %l = cudnn.layernorm %t, %sc, %sc {epsilon = 1.000000e-05 : f64} : tensor<2x6x6x8xf16, strided<[288, 48, 8, 1]>>, tensor<1x6x6x8xf16, strided<[288, 48, 8, 1]>>, tensor<1x6x6x8xf16, strided<[288, 48, 8, 1]>> -> tensor<2x6x6x8xf16>
    cudnn.return %l : tensor<2x6x6x8xf16>
  }
  func.return %g#0, %g#1 : tensor<2x6x6x8xf16>, tensor<2x1xf16>
}

func.func @attention(%q: tensor<1x5x2x8xbf16>, %k: tensor<3x8xbf16>) -> (tensor<1x5x2x8xbf16>, tensor<10x3xbf16>) {
  %g:2 = cudnn.graph(%q, %q, %k) {result_strides = [strided<[80, 8, 16, 1]>, strided<[30, 3, 1]>]} : (tensor<1x5x2x8xbf16>, tensor<1x5x2x8xbf16>, tensor<3x8xbf16>) -> (tensor<1x5x2x8xbf16>, tensor<10x3xbf16>) {
  ^bb0(%qd: tensor<1x2x5x8xbf16, strided<[80, 8, 16, 1]>>, %qm: tensor<1x10x8xbf16, strided<[80, 8, 1]>>, %kt: tensor<1x8x3xbf16, strided<[24, 1, 8]>>):
    %o = cudnn.sdpa %qd, %qd, %qd {scale = 3.535534e-01 : f64, causal = 1 : i64} : tensor<1x2x5x8xbf16, strided<[80, 8, 16, 1]>>, tensor<1x2x5x8xbf16, strided<[80, 8, 16, 1]>>, tensor<1x2x5x8xbf16, strided<[80, 8, 16, 1]>> -> tensor<1x2x5x8xbf16>
    %m = cudnn.matmul %qm, %kt : (tensor<1x10x8xbf16, strided<[80, 8, 1]>>, tensor<1x8x3xbf16, strided<[24, 1, 8]>>) -> tensor<1x10x3xbf16>
    cudnn.return %o, %m : tensor<1x2x5x8xbf16>, tensor<1x10x3xbf16>
  }
  func.return %g#0, %g#1 : tensor<1x5x2x8xbf16>, tensor<10x3xbf16>
}
"""


def test_sample_uses_every_op() -> None:
    used = {op.name for op in parse_ir(SAMPLE).walk()}
    assert {op.name for op in cudnn.CUDNN_OPS} <= used


def test_roundtrip() -> None:
    module = parse_ir(SAMPLE)
    printed = print_ir(module)
    again = parse_ir(printed)
    assert again.is_structurally_equivalent(module)
    assert print_ir(again) == printed
    graph = next(op for op in again.walk() if isinstance(op, cudnn.GraphOp) and op.plan is not None)
    assert graph.plan is not None and graph.plan.data == '{"engine": 3}'
    assert graph.output_strides() == [(288, 1, 48, 8), (1, 1, 1, 1)]
    descriptors = [cudnn.strides_of(a.type) for a in graph.body.block.args]
    assert descriptors == [(144, 1, 24, 4), (36, 1, 12, 4), (8, 1, 1, 1)]


def bad_graph(operands: str, descriptors: str, body: str, value: str, result: str, strides: str) -> str:
    """A one-graph function; ``value`` is 'name : type' returned through ``strides`` into ``result``."""
    names = [f"%i{i}" for i in range(len(operands.split(";")))]
    operand_types = [t.strip() for t in operands.split(";")]
    descriptor_types = [t.strip() for t in descriptors.split(";")]
    args = ", ".join(f"{n}: {t}" for n, t in zip(names, operand_types))
    block_args = ", ".join(f"%d{i}: {t}" for i, t in enumerate(descriptor_types))
    name, vtype = (s.strip() for s in value.split(" : "))
    return (
        f"func.func @forward({args}) -> {result} {{\n"
        f"  %g = cudnn.graph({', '.join(names)}) {{result_strides = [strided<[{strides}]>]}} : "
        f"({', '.join(operand_types)}) -> {result} {{\n"
        f"  ^bb0({block_args}):\n    {body}\n    cudnn.return {name} : {vtype}\n  }}\n"
        f"  func.return %g : {result}\n}}\n"
    )


T23 = "tensor<2x3xf32>"
D23 = "tensor<2x3xf32, strided<[3, 1]>>"
NEG = f'%v = cudnn.pointwise %d0 {{mode = "neg"}} : {D23} -> {T23}'

# (name, program text, expected message fragment)
BAD = [
    (
        "descriptor_without_strides",
        bad_graph(T23, T23, f'%v = cudnn.pointwise %d0 {{mode = "neg"}} : {T23} -> {T23}', f"%v : {T23}", T23, "3, 1"),
        "descriptor 0 (2x3xf32) needs strides",
    ),
    (
        "descriptor_past_operand",
        bad_graph("tensor<5xf32>", D23, NEG, f"%v : {T23}", T23, "3, 1"),
        "descriptor 0 2x3xf32 reaches past its operand 5xf32",
    ),
    (
        "descriptor_transposed_past_operand",
        bad_graph(
            T23,
            "tensor<2x3xf32, strided<[1, 3]>>",
            f'%v = cudnn.pointwise %d0 {{mode = "neg"}} : tensor<2x3xf32, strided<[1, 3]>> -> {T23}',
            f"%v : {T23}",
            T23,
            "3, 1",
        ),
        "reaches past its operand",
    ),
    (
        "descriptor_rank",
        bad_graph(
            T23,
            "tensor<2x3xf32, strided<[1]>>",
            f'%v = cudnn.pointwise %d0 {{mode = "neg"}} : tensor<2x3xf32, strided<[1]>> -> {T23}',
            f"%v : {T23}",
            T23,
            "3, 1",
        ),
        "descriptor 0 has 2 dims but 1 strides",
    ),
    (
        "descriptor_element",
        bad_graph("tensor<2x3xf16>", D23, NEG, f"%v : {T23}", T23, "3, 1"),
        "descriptor 0 element type differs from its operand 2x3xf16",
    ),
    (
        "result_strides_short",
        bad_graph(T23, D23, NEG, f"%v : {T23}", "tensor<3x2xf32>", "1, 1"),
        "output 0: strides [1, 1] of [2, 3] do not fill the result 3x2xf32",
    ),
    ("result_strides_count", bad_graph(T23, D23, NEG, f"%v : {T23}", "tensor<7xf32>", "3, 1"), "do not fill the result 7xf32"),
    # spans exactly 8 elements, but writes two of them twice and two never
    (
        "result_strides_overlap",
        bad_graph(
            "tensor<8xf32>",
            "tensor<2x2x2xf32, strided<[4, 2, 1]>>",
            '%v = cudnn.pointwise %d0 {mode = "neg"} : tensor<2x2x2xf32, strided<[4, 2, 1]>> -> tensor<2x2x2xf32>',
            "%v : tensor<2x2x2xf32>",
            "tensor<8xf32>",
            "1, 1, 5",
        ),
        "output 0: strides [1, 1, 5] of [2, 2, 2] do not fill the result 8xf32",
    ),
    (
        "result_element",
        bad_graph(T23, D23, NEG, f"%v : {T23}", "tensor<2x3xf16>", "3, 1"),
        "output 0: returned 2x3xf32 but the result is 2x3xf16",
    ),
    (
        "pointwise_arity",
        bad_graph(T23, D23, f'%v = cudnn.pointwise %d0 {{mode = "add"}} : {D23} -> {T23}', f"%v : {T23}", T23, "3, 1"),
        "cudnn.pointwise: mode add takes 2 operands, got 1",
    ),
    (
        "pointwise_arity_unary",
        bad_graph(
            T23, D23, f'%v = cudnn.pointwise %d0, %d0 {{mode = "exp"}} : {D23}, {D23} -> {T23}', f"%v : {T23}", T23, "3, 1"
        ),
        "mode exp takes 1 operands, got 2",
    ),
    (
        "pointwise_unknown_mode",
        bad_graph(T23, D23, f'%v = cudnn.pointwise %d0 {{mode = "softplus"}} : {D23} -> {T23}', f"%v : {T23}", T23, "3, 1"),
        "cudnn.pointwise: unknown mode 'softplus'",
    ),
    (
        "pointwise_clip_not_relu",
        bad_graph(
            T23,
            D23,
            f'%v = cudnn.pointwise %d0 {{mode = "tanh", upper_clip = 1.0 : f64}} : {D23} -> {T23}',
            f"%v : {T23}",
            T23,
            "3, 1",
        ),
        "clips belong to mode relu",
    ),
    (
        "pointwise_no_broadcast",
        bad_graph(
            "tensor<2x3xf32>; tensor<2xf32>",
            f"{D23}; tensor<1x2xf32, strided<[2, 1]>>",
            f'%v = cudnn.pointwise %d0, %d1 {{mode = "mul"}} : {D23}, tensor<1x2xf32, strided<[2, 1]>> -> {T23}',
            f"%v : {T23}",
            T23,
            "3, 1",
        ),
        "operand dims [2, 3], [1, 2] do not broadcast",
    ),
    (
        "pointwise_result_type",
        bad_graph(
            T23, D23, f'%v = cudnn.pointwise %d0 {{mode = "neg"}} : {D23} -> tensor<3x2xf32>', "%v : tensor<3x2xf32>", T23, "2, 1"
        ),
        "cudnn.pointwise: result type 3x2xf32 does not match 2x3xf32 implied by its operands",
    ),
    (
        "conv_weight_channels",
        bad_graph(
            "tensor<1x4x4x3xf32>; tensor<2x1x1x2xf32>",
            "tensor<1x3x4x4xf32, strided<[48, 1, 12, 3]>>; tensor<2x2x1x1xf32, strided<[2, 1, 1, 1]>>",
            "%v = cudnn.conv_fprop %d0, %d1 {pre_padding = array<i64: 0, 0>, post_padding = array<i64: 0, 0>, stride = array<i64: 1, 1>, "
            "dilation = array<i64: 1, 1>} : (tensor<1x3x4x4xf32, strided<[48, 1, 12, 3]>>, tensor<2x2x1x1xf32, strided<[2, 1, 1, 1]>>) -> tensor<1x2x4x4xf32>",
            "%v : tensor<1x2x4x4xf32>",
            "tensor<1x2x4x4xf32>",
            "32, 16, 4, 1",
        ),
        "cudnn.conv_fprop: weight 2x2x1x1xf32 does not fit 3 image channels",
    ),
    (
        "conv_groups_output_channels",
        bad_graph(
            "tensor<1x4x4x4xf32>; tensor<6x1x1x1xf32>",
            "tensor<1x4x4x4xf32, strided<[64, 1, 16, 4]>>; tensor<6x1x1x1xf32, strided<[1, 1, 1, 1]>>",
            "%v = cudnn.conv_fprop %d0, %d1 {pre_padding = array<i64: 0, 0>, post_padding = array<i64: 0, 0>, stride = array<i64: 1, 1>, "
            "dilation = array<i64: 1, 1>} : (tensor<1x4x4x4xf32, strided<[64, 1, 16, 4]>>, tensor<6x1x1x1xf32, strided<[1, 1, 1, 1]>>) -> tensor<1x6x4x4xf32>",
            "%v : tensor<1x6x4x4xf32>",
            "tensor<1x6x4x4xf32>",
            "96, 16, 4, 1",
        ),
        "weight 6x1x1x1xf32 does not fit 4 image channels",  # 4 groups cannot share 6 filters
    ),
    (
        "conv_filter_too_big",
        bad_graph(
            "tensor<1x2x2x1xf32>; tensor<1x3x3x1xf32>",
            "tensor<1x1x2x2xf32, strided<[4, 1, 2, 1]>>; tensor<1x1x3x3xf32, strided<[9, 1, 3, 1]>>",
            "%v = cudnn.conv_fprop %d0, %d1 {pre_padding = array<i64: 0, 0>, post_padding = array<i64: 0, 0>, stride = array<i64: 1, 1>, "
            "dilation = array<i64: 1, 1>} : (tensor<1x1x2x2xf32, strided<[4, 1, 2, 1]>>, tensor<1x1x3x3xf32, strided<[9, 1, 3, 1]>>) -> tensor<1x1x1x1xf32>",
            "%v : tensor<1x1x1x1xf32>",
            "tensor<1x1x1x1xf32>",
            "1, 1, 1, 1",
        ),
        "filter 3x3 does not fit the padded image 2x2",
    ),
    (
        "conv_negative_padding",
        bad_graph(
            "tensor<1x4x4x1xf32>; tensor<1x1x1x1xf32>",
            "tensor<1x1x4x4xf32, strided<[16, 1, 4, 1]>>; tensor<1x1x1x1xf32, strided<[1, 1, 1, 1]>>",
            "%v = cudnn.conv_fprop %d0, %d1 {pre_padding = array<i64: -1, 0>, post_padding = array<i64: 0, 0>, stride = array<i64: 1, 1>, "
            "dilation = array<i64: 1, 1>} : (tensor<1x1x4x4xf32, strided<[16, 1, 4, 1]>>, tensor<1x1x1x1xf32, strided<[1, 1, 1, 1]>>) -> tensor<1x1x3x4xf32>",
            "%v : tensor<1x1x3x4xf32>",
            "tensor<1x1x3x4xf32>",
            "12, 12, 4, 1",
        ),
        "paddings non-negative",
    ),
    (
        "matmul_inner_dims",
        bad_graph(
            "tensor<2x3xf32>; tensor<4x5xf32>",
            "tensor<1x2x3xf32, strided<[6, 3, 1]>>; tensor<1x4x5xf32, strided<[20, 5, 1]>>",
            "%v = cudnn.matmul %d0, %d1 : (tensor<1x2x3xf32, strided<[6, 3, 1]>>, tensor<1x4x5xf32, strided<[20, 5, 1]>>) -> tensor<1x2x5xf32>",
            "%v : tensor<1x2x5xf32>",
            "tensor<2x5xf32>",
            "10, 5, 1",
        ),
        "cudnn.matmul: needs [B, M, K] and [B, K, N] of one element type, got 1x2x3xf32 and 1x4x5xf32",
    ),
    (
        "matmul_rank",
        bad_graph(
            "tensor<2x3xf32>; tensor<3x5xf32>",
            "tensor<2x3xf32, strided<[3, 1]>>; tensor<3x5xf32, strided<[5, 1]>>",
            "%v = cudnn.matmul %d0, %d1 : (tensor<2x3xf32, strided<[3, 1]>>, tensor<3x5xf32, strided<[5, 1]>>) -> tensor<2x5xf32>",
            "%v : tensor<2x5xf32>",
            "tensor<2x5xf32>",
            "5, 1",
        ),
        "needs [B, M, K] and [B, K, N]",
    ),
    (
        "matmul_batch",
        bad_graph(
            "tensor<2x2x3xf32>; tensor<3x3x5xf32>",
            "tensor<2x2x3xf32, strided<[6, 3, 1]>>; tensor<3x3x5xf32, strided<[15, 5, 1]>>",
            "%v = cudnn.matmul %d0, %d1 : (tensor<2x2x3xf32, strided<[6, 3, 1]>>, tensor<3x3x5xf32, strided<[15, 5, 1]>>) -> tensor<3x2x5xf32>",
            "%v : tensor<3x2x5xf32>",
            "tensor<3x2x5xf32>",
            "10, 5, 1",
        ),
        "operand dims [2], [3] do not broadcast",
    ),
    (
        "reduction_axis",
        bad_graph(
            T23,
            D23,
            f'%v = cudnn.reduction %d0 {{mode = "add", axes = array<i64: 2>}} : {D23} -> {T23}',
            f"%v : {T23}",
            T23,
            "3, 1",
        ),
        "cudnn.reduction: axis 2 is out of range for 2x3xf32",
    ),
    (
        "reduction_mode",
        bad_graph(
            T23,
            D23,
            f'%v = cudnn.reduction %d0 {{mode = "norm2", axes = array<i64: 1>}} : {D23} -> tensor<2x1xf32>',
            "%v : tensor<2x1xf32>",
            "tensor<2xf32>",
            "1, 1",
        ),
        "unknown mode 'norm2'",
    ),
    (
        "layernorm_scale_shape",
        bad_graph(
            "tensor<6x4xf32>; tensor<4xf32>",
            "tensor<6x4x1x1xf32, strided<[4, 1, 1, 1]>>; tensor<4x1x1x1xf32, strided<[1, 1, 1, 1]>>",
            "%v = cudnn.layernorm %d0, %d1, %d1 {epsilon = 1.0e-05 : f64} : tensor<6x4x1x1xf32, strided<[4, 1, 1, 1]>>, "
            "tensor<4x1x1x1xf32, strided<[1, 1, 1, 1]>>, tensor<4x1x1x1xf32, strided<[1, 1, 1, 1]>> -> tensor<6x4x1x1xf32>",
            "%v : tensor<6x4x1x1xf32>",
            "tensor<6x4xf32>",
            "4, 1, 1, 1",
        ),
        "cudnn.layernorm: scale must be [1, 4, 1, 1] for input 6x4x1x1xf32, got 4x1x1x1xf32",
    ),
    (
        "sdpa_shapes",
        bad_graph(
            "tensor<1x2x4x8xf32>; tensor<1x2x4x4xf32>",
            "tensor<1x2x4x8xf32, strided<[64, 32, 8, 1]>>; tensor<1x2x4x4xf32, strided<[32, 16, 4, 1]>>",
            "%v = cudnn.sdpa %d0, %d1, %d0 {scale = 1.0 : f64, causal = 0 : i64} : tensor<1x2x4x8xf32, strided<[64, 32, 8, 1]>>, "
            "tensor<1x2x4x4xf32, strided<[32, 16, 4, 1]>>, tensor<1x2x4x8xf32, strided<[64, 32, 8, 1]>> -> tensor<1x2x4x8xf32>",
            "%v : tensor<1x2x4x8xf32>",
            "tensor<1x2x4x8xf32>",
            "64, 32, 8, 1",
        ),
        "cudnn.sdpa: q 1x2x4x8xf32, k 1x2x4x4xf32 and v 1x2x4x8xf32 do not fit together",
    ),
]


@pytest.mark.parametrize("name,text,message", BAD, ids=[b[0] for b in BAD])
def test_verifier(name: str, text: str, message: str) -> None:
    with pytest.raises(IRError) as info:
        parse_ir(text, f"{name}.mlir")
    assert message in str(info.value) and f"{name}.mlir" in str(info.value), str(info.value)


def test_good_neighbours_verify() -> None:
    """Well-formed neighbours of the bad programs: each differs in the point tested."""
    parse_ir(bad_graph(T23, D23, NEG, f"%v : {T23}", T23, "3, 1"))
    parse_ir(bad_graph(T23, D23, NEG, f"%v : {T23}", "tensor<3x2xf32>", "1, 2"))  # written transposed
    parse_ir(bad_graph(T23, D23, NEG, f"%v : {T23}", "tensor<6xf32>", "1, 2"))
    d222 = "tensor<2x2x2xf32, strided<[1, 4, 2]>>"
    neg222 = f'%v = cudnn.pointwise %d0 {{mode = "neg"}} : {d222} -> tensor<2x2x2xf32>'
    parse_ir(bad_graph("tensor<8xf32>", d222, neg222, "%v : tensor<2x2x2xf32>", "tensor<8xf32>", "2, 4, 1"))
    d21 = "tensor<2x1xf32, strided<[1, 1]>>"
    mul = f'%v = cudnn.pointwise %d0, %d1 {{mode = "mul"}} : {D23}, {d21} -> {T23}'
    parse_ir(bad_graph("tensor<2x3xf32>; tensor<2xf32>", f"{D23}; {d21}", mul, f"%v : {T23}", T23, "3, 1"))  # [2, 1] broadcasts


def test_return_outside_graph_rejected() -> None:
    with pytest.raises(IRError, match="'cudnn.return' expects parent op 'cudnn.graph'"):
        parse_ir(f"func.func @f(%x: {T23}) -> {T23} {{\n  cudnn.return %x : {T23}\n}}\n")


# ----------------------------------------------------------------------------------------
# (b) Reference semantics against PyTorch


def conv_oracle(
    x: torch.Tensor, w: torch.Tensor, pre: Sequence[int], post: Sequence[int], stride: Sequence[int], dil: Sequence[int]
) -> torch.Tensor:
    """Cross-correlation written out: zero padding by slice assignment, one einsum per
    filter tap, groups as a reshape. float64."""
    x, w = x.double(), w.double()
    n, c, h, wd = x.shape
    k, cg, r, s = w.shape
    groups = c // cg
    padded = torch.zeros(n, c, h + pre[0] + post[0], wd + pre[1] + post[1], dtype=torch.float64)
    padded[:, :, pre[0] : pre[0] + h, pre[1] : pre[1] + wd] = x
    ho = (padded.shape[2] - dil[0] * (r - 1) - 1) // stride[0] + 1
    wo = (padded.shape[3] - dil[1] * (s - 1) - 1) // stride[1] + 1
    out = torch.zeros(n, groups, k // groups, ho, wo, dtype=torch.float64)
    wg = w.reshape(groups, k // groups, cg, r, s)
    for i in range(r):
        for j in range(s):
            rows = slice(i * dil[0], i * dil[0] + stride[0] * (ho - 1) + 1, stride[0])
            cols = slice(j * dil[1], j * dil[1] + stride[1] * (wo - 1) + 1, stride[1])
            patch = padded[:, :, rows, cols].reshape(n, groups, cg, ho, wo)
            out += torch.einsum("ngchw,gkc->ngkhw", patch, wg[:, :, :, i, j])
    return out.reshape(n, k, ho, wo)


CONVS = [
    # n, c, h, w, k, weight channels (c / groups), (r, s), pre, post, stride, dilation
    pytest.param(2, 3, 7, 6, 4, 3, (3, 2), (1, 0), (2, 1), (2, 1), (1, 2), id="asymmetric-strided-dilated"),
    pytest.param(1, 4, 6, 5, 8, 1, (3, 3), (1, 1), (1, 1), (1, 1), (1, 1), id="depthwise-x2"),
    pytest.param(1, 6, 5, 5, 4, 3, (3, 3), (0, 2), (2, 0), (1, 2), (1, 1), id="groups-2"),
    pytest.param(2, 5, 4, 4, 3, 5, (1, 1), (0, 0), (0, 0), (1, 1), (1, 1), id="1x1"),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n,c,h,w,k,cg,rs,pre,post,stride,dil", CONVS)
def test_conv_fprop(
    n: int,
    c: int,
    h: int,
    w: int,
    k: int,
    cg: int,
    rs: tuple,
    pre: tuple,
    post: tuple,
    stride: tuple,
    dil: tuple,
    dtype: torch.dtype,
    rng: torch.Generator,
) -> None:
    r, s = rs
    x = randn(rng, (n, c, h, w), dtype)
    wt = randn(rng, (k, cg, r, s), dtype, scale=0.5)
    expected = conv_oracle(x, wt, pre, post, stride, dil)
    ho, wo = expected.shape[2:]
    # the image as an NHWC buffer, the weight as a KRSC buffer, the output written NHWC
    g = Graph(dtype, [(n, h, w, c), (k, r, s, cg)], [((n, c, h, w), nhwc(n, c, h, w)), ((k, cg, r, s), nhwc(k, cg, r, s))])
    props = {
        "pre_padding": i64_array(pre),
        "post_padding": i64_array(post),
        "stride": i64_array(stride),
        "dilation": i64_array(dil),
    }
    y = g.add(cudnn.ConvFpropOp.make(g.args, props))
    program = g.program(y, (n, ho, wo, k), nhwc(n, k, ho, wo))
    out = run(program, x.permute(TO_NHWC).contiguous(), wt.permute(TO_NHWC).contiguous())
    assert_matches(out, expected.permute(TO_NHWC), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("broadcast", ["a", "b"])
def test_matmul_batch_broadcast_transposed_b(broadcast: str, dtype: torch.dtype, rng: torch.Generator) -> None:
    batch, m, kk, nn_ = 3, 5, 7, 4
    ba, bb = (1, batch) if broadcast == "a" else (batch, 1)
    a = randn(rng, (ba, m, kk), dtype)
    b_nk = randn(rng, (bb, nn_, kk), dtype)  # b is given as [B, N, K]; the descriptor reads it as [B, K, N]
    g = Graph(dtype, [(ba, m, kk), (bb, nn_, kk)], [((ba, m, kk), (m * kk, kk, 1)), ((bb, kk, nn_), (nn_ * kk, 1, kk))])
    y = g.add(cudnn.MatmulOp.make(g.args))
    program = g.program(y, (batch, m, nn_), (m * nn_, nn_, 1))
    expected = torch.matmul(a.double().expand(batch, m, kk), b_nk.double().transpose(1, 2).expand(batch, kk, nn_))
    assert_matches(run(program, a, b_nk), expected, dtype)


SQRT_2_PI = math.sqrt(2.0 / math.pi)
UNARY = {
    # mode -> (formula in float64, input shift so that the input is in the domain)
    "gelu": (lambda x: 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0))), 0.0),
    "gelu_approx_tanh": (lambda x: 0.5 * x * (1.0 + torch.tanh(SQRT_2_PI * (x + 0.044715 * x**3))), 0.0),
    "sigmoid": (lambda x: 1.0 / (1.0 + torch.exp(-x)), 0.0),
    "tanh": (lambda x: (torch.exp(2 * x) - 1) / (torch.exp(2 * x) + 1), 0.0),
    "swish": (lambda x: x / (1.0 + torch.exp(-x)), 0.0),
    "exp": (torch.exp, 0.0),
    "log": (torch.log, None),
    "sqrt": (torch.sqrt, None),
    "rsqrt": (lambda x: 1.0 / torch.sqrt(x), None),
    "neg": (lambda x: -x, 0.0),
    "abs": (lambda x: torch.where(x < 0, -x, x), 0.0),
    "erf": (torch.erf, 0.0),
}
BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "max": lambda a, b: torch.where(a >= b, a, b),
    "min": lambda a, b: torch.where(a <= b, a, b),
}


def test_every_pointwise_mode_is_tested() -> None:
    assert set(cudnn.POINTWISE_MODES) == {*UNARY, *BINARY, "relu"}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("mode", sorted(UNARY))
def test_pointwise_unary(mode: str, dtype: torch.dtype, rng: torch.Generator) -> None:
    formula, shift = UNARY[mode]
    n, c, h, w = 2, 5, 3, 4
    x = randn(rng, (n, c, h, w), dtype, scale=1.5)
    if shift is None:  # log, sqrt, rsqrt: positive inputs
        x = (x.double().abs() + 0.25).to(dtype)
    g = Graph(dtype, [(n, h, w, c)], [((n, c, h, w), nhwc(n, c, h, w))])
    y = g.add(cudnn.PointwiseOp.make([g.args], {"mode": str_attr(mode)}))
    program = g.program(y, (n, c, h, w), cudnn.row_major_strides((n, c, h, w)))  # NHWC in, NCHW out
    out = run(program, x.permute(TO_NHWC).contiguous())
    assert_matches(out, formula(x.double()), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("clips", [(None, None), (0.0, 6.0), (None, 1.0), (0.25, None)], ids=str)
def test_pointwise_relu_clips(clips: tuple[float | None, float | None], dtype: torch.dtype, rng: torch.Generator) -> None:
    lo, hi = clips
    n, c, h, w = 1, 4, 5, 3
    x = randn(rng, (n, c, h, w), dtype, scale=4.0)
    x[0, 0, 0, 0], x[0, 1, 0, 0] = 10.0, -10.0  # beyond every clip
    props = {"mode": str_attr("relu")}
    if lo is not None:
        props["lower_clip"] = float_attr(lo)
    if hi is not None:
        props["upper_clip"] = float_attr(hi)
    g = Graph(dtype, [(n, h, w, c)], [((n, c, h, w), nhwc(n, c, h, w))])
    y = g.add(cudnn.PointwiseOp.make([g.args], props))
    program = g.program(y, (n, h, w, c), nhwc(n, c, h, w))
    expected = x.double()
    expected = torch.where(expected > (lo or 0.0), expected, torch.full_like(expected, lo or 0.0))
    if hi is not None:
        expected = torch.where(expected < hi, expected, torch.full_like(expected, hi))
    assert (expected == (lo or 0.0)).any() and (hi is None or (expected == hi).any())  # the clips bite
    assert_matches(run(program, x.permute(TO_NHWC).contiguous()), expected.permute(TO_NHWC), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("bias_first", [False, True], ids=["x_op_bias", "bias_op_x"])
@pytest.mark.parametrize("mode", sorted(BINARY))
def test_pointwise_binary_broadcast(mode: str, bias_first: bool, dtype: torch.dtype, rng: torch.Generator) -> None:
    """An NHWC activation and a [1, C, 1, 1] per-channel operand (a [C] buffer), both orders."""
    n, c, h, w = 2, 6, 3, 4
    x = randn(rng, (n, c, h, w), dtype)
    if mode == "div" and bias_first:  # x divides: kept at least 0.5 from zero, so float16 cannot overflow
        x = torch.where(x < 0, x - 0.5, x + 0.5)
    bias = randn(rng, (c,), dtype, scale=0.5, shift=2.0 if mode == "div" else 0.0)
    g = Graph(dtype, [(n, h, w, c), (c,)], [((n, c, h, w), nhwc(n, c, h, w)), ((1, c, 1, 1), (c, 1, 1, 1))])
    xd, bd = g.args
    y = g.add(cudnn.PointwiseOp.make([[bd, xd] if bias_first else [xd, bd]], {"mode": str_attr(mode)}))
    program = g.program(y, (n, h, w, c), nhwc(n, c, h, w))
    xb, bb = x.double(), bias.double().reshape(1, c, 1, 1).expand(n, c, h, w)
    expected = BINARY[mode](bb, xb) if bias_first else BINARY[mode](xb, bb)
    assert_matches(run(program, x.permute(TO_NHWC).contiguous(), bias), expected.permute(TO_NHWC), dtype)


def reduction_oracle(x: torch.Tensor, mode: str, axes: Sequence[int]) -> torch.Tensor:
    x = x.double()
    for a in axes:
        if mode == "add":
            x = x.sum(a, keepdim=True)
        elif mode == "avg":
            x = x.sum(a, keepdim=True) / x.shape[a]
        elif mode == "mul":
            x = x.prod(a, keepdim=True)
        elif mode == "max":
            x = x.max(a, keepdim=True).values
        else:
            x = x.min(a, keepdim=True).values
    return x


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("axes", [(1,), (2, 3), (0, 1, 2, 3), (0, 2)], ids=str)
@pytest.mark.parametrize("mode", cudnn.REDUCTION_MODES)
def test_reduction(mode: str, axes: tuple[int, ...], dtype: torch.dtype, rng: torch.Generator) -> None:
    n, c, h, w = 2, 4, 3, 3
    # centred on 1: sums stay away from 0 (no cancellation), products near 1
    x = randn(rng, (n, c, h, w), dtype, scale=0.1 if mode == "mul" else 1.0, shift=1.0)
    dims = tuple(1 if i in axes else d for i, d in enumerate((n, c, h, w)))
    g = Graph(dtype, [(n, h, w, c)], [((n, c, h, w), nhwc(n, c, h, w))])
    y = g.add(cudnn.ReductionOp.make(g.args, {"mode": str_attr(mode), "axes": i64_array(axes)}))
    assert shape_of(y.type) == dims
    program = g.program(y, dims, cudnn.row_major_strides(dims))
    assert_matches(run(program, x.permute(TO_NHWC).contiguous()), reduction_oracle(x, mode, axes), dtype)


def layer_norm_oracle(x: torch.Tensor, scale: torch.Tensor, bias: torch.Tensor, eps: float) -> torch.Tensor:
    x = x.double()
    dims = tuple(range(1, x.dim()))
    mean = x.mean(dims, keepdim=True)
    var = ((x - mean) ** 2).mean(dims, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * scale.double() + bias.double()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_layernorm_rows(dtype: torch.dtype, rng: torch.Generator) -> None:
    """As lower-cudnn uses it: a [B, S, D] tensor read as [B * S, D, 1, 1], [D] scale and bias."""
    b, s, d, eps = 2, 3, 16, 1e-5
    x = randn(rng, (b, s, d), dtype, scale=2.0, shift=1.0)
    scale, bias = randn(rng, (d,), dtype, shift=1.0), randn(rng, (d,), dtype)
    g = Graph(
        dtype,
        [(b, s, d), (d,), (d,)],
        [((b * s, d, 1, 1), (d, 1, 1, 1)), ((1, d, 1, 1), (d, 1, 1, 1)), ((1, d, 1, 1), (d, 1, 1, 1))],
    )
    y = g.add(cudnn.LayerNormOp.make(g.args, {"epsilon": float_attr(eps)}))
    program = g.program(y, (b, s, d), (d, 1, 1, 1))
    expected = layer_norm_oracle(x.reshape(b * s, d), scale.reshape(1, d), bias.reshape(1, d), eps).reshape(b, s, d)
    assert_matches(run(program, x, scale, bias), expected, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_layernorm_all_but_first_dim_nhwc(dtype: torch.dtype, rng: torch.Generator) -> None:
    """The dialect's definition: every dim but the first, here of an NHWC-strided image."""
    n, c, h, w, eps = 2, 3, 4, 5, 1e-3
    x = randn(rng, (n, c, h, w), dtype, scale=3.0)
    scale, bias = randn(rng, (1, c, h, w), dtype), randn(rng, (1, c, h, w), dtype)
    rm = cudnn.row_major_strides((1, c, h, w))
    g = Graph(
        dtype,
        [(n, h, w, c), (1, c, h, w), (1, c, h, w)],
        [((n, c, h, w), nhwc(n, c, h, w)), ((1, c, h, w), rm), ((1, c, h, w), rm)],
    )
    y = g.add(cudnn.LayerNormOp.make(g.args, {"epsilon": float_attr(eps)}))
    program = g.program(y, (n, h, w, c), nhwc(n, c, h, w))
    expected = layer_norm_oracle(x, scale, bias, eps)
    assert_matches(run(program, x.permute(TO_NHWC).contiguous(), scale, bias), expected.permute(TO_NHWC), dtype)


def sdpa_oracle(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, causal: bool) -> torch.Tensor:
    scores = torch.einsum("bhqd,bhkd->bhqk", q.double(), k.double()) * scale
    if causal:  # top-left aligned, as PyTorch's is_causal: query i sees keys 0..i
        sq, skv = scores.shape[-2:]
        allowed = torch.arange(skv)[None, :] <= torch.arange(sq)[:, None]
        scores = scores.masked_fill(~allowed, -math.inf)
    weights = torch.exp(scores - scores.amax(-1, keepdim=True))
    weights = weights / weights.sum(-1, keepdim=True)
    return torch.einsum("bhqk,bhkd->bhqd", weights, v.double())


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(
    "causal,sq,skv,scale", [(False, 5, 7, None), (True, 6, 6, None), (True, 4, 6, 0.3)], ids=["full", "causal", "causal-rect"]
)
def test_sdpa(causal: bool, sq: int, skv: int, scale: float | None, dtype: torch.dtype, rng: torch.Generator) -> None:
    """q, k, v given [B, S, H, D] (as a projection writes them), read as [B, H, S, D]."""
    b, heads, d, dv = 2, 3, 8, 4
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    q, k, v = randn(rng, (b, sq, heads, d), dtype), randn(rng, (b, skv, heads, d), dtype), randn(rng, (b, skv, heads, dv), dtype)

    def bshd(s: int, e: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return (b, heads, s, e), (s * heads * e, e, heads * e, 1)

    g = Graph(dtype, [q.shape, k.shape, v.shape], [bshd(sq, d), bshd(skv, d), bshd(skv, dv)])
    y = g.add(cudnn.SdpaOp.make(g.args, {"scale": float_attr(scale), "causal": int_attr(int(causal))}))
    dims, strides = bshd(sq, dv)
    program = g.program(y, (b, sq, heads, dv), strides)
    expected = sdpa_oracle(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), scale, causal)
    assert tuple(expected.shape) == dims
    assert_matches(run(program, q, k, v), expected.transpose(1, 2), dtype)


# ----------------------------------------------------------------------------------------
# (c) The whole CUDNN_STAGE on the test models


def lowered_copy(canonical: Program) -> Program:
    program = Program(parse_ir(canonical.text()), ParamStore(dict(canonical.params)))
    run_stage(program, "gpu-cudnn")
    program.verify()
    return program


def top_ops(program: Program) -> list[Operation]:
    return list(program.entry.body.block.ops)


def graphs(program: Program) -> list[cudnn.GraphOp]:
    return [op for op in top_ops(program) if isinstance(op, cudnn.GraphOp)]


def kinds(program: Program) -> Counter[str]:
    return Counter(g.attributes["kind"].data for g in graphs(program))  # type: ignore[attr-defined]


def fresh_inputs(canonical: Program, example: Sequence[torch.Tensor], rng: torch.Generator) -> list[torch.Tensor]:
    out = []
    for x in example:
        if x.is_floating_point():
            out.append(torch.randn(x.shape, generator=rng).to(x.dtype))
        else:  # token ids: anywhere in the embedding table
            vocab = next(shape_of(op.operands[0].type)[0] for op in canonical.entry.body.walk() if isinstance(op, tcp.GatherOp))
            out.append(torch.randint(0, vocab, x.shape, generator=rng).to(x.dtype))
    return out


def conv_graphs(program: Program) -> list[cudnn.GraphOp]:
    return [g for g in graphs(program) if any(isinstance(o, cudnn.ConvFpropOp) for o in g.body.block.ops)]


def check_conv_graphs(canonical: Program, lowered: Program) -> None:
    """Every conv is in a graph; its image is read NHWC and its weight is a stored
    parameter laid out KRSC that, read through the descriptor, is exactly one of the
    original weights (matched by value: a residual add may join either conv of a
    block, so the graphs need not follow the convs' order)."""
    convs = [op for op in canonical.entry.body.walk() if isinstance(op, tcp.Conv2dOp)]
    cgraphs = conv_graphs(lowered)
    assert len(cgraphs) == len(convs) > 0
    assert not [op for op in lowered.entry.body.walk() if isinstance(op, (tcp.Conv2dOp, tcp.IsolatedGroupOp))]
    for graph in cgraphs:
        node = next(o for o in graph.body.block.ops if isinstance(o, cudnn.ConvFpropOp))
        image, weight = node.image, node.weight
        assert image in graph.body.block.args and weight in graph.body.block.args
        n, c, h, w = shape_of(image.type)
        assert cudnn.strides_of(image.type) == nhwc(n, c, h, w), graph.attributes["kind"]
        operand = graph.inputs[graph.body.block.args.index(weight)]
        param = operand.owner
        assert isinstance(param, tcp.ParamOp), f"the weight of {graph.attributes['kind']} is computed at run time"
        k, cg, r, s = shape_of(weight.type)
        assert shape_of(param.result) == (k, r, s, cg)  # KRSC
        strides = cudnn.strides_of(weight.type)
        assert strides is not None
        logical = view_through(lowered.params[param.param_name], (k, cg, r, s), strides)
        matches = [
            conv
            for conv in convs
            if shape_of(conv.weight.type) == (k, cg, r, s)
            and torch.equal(canonical.params[conv.weight.owner.param_name], logical)  # type: ignore[attr-defined]
        ]
        assert len(matches) == 1, f"{param.param_name} read through {strides} is not one original weight"
        conv = matches[0]
        convs.remove(conv)
        pad = ints(conv.padding)
        assert ints(node.stride) == ints(conv.stride) and ints(node.dilation) == ints(conv.dilation)
        assert (ints(node.pre_padding), ints(node.post_padding)) == ((pad[0], pad[2]), (pad[1], pad[3]))
    assert not convs


def check_no_param_transposes(lowered: Program) -> None:
    for op in top_ops(lowered):
        if isinstance(op, tcp.TransposeOp):
            assert not isinstance(op.input.owner, tcp.ParamOp), "a parameter is transposed at run time"


def transposes_between_graphs(lowered: Program) -> list[Operation]:
    return [
        op
        for op in top_ops(lowered)
        if isinstance(op, tcp.TransposeOp)
        and isinstance(op.input.owner, cudnn.GraphOp)
        and any(isinstance(u.operation, cudnn.GraphOp) for u in op.result.uses)
    ]


def check_same_results(canonical: Program, lowered: Program, example: Sequence[torch.Tensor], rng: torch.Generator) -> None:
    inputs = fresh_inputs(canonical, example, rng)
    expected = ReferenceExecutor(canonical).run(inputs)
    actual = ReferenceExecutor(lowered).run(inputs)
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert_matches(a, e, torch.float32, what=f"output {i}")


def test_resnet50(canonical_models: dict, rng: torch.Generator) -> None:
    canonical, model, example = canonical_models["resnet50"]
    lowered = lowered_copy(canonical)
    check_same_results(canonical, lowered, example, rng)
    check_conv_graphs(canonical, lowered)
    check_no_param_transposes(lowered)
    blocks = [m for m in model.modules() if type(m).__name__ == "Bottleneck"]
    downsamples = sum(1 for b in blocks if b.downsample is not None)
    convs = sum(1 for m in model.modules() if isinstance(m, nn.Conv2d))
    # each bottleneck: two conv+bn+relu, one conv+bn + residual + relu; each
    # downsample: conv+bn; the stem: conv+bn+relu; the head: linear (bias of [1, 1000])
    assert kinds(lowered) == {
        "conv_bias_add_relu": len(blocks),
        "conv_bias": downsamples,
        "conv_bias_relu": convs - len(blocks) - downsamples,
        "matmul_add": 1,
    }
    # the only transposes: the input to NHWC, and around the max pool and the mean
    assert not transposes_between_graphs(lowered)
    neighbours = []
    for op in top_ops(lowered):
        if isinstance(op, tcp.TransposeOp):
            users = {u.operation.name for u in op.result.uses}
            neighbours.append((op.input.owner.name if isinstance(op.input.owner, Operation) else "input", *sorted(users)))
    assert sorted(neighbours) == sorted(
        [
            ("input", "cudnn.graph"),
            ("cudnn.graph", "tcp.max_pool2d"),
            ("tcp.max_pool2d", "cudnn.graph"),
            ("cudnn.graph", "tcp.reduce_mean"),
        ]
    )
    assert print_ir(parse_ir(lowered.text())) == lowered.text()


def test_mobilenet_v2(canonical_models: dict, rng: torch.Generator) -> None:
    canonical, model, example = canonical_models["mobilenet_v2"]
    lowered = lowered_copy(canonical)
    check_same_results(canonical, lowered, example, rng)
    check_conv_graphs(canonical, lowered)  # depthwise convs included
    check_no_param_transposes(lowered)
    blocks = [m for m in model.modules() if type(m).__name__ == "InvertedResidual"]
    residual = sum(1 for b in blocks if b.use_residual)
    convs = sum(1 for m in model.modules() if isinstance(m, nn.Conv2d))
    depthwise = sum(1 for m in model.modules() if isinstance(m, nn.Conv2d) and m.groups == m.in_channels > 1)
    # each block ends in a projection conv+bn without activation (+ the residual);
    # every other conv is conv+bn+relu6, except the depthwise ones: bare convolutions,
    # their bias and ReLU6 left to codegen
    assert kinds(lowered) == {
        "conv_bias_add": residual,
        "conv_bias": len(blocks) - residual,
        "conv_bias_relu": convs - len(blocks) - depthwise,
        "conv": depthwise,
        "matmul_add": 1,
    }
    relus = [o for g in graphs(lowered) for o in g.body.block.ops if isinstance(o, cudnn.PointwiseOp) and o.mode.data == "relu"]
    assert len(relus) == convs - len(blocks) - depthwise and all(o.clips() == (0.0, 6.0) for o in relus)
    assert not transposes_between_graphs(lowered)
    assert len([op for op in top_ops(lowered) if isinstance(op, tcp.TransposeOp)]) == 2  # the input; before the mean


def test_vit_block(canonical_models: dict, rng: torch.Generator) -> None:
    canonical, model, example = canonical_models["vit_block"]
    lowered = lowered_copy(canonical)
    check_same_results(canonical, lowered, example, rng)
    check_conv_graphs(canonical, lowered)  # the patch embedding
    check_no_param_transposes(lowered)
    norms = sum(1 for m in model.modules() if isinstance(m, nn.LayerNorm))
    linears = sum(1 for m in model.modules() if isinstance(m, nn.Linear))
    # linears: their bias broadcast over the tokens, except the head's (one row), the
    # MLP's first with its GELU; attention: q @ k^T with its scale, and weights @ v
    assert kinds(lowered) == {
        "conv_bias": 1,
        "layernorm": norms,
        "matmul_bias": linears - 2,
        "matmul_bias_gelu": 1,
        "matmul_add": 1,
        "matmul_mul": 1,
        "matmul": 1,
    }
    for g in graphs(lowered):
        if g.attributes["kind"].data == "layernorm":  # type: ignore[attr-defined]
            x = g.body.block.args[0]
            assert shape_of(x.type)[2:] == (1, 1) and shape_of(x.type)[:2] == (
                math.prod(shape_of(g.inputs[0].type)[:-1]),
                shape_of(g.inputs[0].type)[-1],
            )
        if g.attributes["kind"].data.startswith("matmul"):  # type: ignore[attr-defined]
            assert all(len(shape_of(a.type)) == 3 for a in g.body.block.args)


def test_gpt2_block(canonical_models: dict, rng: torch.Generator) -> None:
    canonical, model, example = canonical_models["gpt2_block"]
    lowered = lowered_copy(canonical)
    check_same_results(canonical, lowered, example, rng)
    check_no_param_transposes(lowered)
    norms = sum(1 for m in model.modules() if isinstance(m, nn.LayerNorm))
    linears = sum(1 for m in model.modules() if isinstance(m, nn.Linear) and m.bias is not None)
    # biased linears, the MLP's first with its GELU; attention's two batched matmuls (the
    # scores with their scale) and the LM head (no bias)
    assert kinds(lowered) == {
        "layernorm": norms,
        "matmul_bias": linears - 1,
        "matmul_bias_gelu_approx_tanh": 1,
        "matmul_mul": 1,
        "matmul": 2,
    }
    assert not [op for op in lowered.entry.body.walk() if isinstance(op, (tcp.MatmulOp, tcp.BatchMatmulOp, tcp.LayerNormOp))]


def test_stage_lit_runs_the_pipeline_stage() -> None:
    """tests/lit/passes/cudnn_stage.mlir spells out CUDNN_STAGE: keep it the same."""
    run_line = STAGE_LIT.read_text().splitlines()[0]
    match = re.search(r'-p "([^"]+)"', run_line)
    assert match and match.group(1) == CUDNN_STAGE, run_line
