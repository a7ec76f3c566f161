"""Small tcp programs, one or more per Triton kernel kind, with odd sizes (never a
multiple of a block), broadcasting, data movement and prologue/epilogue ops; each
is written for an element type ``T`` and run before and after ``triton-fuse``."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from dnnc.ir.params import ParamStore
from dnnc.ir.program import Program
from dnnc.ir.text import parse_ir


@dataclass(frozen=True)
class Case:
    name: str
    kinds: tuple[str, ...]
    """Kernel kinds ``triton-fuse`` must produce for it."""
    ir: str
    ints: tuple[tuple[int, int], ...] = ()
    """(argument position, exclusive upper bound) of integer arguments (indices)."""
    looped: bool = False

    def program(self, dtype: str) -> Program:
        return Program(parse_ir(self.ir.replace("xT>", f"x{dtype}>"), self.name), ParamStore())

    def inputs(self, program: Program, rng: torch.Generator) -> list[torch.Tensor]:
        from dnnc.ir.types import shape_of, torch_dtype

        bounds = dict(self.ints)
        out = []
        for i, t in enumerate(program.input_types):
            dtype = torch_dtype(t.element_type)
            shape = shape_of(t)
            if dtype == torch.bool:
                out.append(torch.rand(shape, generator=rng) > 0.5)
            elif not dtype.is_floating_point:
                out.append(torch.randint(0, bounds.get(i, 7), shape, generator=rng, dtype=dtype))
            else:
                out.append(torch.randn(shape, generator=rng).to(dtype))
        return out


SUMMED_BLOCK = """func.func @forward(%y: tensor<2x6x5x5xT>, %x: tensor<2x5x9x9xT>, %w1: tensor<7x6x1x1xT>, %w2: tensor<7x5x1x1xT>, %b1: tensor<1x7x1x1xT>, %b2: tensor<1x7x1x1xT>) -> tensor<2x7x5x5xT> {
  %c1 = tcp.conv2d %y, %w1 {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x6x5x5xT>, tensor<7x6x1x1xT>) -> tensor<2x7x5x5xT>
  %bb1 = tcp.broadcast %b1 : tensor<1x7x1x1xT> to tensor<2x7x5x5xT>
  %a1 = tcp.add %c1, %bb1 : tensor<2x7x5x5xT>
  %c2 = tcp.conv2d %x, %w2 {stride = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x5x9x9xT>, tensor<7x5x1x1xT>) -> tensor<2x7x5x5xT>
  %bb2 = tcp.broadcast %b2 : tensor<1x7x1x1xT> to tensor<2x7x5x5xT>
  %a2 = tcp.add %c2, %bb2 : tensor<2x7x5x5xT>
  %s = tcp.add %a1, %a2 : tensor<2x7x5x5xT>
  %r = tcp.clamp %s {min = 0.0 : f64} : tensor<2x7x5x5xT>
  func.return %r : tensor<2x7x5x5xT>
}"""
"""A ResNet block that changes its width: its 1x1 expansion of ``y`` and the strided 1x1
downsample of its input ``x``, each with its bias, summed and rectified."""


CASES = [
    Case(
        "elementwise_chain",
        ("pointwise",),
        """func.func @forward(%x: tensor<3x37x5xT>, %b: tensor<37x1xT>, %y: tensor<3x37x5xf32>) -> (tensor<3x37x5xT>, tensor<3x37x5xT>) {
  %r = tcp.reshape %b : tensor<37x1xT> to tensor<1x37x1xT>
  %bb = tcp.broadcast %r : tensor<1x37x1xT> to tensor<3x37x5xT>
  %a = tcp.add %x, %bb : tensor<3x37x5xT>
  %e = tcp.exp %a : tensor<3x37x5xT>
  %t = tcp.tanh %x : tensor<3x37x5xT>
  %s = tcp.sigmoid %t : tensor<3x37x5xT>
  %u = tcp.silu %e : tensor<3x37x5xT>
  %g = tcp.gelu %u {approximate = "tanh"} : tensor<3x37x5xT>
  %g2 = tcp.gelu %s {approximate = "none"} : tensor<3x37x5xT>
  %m = tcp.mul %g, %g2 : tensor<3x37x5xT>
  %d = tcp.div %m, %e : tensor<3x37x5xT>
  %ab = tcp.abs %x : tensor<3x37x5xT>
  %sq = tcp.sqrt %ab : tensor<3x37x5xT>
  %c = tcp.clamp %ab {min = 0.25 : f64} : tensor<3x37x5xT>
  %rs = tcp.rsqrt %c : tensor<3x37x5xT>
  %lg = tcp.log %c : tensor<3x37x5xT>
  %er = tcp.erf %x : tensor<3x37x5xT>
  %p = tcp.pow %x, %bb : tensor<3x37x5xT>
  %n = tcp.neg %p : tensor<3x37x5xT>
  %mx = tcp.maximum %n, %sq : tensor<3x37x5xT>
  %mn = tcp.minimum %mx, %rs : tensor<3x37x5xT>
  %s1 = tcp.sub %mn, %lg : tensor<3x37x5xT>
  %s2 = tcp.add %s1, %er : tensor<3x37x5xT>
  %yc = tcp.cast %y : tensor<3x37x5xf32> to tensor<3x37x5xT>
  %s3 = tcp.add %s2, %yc : tensor<3x37x5xT>
  %s4 = tcp.add %s3, %d : tensor<3x37x5xT>
  %h = tcp.clamp %s4 {min = -3.0 : f64, max = 3.0 : f64} : tensor<3x37x5xT>
  func.return %h, %e : tensor<3x37x5xT>, tensor<3x37x5xT>
}""",
    ),
    Case(
        "masks_and_integers",
        ("pointwise",),
        """func.func @forward(%x: tensor<11x13xT>, %y: tensor<11x13xT>, %i: tensor<11x13xi32>) -> (tensor<11x13xT>, tensor<11x13xi1>, tensor<11x13xi32>) {
  %lt = tcp.compare %x, %y {predicate = "lt"} : tensor<11x13xT> -> tensor<11x13xi1>
  %ge = tcp.compare %x, %y {predicate = "ge"} : tensor<11x13xT> -> tensor<11x13xi1>
  %nz = tcp.cast %x : tensor<11x13xT> to tensor<11x13xi1>
  %o = tcp.logical_or %lt, %nz : tensor<11x13xi1>
  %n = tcp.logical_not %ge : tensor<11x13xi1>
  %a = tcp.logical_and %o, %n : tensor<11x13xi1>
  %s = tcp.select %a, %x, %y : tensor<11x13xi1>, tensor<11x13xT>
  %k = tcp.constant {value = 3 : i64} : tensor<11x13xi32>
  %ii = tcp.mul %i, %k : tensor<11x13xi32>
  %ic = tcp.clamp %ii {max = 10.0 : f64} : tensor<11x13xi32>
  %xi = tcp.cast %s : tensor<11x13xT> to tensor<11x13xi32>
  %sum = tcp.add %ic, %xi : tensor<11x13xi32>
  %f = tcp.cast %sum : tensor<11x13xi32> to tensor<11x13xT>
  %r = tcp.add %s, %f : tensor<11x13xT>
  func.return %r, %a, %sum : tensor<11x13xT>, tensor<11x13xi1>, tensor<11x13xi32>
}""",
    ),
    Case(
        "data_movement",
        ("pointwise", "pointwise"),
        """func.func @forward(%x: tensor<6x5x7xT>, %y: tensor<6x3x7xT>, %e: tensor<29x7xT>, %i: tensor<6x4xi64>) -> (tensor<7x12x6xT>, tensor<6x4x7xT>) {
  %c = tcp.concat %x, %y {axis = 1 : i64} : (tensor<6x5x7xT>, tensor<6x3x7xT>) -> tensor<6x8x7xT>
  %s = tcp.slice %c {starts = array<i64: 1, 0, 0>, limits = array<i64: 6, 8, 7>, strides = array<i64: 1, 2, 1>} : tensor<6x8x7xT> -> tensor<5x4x7xT>
  %p = tcp.pad %s {low = array<i64: 0, 3, 0>, high = array<i64: 1, 5, 0>, value = -1.5 : f64} : tensor<5x4x7xT> -> tensor<6x12x7xT>
  %t = tcp.transpose %p {permutation = array<i64: 2, 1, 0>} : tensor<6x12x7xT> -> tensor<7x12x6xT>
  %ex = tcp.exp %t : tensor<7x12x6xT>
  %g = tcp.gather %e, %i {axis = 0 : i64} : (tensor<29x7xT>, tensor<6x4xi64>) -> tensor<6x4x7xT>
  %io = tcp.iota {start = -2 : i64, step = 3 : i64} : tensor<7xT>
  %ir = tcp.reshape %io : tensor<7xT> to tensor<1x1x7xT>
  %ib = tcp.broadcast %ir : tensor<1x1x7xT> to tensor<6x4x7xT>
  %ga = tcp.add %g, %ib : tensor<6x4x7xT>
  func.return %ex, %ga : tensor<7x12x6xT>, tensor<6x4x7xT>
}""",
        ints=((3, 29),),
    ),
    Case(
        "reductions",
        ("reduce", "reduce", "reduce"),
        """func.func @forward(%x: tensor<5x9x37xT>) -> (tensor<5x9xT>, tensor<5x1x37xT>, tensor<9xT>) {
  %e = tcp.exp %x : tensor<5x9x37xT>
  %s = tcp.reduce_sum %e {axes = array<i64: 2>, keepdim = false} : tensor<5x9x37xT> -> tensor<5x9xT>
  %r = tcp.rsqrt %s : tensor<5x9xT>
  %m = tcp.reduce_max %x {axes = array<i64: 1>, keepdim = true} : tensor<5x9x37xT> -> tensor<5x1x37xT>
  %a = tcp.abs %x : tensor<5x9x37xT>
  %n = tcp.reduce_mean %a {axes = array<i64: 0, 2>, keepdim = false} : tensor<5x9x37xT> -> tensor<9xT>
  func.return %r, %m, %n : tensor<5x9xT>, tensor<5x1x37xT>, tensor<9xT>
}""",
    ),
    Case(
        "integer_reductions",
        ("reduce", "reduce"),
        """func.func @forward(%i: tensor<7x19xi64>, %x: tensor<7x19xT>) -> (tensor<7xi64>, tensor<19xi1>) {
  %s = tcp.reduce_sum %i {axes = array<i64: 1>, keepdim = false} : tensor<7x19xi64> -> tensor<7xi64>
  %z = tcp.constant {value = 1.0 : f64} : tensor<7x19xT>
  %b = tcp.compare %x, %z {predicate = "gt"} : tensor<7x19xT> -> tensor<7x19xi1>
  %any = tcp.reduce_max %b {axes = array<i64: 0>, keepdim = false} : tensor<7x19xi1> -> tensor<19xi1>
  func.return %s, %any : tensor<7xi64>, tensor<19xi1>
}""",
        ints=((0, 1000),),
    ),
    Case(
        "long_rows",
        ("reduce", "softmax", "layer_norm"),
        """func.func @forward(%x: tensor<3x9000xT>, %w: tensor<9000xT>, %b: tensor<9000xT>) -> (tensor<3xT>, tensor<3x9000xT>, tensor<3x9000xT>) {
  %s = tcp.reduce_sum %x {axes = array<i64: 1>, keepdim = false} : tensor<3x9000xT> -> tensor<3xT>
  %y = tcp.softmax %x {axis = 1 : i64} : tensor<3x9000xT>
  %n = tcp.layer_norm %x, %w, %b {axis = 1 : i64, epsilon = 1.0e-05 : f64} : tensor<3x9000xT>, tensor<9000xT>
  func.return %s, %y, %n : tensor<3xT>, tensor<3x9000xT>, tensor<3x9000xT>
}""",
        looped=True,
    ),
    Case(
        "masked_softmax",
        ("softmax", "softmax"),
        """func.func @forward(%x: tensor<2x3x17x19xT>, %m: tensor<1x1x17x19xi1>) -> (tensor<2x3x17x19xT>, tensor<2x3x17x19xT>) {
  %k = tcp.constant {value = 0.125 : f64} : tensor<2x3x17x19xT>
  %s = tcp.mul %x, %k : tensor<2x3x17x19xT>
  %mb = tcp.broadcast %m : tensor<1x1x17x19xi1> to tensor<2x3x17x19xi1>
  %ninf = tcp.constant {value = 0xFFF0000000000000 : f64} : tensor<2x3x17x19xT>
  %w = tcp.select %mb, %ninf, %s : tensor<2x3x17x19xi1>, tensor<2x3x17x19xT>
  %y = tcp.softmax %w {axis = 3 : i64} : tensor<2x3x17x19xT>
  %z = tcp.softmax %x {axis = 1 : i64} : tensor<2x3x17x19xT>
  %o = tcp.neg %z : tensor<2x3x17x19xT>
  func.return %y, %o : tensor<2x3x17x19xT>, tensor<2x3x17x19xT>
}""",
    ),
    Case(
        "residual_layer_norm",
        ("layer_norm", "layer_norm"),
        """func.func @forward(%x: tensor<1x7x37xT>, %r: tensor<7x37xT>, %w: tensor<37xT>, %b: tensor<37xT>, %w2: tensor<7x37xT>, %b2: tensor<7x37xT>) -> (tensor<1x7x37xT>, tensor<1x7x37xT>, tensor<1x7x37xT>) {
  %rr = tcp.reshape %r : tensor<7x37xT> to tensor<1x7x37xT>
  %a = tcp.add %x, %rr : tensor<1x7x37xT>
  %n = tcp.layer_norm %a, %w, %b {axis = 2 : i64, epsilon = 1.0e-05 : f64} : tensor<1x7x37xT>, tensor<37xT>
  %g = tcp.gelu %n {approximate = "none"} : tensor<1x7x37xT>
  %n2 = tcp.layer_norm %x, %w2, %b2 {axis = 1 : i64, epsilon = 1.0e-06 : f64} : tensor<1x7x37xT>, tensor<7x37xT>
  func.return %a, %g, %n2 : tensor<1x7x37xT>, tensor<1x7x37xT>, tensor<1x7x37xT>
}""",
    ),
    Case(
        "pooling",
        ("pool", "pool", "pool", "reduce"),
        """func.func @forward(%x: tensor<2x3x13x11xT>) -> (tensor<2x3x7x6xT>, tensor<2x3x7x6xT>, tensor<2x3x5x4xT>, tensor<2x3xT>) {
  %r = tcp.clamp %x {min = 0.0 : f64} : tensor<2x3x13x11xT>
  %m = tcp.max_pool2d %r {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, ceil_mode = 0 : i64} : tensor<2x3x13x11xT> -> tensor<2x3x7x6xT>
  %a = tcp.avg_pool2d %x {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, ceil_mode = 0 : i64, count_include_pad = 0 : i64} : tensor<2x3x13x11xT> -> tensor<2x3x7x6xT>
  %a2 = tcp.avg_pool2d %x {kernel = array<i64: 2, 3>, stride = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, ceil_mode = 1 : i64, count_include_pad = 1 : i64} : tensor<2x3x13x11xT> -> tensor<2x3x5x4xT>
  %e = tcp.exp %a2 : tensor<2x3x5x4xT>
  %g = tcp.reduce_mean %x {axes = array<i64: 2, 3>, keepdim = false} : tensor<2x3x13x11xT> -> tensor<2x3xT>
  func.return %m, %a, %e, %g : tensor<2x3x7x6xT>, tensor<2x3x7x6xT>, tensor<2x3x5x4xT>, tensor<2x3xT>
}""",
    ),
    Case(
        "transposes",
        ("transpose", "transpose", "transpose", "transpose"),
        """func.func @forward(%x: tensor<3x5x7x9xT>, %y: tensor<3x5x7x9xT>, %z: tensor<2x67x3x70xT>, %s: tensor<2x3x11x13xT>) -> (tensor<3x7x9x5xT>, tensor<3x9x5x7xf32>, tensor<2x3x70x67xT>, tensor<2x11x13x8xT>) {
  %a = tcp.transpose %x {permutation = array<i64: 0, 2, 3, 1>} : tensor<3x5x7x9xT> -> tensor<3x7x9x5xT>
  %t = tcp.transpose %y {permutation = array<i64: 0, 3, 1, 2>} : tensor<3x5x7x9xT> -> tensor<3x9x5x7xT>
  %r = tcp.clamp %t {min = 0.0 : f64} : tensor<3x9x5x7xT>
  %b = tcp.cast %r : tensor<3x9x5x7xT> to tensor<3x9x5x7xf32>
  %c = tcp.transpose %z {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x67x3x70xT> -> tensor<2x3x70x67xT>
  %st = tcp.transpose %s {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x3x11x13xT> -> tensor<2x11x13x3xT>
  %sp = tcp.pad %st {low = array<i64: 0, 0, 0, 0>, high = array<i64: 0, 0, 0, 5>, value = 0.0 : f64} : tensor<2x11x13x3xT> -> tensor<2x11x13x8xT>
  func.return %a, %b, %c, %sp : tensor<3x7x9x5xT>, tensor<3x9x5x7xf32>, tensor<2x3x70x67xT>, tensor<2x11x13x8xT>
}""",
    ),
    Case(
        "grouped_to_channels_last",
        ("transpose", "transpose"),
        """func.func @forward(%x: tensor<2x4x3x45xT>, %y: tensor<3x2x10x9xT>) -> (tensor<2x5x9x12xT>, tensor<3x9x20xT>) {
  %s = tcp.silu %x : tensor<2x4x3x45xT>
  %r = tcp.reshape %s : tensor<2x4x3x45xT> to tensor<2x12x5x9xT>
  %t = tcp.transpose %r {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x12x5x9xT> -> tensor<2x5x9x12xT>
  %yt = tcp.transpose %y {permutation = array<i64: 0, 3, 1, 2>} : tensor<3x2x10x9xT> -> tensor<3x9x2x10xT>
  %m = tcp.reshape %yt : tensor<3x9x2x10xT> to tensor<3x9x20xT>
  func.return %t, %m : tensor<2x5x9x12xT>, tensor<3x9x20xT>
}""",
    ),
    Case(
        "channels_last",
        ("pool", "pool", "reduce"),
        """func.func @forward(%x: tensor<2x13x11x9xT>, %z: tensor<2x13x11x9xT>, %u: tensor<2x7x5x9xT>) -> (tensor<2x7x6x9xT>, tensor<2x9x7x6xT>, tensor<2x9x1x1xT>) {
  %xt = tcp.transpose %x {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x13x11x9xT> -> tensor<2x9x13x11xT>
  %m = tcp.max_pool2d %xt {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, ceil_mode = 0 : i64} : tensor<2x9x13x11xT> -> tensor<2x9x7x6xT>
  %mt = tcp.transpose %m {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x9x7x6xT> -> tensor<2x7x6x9xT>
  %zt = tcp.transpose %z {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x13x11x9xT> -> tensor<2x9x13x11xT>
  %a = tcp.avg_pool2d %zt {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, ceil_mode = 0 : i64, count_include_pad = 0 : i64} : tensor<2x9x13x11xT> -> tensor<2x9x7x6xT>
  %ut = tcp.transpose %u {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x7x5x9xT> -> tensor<2x9x7x5xT>
  %g = tcp.reduce_mean %ut {axes = array<i64: 2, 3>, keepdim = true} : tensor<2x9x7x5xT> -> tensor<2x9x1x1xT>
  func.return %mt, %a, %g : tensor<2x7x6x9xT>, tensor<2x9x7x6xT>, tensor<2x9x1x1xT>
}""",
    ),
    Case(
        "matmul_epilogue",
        ("matmul", "matmul"),
        """func.func @forward(%a: tensor<33x47xT>, %b: tensor<47x29xT>, %bias: tensor<1x29xT>, %res: tensor<33x29xT>, %q: tensor<3x21x17xT>, %k: tensor<3x19x17xT>) -> (tensor<33x29xT>, tensor<3x21x19xT>) {
  %mm = tcp.matmul %a, %b : (tensor<33x47xT>, tensor<47x29xT>) -> tensor<33x29xT>
  %bb = tcp.broadcast %bias : tensor<1x29xT> to tensor<33x29xT>
  %ad = tcp.add %mm, %bb : tensor<33x29xT>
  %g = tcp.gelu %ad {approximate = "tanh"} : tensor<33x29xT>
  %o = tcp.add %g, %res : tensor<33x29xT>
  %kt = tcp.transpose %k {permutation = array<i64: 0, 2, 1>} : tensor<3x19x17xT> -> tensor<3x17x19xT>
  %bm = tcp.batch_matmul %q, %kt : (tensor<3x21x17xT>, tensor<3x17x19xT>) -> tensor<3x21x19xT>
  %s = tcp.constant {value = 0.25 : f64} : tensor<3x21x19xT>
  %sc = tcp.mul %bm, %s : tensor<3x21x19xT>
  func.return %o, %sc : tensor<33x29xT>, tensor<3x21x19xT>
}""",
    ),
    Case(
        "convolution",
        ("conv2d", "conv2d", "pointwise"),
        """func.func @forward(%x: tensor<2x5x11x9xT>, %w: tensor<7x5x3x3xT>, %bias: tensor<1x7x1x1xT>, %dw: tensor<5x1x3x3xT>, %s: tensor<5xT>, %o: tensor<5xT>, %mu: tensor<5xT>, %v: tensor<5xT>) -> (tensor<2x7x6x5xT>, tensor<2x5x7x8xT>, tensor<2x5x11x9xT>) {
  %c = tcp.conv2d %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x5x11x9xT>, tensor<7x5x3x3xT>) -> tensor<2x7x6x5xT>
  %bb = tcp.broadcast %bias : tensor<1x7x1x1xT> to tensor<2x7x6x5xT>
  %a = tcp.add %c, %bb : tensor<2x7x6x5xT>
  %r = tcp.clamp %a {min = 0.0 : f64, max = 6.0 : f64} : tensor<2x7x6x5xT>
  %d = tcp.conv2d %x, %dw {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 1, 0>, dilation = array<i64: 2, 1>, groups = 5 : i64} : (tensor<2x5x11x9xT>, tensor<5x1x3x3xT>) -> tensor<2x5x7x8xT>
  %v1 = tcp.abs %v : tensor<5xT>
  %bn = tcp.batch_norm %x, %s, %o, %mu, %v1 {epsilon = 1.0e-05 : f64} : tensor<2x5x11x9xT>, tensor<5xT>
  func.return %r, %d, %bn : tensor<2x7x6x5xT>, tensor<2x5x7x8xT>, tensor<2x5x11x9xT>
}""",
    ),
    Case(
        # ResNet's residual 1x1 convolution as a GEMM over contiguous pixels (no bounds
        # test), bias, residual and ReLU in its epilogue; and a batch-1 one on a 1x1 map
        # (a squeeze-excite FC), whose size-1 position variables split nothing
        "pointwise_conv_residual",
        ("conv2d", "conv2d"),
        """func.func @forward(%x: tensor<3x6x5x7xT>, %w: tensor<10x6x1x1xT>, %bias: tensor<1x10x1x1xT>, %res: tensor<3x10x5x7xT>, %z: tensor<1x12x1x1xT>, %w2: tensor<9x12x1x1xT>) -> (tensor<3x10x5x7xT>, tensor<1x9x1x1xT>) {
  %c = tcp.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<3x6x5x7xT>, tensor<10x6x1x1xT>) -> tensor<3x10x5x7xT>
  %bb = tcp.broadcast %bias : tensor<1x10x1x1xT> to tensor<3x10x5x7xT>
  %a = tcp.add %c, %bb : tensor<3x10x5x7xT>
  %s = tcp.add %a, %res : tensor<3x10x5x7xT>
  %r = tcp.clamp %s {min = 0.0 : f64} : tensor<3x10x5x7xT>
  %f = tcp.conv2d %z, %w2 {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x12x1x1xT>, tensor<9x12x1x1xT>) -> tensor<1x9x1x1xT>
  %g = tcp.sigmoid %f : tensor<1x9x1x1xT>
  func.return %r, %g : tensor<3x10x5x7xT>, tensor<1x9x1x1xT>
}""",
    ),
    Case(
        # A ResNet block that changes its width: its 1x1 expansion and the strided 1x1
        # downsample of its input, each with its bias, summed and rectified: one kernel,
        # one K loop over both convolutions' K for one output tile
        "summed_convolutions",
        ("conv2d",),
        SUMMED_BLOCK,
    ),
    Case(
        # The same block with its input rectified on the way into the downsample: that
        # operand's tiles are computed, not loaded as they are, so the two convolutions
        # keep a K loop each
        "summed_convolutions_with_prologue",
        ("conv2d",),
        SUMMED_BLOCK.replace(
            "  %c2 = tcp.conv2d %x,",
            "  %xr = tcp.clamp %x {min = 0.0 : f64} : tensor<2x5x9x9xT>\n  %c2 = tcp.conv2d %xr,",
        ),
    ),
    Case(
        # The block as it runs between channels-last kernels: both 1x1 convolutions (the
        # downsample strided, reading its NHWC input along its channels) hand their
        # results channels-last, each plus its bias, the sum rectified and stored NHWC
        "summed_convolutions_handed_channels_last",
        ("conv2d",),
        """func.func @forward(%y: tensor<2x5x5x6xT>, %x: tensor<2x9x9x12xT>, %w1: tensor<7x6x1x1xT>, %w2: tensor<7x12x1x1xT>, %b1: tensor<1x1x1x7xT>, %b2: tensor<1x1x1x7xT>) -> tensor<2x5x5x7xT> {
  %yt = tcp.transpose %y {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x5x5x6xT> -> tensor<2x6x5x5xT>
  %c1 = tcp.conv2d %yt, %w1 {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x6x5x5xT>, tensor<7x6x1x1xT>) -> tensor<2x7x5x5xT>
  %t1 = tcp.transpose %c1 {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x7x5x5xT> -> tensor<2x5x5x7xT>
  %bb1 = tcp.broadcast %b1 : tensor<1x1x1x7xT> to tensor<2x5x5x7xT>
  %a1 = tcp.add %t1, %bb1 : tensor<2x5x5x7xT>
  %xt = tcp.transpose %x {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x9x9x12xT> -> tensor<2x12x9x9xT>
  %c2 = tcp.conv2d %xt, %w2 {stride = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x12x9x9xT>, tensor<7x12x1x1xT>) -> tensor<2x7x5x5xT>
  %t2 = tcp.transpose %c2 {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x7x5x5xT> -> tensor<2x5x5x7xT>
  %bb2 = tcp.broadcast %b2 : tensor<1x1x1x7xT> to tensor<2x5x5x7xT>
  %a2 = tcp.add %t2, %bb2 : tensor<2x5x5x7xT>
  %s = tcp.add %a1, %a2 : tensor<2x5x5x7xT>
  %r = tcp.clamp %s {min = 0.0 : f64} : tensor<2x5x5x7xT>
  func.return %r : tensor<2x5x5x7xT>
}""",
    ),
    Case(
        # Two summed convolutions as the channels-last passes leave them: a padded 3x3
        # one rectified before the sum, a 1x1 one over an NHWC input, each result
        # transposed to NHWC in the kernel, the sum stored NHWC; and a convolution whose
        # result is also stored alone, which therefore gets a kernel of its own
        "summed_convolutions_channels_last",
        ("conv2d", "conv2d"),
        """func.func @forward(%y: tensor<2x6x5x7xT>, %x: tensor<2x5x7x12xT>, %w1: tensor<9x6x3x3xT>, %w2: tensor<9x12x1x1xT>, %b1: tensor<1x1x1x9xT>, %w3: tensor<9x6x1x1xT>) -> (tensor<2x5x7x9xT>, tensor<2x9x5x7xT>) {
  %c1 = tcp.conv2d %y, %w1 {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x6x5x7xT>, tensor<9x6x3x3xT>) -> tensor<2x9x5x7xT>
  %t1 = tcp.transpose %c1 {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x9x5x7xT> -> tensor<2x5x7x9xT>
  %bb1 = tcp.broadcast %b1 : tensor<1x1x1x9xT> to tensor<2x5x7x9xT>
  %a1 = tcp.add %t1, %bb1 : tensor<2x5x7x9xT>
  %r1 = tcp.clamp %a1 {min = 0.0 : f64} : tensor<2x5x7x9xT>
  %xt = tcp.transpose %x {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x5x7x12xT> -> tensor<2x12x5x7xT>
  %c2 = tcp.conv2d %xt, %w2 {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x12x5x7xT>, tensor<9x12x1x1xT>) -> tensor<2x9x5x7xT>
  %t2 = tcp.transpose %c2 {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x9x5x7xT> -> tensor<2x5x7x9xT>
  %s = tcp.add %r1, %t2 : tensor<2x5x7x9xT>
  %c3 = tcp.conv2d %y, %w3 {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x6x5x7xT>, tensor<9x6x1x1xT>) -> tensor<2x9x5x7xT>
  %t3 = tcp.transpose %c3 {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x9x5x7xT> -> tensor<2x5x7x9xT>
  %s3 = tcp.add %s, %t3 : tensor<2x5x7x9xT>
  func.return %s3, %c3 : tensor<2x5x7x9xT>, tensor<2x9x5x7xT>
}""",
    ),
    Case(
        # ResNet's residual 1x1 convolution between cuDNN ones (triton-channels-last):
        # its NHWC input is also the residual, added after the transpose its bias is
        # computed before, and the sum is stored NHWC
        "pointwise_conv_channels_last_residual",
        ("conv2d",),
        """func.func @forward(%x: tensor<2x5x7x12xT>, %w: tensor<12x12x1x1xT>, %bias: tensor<1x12x1x1xT>) -> tensor<2x5x7x12xT> {
  %t = tcp.transpose %x {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x5x7x12xT> -> tensor<2x12x5x7xT>
  %c = tcp.conv2d %t, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x12x5x7xT>, tensor<12x12x1x1xT>) -> tensor<2x12x5x7xT>
  %bb = tcp.broadcast %bias : tensor<1x12x1x1xT> to tensor<2x12x5x7xT>
  %a = tcp.add %c, %bb : tensor<2x12x5x7xT>
  %an = tcp.transpose %a {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x12x5x7xT> -> tensor<2x5x7x12xT>
  %s = tcp.add %an, %x : tensor<2x5x7x12xT>
  %r = tcp.clamp %s {min = 0.0 : f64} : tensor<2x5x7x12xT>
  func.return %r : tensor<2x5x7x12xT>
}""",
    ),
    Case(
        # 3x3 convolutions reading a channels-last input (a transpose prologue): K runs
        # over (kh, kw, channel); one grouped and strided, one dilated with uneven padding
        "conv_reads_channels_last",
        ("conv2d", "conv2d"),
        """func.func @forward(%x: tensor<2x7x9x6xT>, %w: tensor<8x3x3x3xT>, %w2: tensor<5x6x3x3xT>) -> (tensor<2x8x4x5xT>, tensor<2x5x4x8xT>) {
  %t = tcp.transpose %x {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x7x9x6xT> -> tensor<2x6x7x9xT>
  %c = tcp.conv2d %t, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 2 : i64} : (tensor<2x6x7x9xT>, tensor<8x3x3x3xT>) -> tensor<2x8x4x5xT>
  %r = tcp.clamp %c {min = 0.0 : f64} : tensor<2x8x4x5xT>
  %u = tcp.transpose %x {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x7x9x6xT> -> tensor<2x6x7x9xT>
  %d = tcp.conv2d %u, %w2 {stride = array<i64: 1, 1>, padding = array<i64: 1, 0, 2, 1>, dilation = array<i64: 2, 2>, groups = 1 : i64} : (tensor<2x6x7x9xT>, tensor<5x6x3x3xT>) -> tensor<2x5x4x8xT>
  func.return %r, %d : tensor<2x8x4x5xT>, tensor<2x5x4x8xT>
}""",
    ),
    Case(
        # MobileNetV2's expansion convolution feeding a cuDNN depthwise one: read NHWC,
        # bias and ReLU6, stored NHWC with a residual added after the transpose; and a
        # strided 3x3 one stored with its height and width swapped
        "conv_stores_permuted",
        ("conv2d", "conv2d"),
        """func.func @forward(%x: tensor<2x7x9x5xT>, %w: tensor<11x5x1x1xT>, %bias: tensor<1x11x1x1xT>, %res: tensor<2x7x9x11xT>, %y: tensor<3x5x11x9xT>, %w2: tensor<6x5x3x3xT>) -> (tensor<2x7x9x11xT>, tensor<3x6x5x6xT>) {
  %t = tcp.transpose %x {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x7x9x5xT> -> tensor<2x5x7x9xT>
  %c = tcp.conv2d %t, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x5x7x9xT>, tensor<11x5x1x1xT>) -> tensor<2x11x7x9xT>
  %bb = tcp.broadcast %bias : tensor<1x11x1x1xT> to tensor<2x11x7x9xT>
  %a = tcp.add %c, %bb : tensor<2x11x7x9xT>
  %r = tcp.clamp %a {min = 0.0 : f64, max = 6.0 : f64} : tensor<2x11x7x9xT>
  %rt = tcp.transpose %r {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x11x7x9xT> -> tensor<2x7x9x11xT>
  %s = tcp.add %rt, %res : tensor<2x7x9x11xT>
  %d = tcp.conv2d %y, %w2 {stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<3x5x11x9xT>, tensor<6x5x3x3xT>) -> tensor<3x6x6x5xT>
  %g = tcp.silu %d : tensor<3x6x6x5xT>
  %dt = tcp.transpose %g {permutation = array<i64: 0, 1, 3, 2>} : tensor<3x6x6x5xT> -> tensor<3x6x5x6xT>
  func.return %s, %dt : tensor<2x7x9x11xT>, tensor<3x6x5x6xT>
}""",
    ),
    Case(
        # ConvNeXt's 7x7 depthwise convolution on an NHWC tensor (a transpose prologue) with
        # its bias and GELU, a strided 3x3 one with a channel multiplier of 2 after a ReLU6,
        # and a dilated 3x3 one read straight from its input (offsets hoisted out of the taps)
        "depthwise_direct",
        ("conv2d", "conv2d", "conv2d"),
        """func.func @forward(%x: tensor<2x13x11x6xT>, %w: tensor<6x1x7x7xT>, %bias: tensor<1x6x1x1xT>, %y: tensor<2x3x9x10xT>, %w2: tensor<6x1x3x3xT>, %z: tensor<2x5x10x9xT>, %w3: tensor<5x1x3x3xT>) -> (tensor<2x6x13x11xT>, tensor<2x6x5x5xT>, tensor<2x5x8x9xT>) {
  %t = tcp.transpose %x {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x13x11x6xT> -> tensor<2x6x13x11xT>
  %c = tcp.conv2d %t, %w {stride = array<i64: 1, 1>, padding = array<i64: 3, 3, 3, 3>, dilation = array<i64: 1, 1>, groups = 6 : i64} : (tensor<2x6x13x11xT>, tensor<6x1x7x7xT>) -> tensor<2x6x13x11xT>
  %bb = tcp.broadcast %bias : tensor<1x6x1x1xT> to tensor<2x6x13x11xT>
  %a = tcp.add %c, %bb : tensor<2x6x13x11xT>
  %g = tcp.gelu %a {approximate = "none"} : tensor<2x6x13x11xT>
  %r = tcp.clamp %y {min = 0.0 : f64, max = 6.0 : f64} : tensor<2x3x9x10xT>
  %d = tcp.conv2d %r, %w2 {stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 0>, dilation = array<i64: 1, 1>, groups = 3 : i64} : (tensor<2x3x9x10xT>, tensor<6x1x3x3xT>) -> tensor<2x6x5x5xT>
  %e = tcp.conv2d %z, %w3 {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 2, 2>, dilation = array<i64: 2, 2>, groups = 5 : i64} : (tensor<2x5x10x9xT>, tensor<5x1x3x3xT>) -> tensor<2x5x8x9xT>
  func.return %g, %d, %e : tensor<2x6x13x11xT>, tensor<2x6x5x5xT>, tensor<2x5x8x9xT>
}""",
    ),
    Case(
        "conv_channels_last_then_global_mean",
        ("conv2d", "reduce"),
        # ResNet's last expansion and its global mean: the convolution stores NHWC (its
        # pinned transpose), and the transpose back to NCHW that only the mean reads is
        # the mean's prologue (``fusion.reader_prologue``): rows of contiguous channels.
        """func.func @forward(%x: tensor<2x5x7x9xT>, %w: tensor<11x5x1x1xT>, %bias: tensor<1x1x1x11xT>) -> tensor<2x11x1x1xT> {
  %c = tcp.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x5x7x9xT>, tensor<11x5x1x1xT>) -> tensor<2x11x7x9xT>
  %n = tcp.transpose %c {dnnc.pinned, permutation = array<i64: 0, 2, 3, 1>} : tensor<2x11x7x9xT> -> tensor<2x7x9x11xT>
  %bb = tcp.broadcast %bias : tensor<1x1x1x11xT> to tensor<2x7x9x11xT>
  %a = tcp.add %n, %bb : tensor<2x7x9x11xT>
  %r = tcp.clamp %a {min = 0.0 : f64} : tensor<2x7x9x11xT>
  %t = tcp.transpose %r {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x7x9x11xT> -> tensor<2x11x7x9xT>
  %m = tcp.reduce_mean %t {axes = array<i64: 2, 3>, keepdim = true} : tensor<2x11x7x9xT> -> tensor<2x11x1x1xT>
  func.return %m : tensor<2x11x1x1xT>
}""",
    ),
    Case(
        "reduce_channels_last_mean_with_its_input",
        ("reduce",),
        # MobileNetV3's squeeze-excite pool: a channels-last convolution's output, read
        # along channels, activated, averaged over H x W, and the activation returned NCHW.
        """func.func @forward(%x: tensor<3x5x5x24xT>) -> (tensor<3x24x1x1xT>, tensor<3x24x5x5xT>) {
  %t = tcp.transpose %x {permutation = array<i64: 0, 3, 1, 2>} : tensor<3x5x5x24xT> -> tensor<3x24x5x5xT>
  %h = tcp.clamp %t {min = 0.0 : f64, max = 0.5 : f64} : tensor<3x24x5x5xT>
  %m = tcp.reduce_mean %h {axes = array<i64: 2, 3>, keepdim = true} : tensor<3x24x5x5xT> -> tensor<3x24x1x1xT>
  func.return %m, %h : tensor<3x24x1x1xT>, tensor<3x24x5x5xT>
}""",
    ),
    Case(
        "attention_gqa_head_dim_40",
        ("attention",),
        """func.func @forward(%q: tensor<2x4x37x40xT>, %k: tensor<2x2x45x40xT>, %v: tensor<2x2x45x24xT>) -> tensor<2x4x37x24xT> {
  %a = tcp.attention %q, %k, %v {scale = 0.158 : f64, causal = false} : tensor<2x4x37x40xT>, tensor<2x2x45x40xT>, tensor<2x2x45x24xT> -> tensor<2x4x37x24xT>
  func.return %a : tensor<2x4x37x24xT>
}""",
    ),
    Case(
        "attention_heads_split_bool_mask",
        ("attention", "pointwise"),
        # BERT's layout: heads split from [B, S, H*D] by reshape + transpose (prologue index
        # ops of the kernel), a [B, 1, 1, S] padding mask broadcast (index arithmetic), the
        # output transposed back by a kernel of its own; a fully masked batch row gives zeros.
        """func.func @forward(%x: tensor<2x19x48xT>, %keep: tensor<2x19xi1>) -> tensor<2x19x48xT> {
  %r = tcp.reshape %x : tensor<2x19x48xT> to tensor<2x19x3x16xT>
  %q = tcp.transpose %r {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x19x3x16xT> -> tensor<2x3x19x16xT>
  %m = tcp.reshape %keep : tensor<2x19xi1> to tensor<2x1x1x19xi1>
  %mb = tcp.broadcast %m : tensor<2x1x1x19xi1> to tensor<2x3x19x19xi1>
  %a = tcp.attention %q, %q, %q mask(%mb : tensor<2x3x19x19xi1>) {scale = 0.25 : f64, causal = false} : tensor<2x3x19x16xT>, tensor<2x3x19x16xT>, tensor<2x3x19x16xT> -> tensor<2x3x19x16xT>
  %t = tcp.transpose %a {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x3x19x16xT> -> tensor<2x19x3x16xT>
  %o = tcp.reshape %t : tensor<2x19x3x16xT> to tensor<2x19x48xT>
  func.return %o : tensor<2x19x48xT>
}""",
    ),
    Case(
        "attention_heads_sliced_from_merged_projections",
        ("attention",),
        # One product's columns hold the query, key and value (merge-sibling-products):
        # each is a slice, its heads split by reshape + transpose, all in the prologue.
        """func.func @forward(%x: tensor<19x144xT>) -> tensor<1x3x19x16xT> {
  %q0 = tcp.slice %x {starts = array<i64: 0, 0>, limits = array<i64: 19, 48>, strides = array<i64: 1, 1>} : tensor<19x144xT> -> tensor<19x48xT>
  %k0 = tcp.slice %x {starts = array<i64: 0, 48>, limits = array<i64: 19, 96>, strides = array<i64: 1, 1>} : tensor<19x144xT> -> tensor<19x48xT>
  %v0 = tcp.slice %x {starts = array<i64: 0, 96>, limits = array<i64: 19, 144>, strides = array<i64: 1, 1>} : tensor<19x144xT> -> tensor<19x48xT>
  %qr = tcp.reshape %q0 : tensor<19x48xT> to tensor<1x19x3x16xT>
  %kr = tcp.reshape %k0 : tensor<19x48xT> to tensor<1x19x3x16xT>
  %vr = tcp.reshape %v0 : tensor<19x48xT> to tensor<1x19x3x16xT>
  %q = tcp.transpose %qr {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x19x3x16xT> -> tensor<1x3x19x16xT>
  %k = tcp.transpose %kr {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x19x3x16xT> -> tensor<1x3x19x16xT>
  %v = tcp.transpose %vr {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x19x3x16xT> -> tensor<1x3x19x16xT>
  %a = tcp.attention %q, %k, %v {scale = 0.25 : f64, causal = false} : tensor<1x3x19x16xT>, tensor<1x3x19x16xT>, tensor<1x3x19x16xT> -> tensor<1x3x19x16xT>
  func.return %a : tensor<1x3x19x16xT>
}""",
    ),
    Case(
        "attention_whole_key_blocks_head_dim_8",
        ("attention", "attention"),
        # UNet's head dim of 8, keys a whole number of blocks (no key mask at all), queries
        # not (rows past the end read zeros and are never stored); and the same causal.
        """func.func @forward(%q: tensor<2x2x40x8xT>, %k: tensor<2x2x64x8xT>, %v: tensor<2x2x64x8xT>) -> (tensor<2x2x40x8xT>, tensor<2x2x40x8xT>) {
  %a = tcp.attention %q, %k, %v {scale = 0.354 : f64, causal = false} : tensor<2x2x40x8xT>, tensor<2x2x64x8xT>, tensor<2x2x64x8xT> -> tensor<2x2x40x8xT>
  %c = tcp.attention %q, %k, %v {scale = 0.354 : f64, causal = true} : tensor<2x2x40x8xT>, tensor<2x2x64x8xT>, tensor<2x2x64x8xT> -> tensor<2x2x40x8xT>
  func.return %a, %c : tensor<2x2x40x8xT>, tensor<2x2x40x8xT>
}""",
    ),
    Case(
        "attention_causal_additive_mask_epilogue",
        ("attention",),
        """func.func @forward(%q: tensor<1x2x70x32xT>, %k: tensor<1x2x70x32xT>, %v: tensor<1x2x70x32xT>, %bias: tensor<70x70xT>, %res: tensor<1x2x70x32xT>) -> tensor<1x2x70x32xT> {
  %br = tcp.reshape %bias : tensor<70x70xT> to tensor<1x1x70x70xT>
  %bb = tcp.broadcast %br : tensor<1x1x70x70xT> to tensor<1x2x70x70xT>
  %a = tcp.attention %q, %k, %v mask(%bb : tensor<1x2x70x70xT>) {scale = 0.177 : f64, causal = true} : tensor<1x2x70x32xT>, tensor<1x2x70x32xT>, tensor<1x2x70x32xT> -> tensor<1x2x70x32xT>
  %o = tcp.add %a, %res : tensor<1x2x70x32xT>
  func.return %o : tensor<1x2x70x32xT>
}""",
    ),
    Case(
        "math_ops",
        ("pointwise", "pointwise", "pointwise"),
        # rounding at halfway points and beyond 2^23, trigonometry, log1p / expm1 near 0
        """func.func @forward(%x: tensor<5x37xT>) -> (tensor<5x37xT>, tensor<5x37xT>, tensor<5x37xT>) {
  %s = tcp.constant {value = 2.5 : f64} : tensor<5x37xT>
  %xs = tcp.mul %x, %s : tensor<5x37xT>
  %r = tcp.round %xs : tensor<5x37xT>
  %f = tcp.floor %xs : tensor<5x37xT>
  %c = tcp.ceil %xs : tensor<5x37xT>
  %t = tcp.trunc %xs : tensor<5x37xT>
  %g = tcp.sign %x : tensor<5x37xT>
  %rf = tcp.add %r, %f : tensor<5x37xT>
  %ct = tcp.sub %c, %t : tensor<5x37xT>
  %a = tcp.add %rf, %ct : tensor<5x37xT>
  %o1 = tcp.add %a, %g : tensor<5x37xT>
  %sn = tcp.sin %x : tensor<5x37xT>
  %cs = tcp.cos %x : tensor<5x37xT>
  %tn = tcp.tan %x : tensor<5x37xT>
  %e = tcp.constant {value = 1.0e-03 : f64} : tensor<5x37xT>
  %xe = tcp.mul %x, %e : tensor<5x37xT>
  %l = tcp.log1p %xe : tensor<5x37xT>
  %m = tcp.expm1 %xe : tensor<5x37xT>
  %lm = tcp.add %l, %m : tensor<5x37xT>
  %o2 = tcp.add %sn, %cs : tensor<5x37xT>
  %o3 = tcp.add %tn, %lm : tensor<5x37xT>
  func.return %o1, %o2, %o3 : tensor<5x37xT>, tensor<5x37xT>, tensor<5x37xT>
}""",
    ),
    Case(
        "integer_ops",
        ("pointwise",),
        # floor division and both remainders on negative operands, bitwise ops and shifts
        """func.func @forward(%i: tensor<4x29xi64>, %j: tensor<4x29xi64>, %x: tensor<4x29xT>) -> (tensor<4x29xi64>, tensor<4x29xi64>, tensor<4x29xT>) {
  %five = tcp.constant {value = 5 : i64} : tensor<4x29xi64>
  %n = tcp.sub %i, %five : tensor<4x29xi64>
  %three = tcp.constant {value = 3 : i64} : tensor<4x29xi64>
  %d = tcp.sub %three, %j : tensor<4x29xi64>
  %one = tcp.constant {value = 1 : i64} : tensor<4x29xi64>
  %zero = tcp.constant {value = 0 : i64} : tensor<4x29xi64>
  %isz = tcp.compare %d, %zero {predicate = "eq"} : tensor<4x29xi64> -> tensor<4x29xi1>
  %nz = tcp.select %isz, %one, %d : tensor<4x29xi1>, tensor<4x29xi64>
  %q = tcp.floor_div %n, %nz : tensor<4x29xi64>
  %r = tcp.remainder %n, %nz : tensor<4x29xi64>
  %f = tcp.fmod %n, %nz : tensor<4x29xi64>
  %qr = tcp.add %q, %r : tensor<4x29xi64>
  %o1 = tcp.mul %qr, %f : tensor<4x29xi64>
  %a = tcp.bitwise_and %n, %three : tensor<4x29xi64>
  %b = tcp.bitwise_or %a, %j : tensor<4x29xi64>
  %c = tcp.bitwise_xor %b, %five : tensor<4x29xi64>
  %nt = tcp.bitwise_not %c : tensor<4x29xi64>
  %sl = tcp.shift_left %nt, %one : tensor<4x29xi64>
  %o2 = tcp.shift_right %sl, %three : tensor<4x29xi64>
  %xf = tcp.cast %nz : tensor<4x29xi64> to tensor<4x29xT>
  %fm = tcp.fmod %x, %xf : tensor<4x29xT>
  %rm = tcp.remainder %x, %xf : tensor<4x29xT>
  %fd = tcp.floor_div %x, %xf : tensor<4x29xT>
  %s1 = tcp.add %fm, %rm : tensor<4x29xT>
  %o3 = tcp.add %s1, %fd : tensor<4x29xT>
  func.return %o1, %o2, %o3 : tensor<4x29xi64>, tensor<4x29xi64>, tensor<4x29xT>
}""",
        ints=((0, 11), (1, 7)),
    ),
    Case(
        "take_along_scatter_flip",
        ("pointwise", "pointwise"),
        # torch.gather, a scatter that replaces and one that adds (duplicate indices along
        # the axis: the last write wins, the sums add up), a flip as a gather by a
        # descending iota; the scatters' indices are narrower than the input off the axis
        """func.func @forward(%x: tensor<3x17xT>, %i: tensor<3x9xi64>, %u: tensor<2x9xT>) -> (tensor<3x9xT>, tensor<3x17xT>) {
  %t = tcp.take_along %x, %i {axis = 1 : i64} : (tensor<3x17xT>, tensor<3x9xi64>) -> tensor<3x9xT>
  %rev = tcp.iota {start = 16 : i64, step = -1 : i64} : tensor<17xi64>
  %fl = tcp.gather %x, %rev {axis = 1 : i64} : (tensor<3x17xT>, tensor<17xi64>) -> tensor<3x17xT>
  %ii = tcp.slice %i {starts = array<i64: 0, 0>, limits = array<i64: 2, 9>, strides = array<i64: 1, 1>} : tensor<3x9xi64> -> tensor<2x9xi64>
  %s1 = tcp.scatter %fl, %ii, %u {axis = 1 : i64, mode = "replace"} : (tensor<3x17xT>, tensor<2x9xi64>, tensor<2x9xT>) -> tensor<3x17xT>
  %s2 = tcp.scatter %s1, %ii, %u {axis = 1 : i64, mode = "add"} : (tensor<3x17xT>, tensor<2x9xi64>, tensor<2x9xT>) -> tensor<3x17xT>
  func.return %t, %s2 : tensor<3x9xT>, tensor<3x17xT>
}""",
        ints=((1, 17),),
    ),
    Case(
        "scan_rms_norm_arg_extremes",
        ("scan", "scan", "rms_norm", "reduce", "reduce", "reduce", "reduce"),
        # running sums along the last axis and (integers) along the first; RMS norm with a
        # residual add on the way in; argmax/argmin with NaNs (sqrt of negatives: the first
        # NaN wins) and with integer ties (the first index wins)
        """func.func @forward(%x: tensor<5x37xT>, %i: tensor<5x37xi64>, %w: tensor<37xT>, %res: tensor<5x37xT>) -> (tensor<5x37xT>, tensor<5x37xi64>, tensor<5x37xT>, tensor<5x37xT>, tensor<5xi64>, tensor<1x37xi64>, tensor<5xi64>, tensor<37xi64>) {
  %c = tcp.cumsum %x {axis = 1 : i64} : tensor<5x37xT> -> tensor<5x37xT>
  %ci = tcp.cumsum %i {axis = 0 : i64} : tensor<5x37xi64> -> tensor<5x37xi64>
  %h = tcp.add %x, %res : tensor<5x37xT>
  %r = tcp.rms_norm %h, %w {axis = 1 : i64, epsilon = 1.0e-06 : f64} : tensor<5x37xT>, tensor<37xT>
  %sq = tcp.sqrt %x : tensor<5x37xT>
  %am = tcp.argmax %sq {axis = 1 : i64, keepdim = false} : tensor<5x37xT> -> tensor<5xi64>
  %an = tcp.argmin %x {axis = 0 : i64, keepdim = true} : tensor<5x37xT> -> tensor<1x37xi64>
  %ai = tcp.argmax %i {axis = 1 : i64, keepdim = false} : tensor<5x37xi64> -> tensor<5xi64>
  %aj = tcp.argmin %i {axis = 0 : i64, keepdim = false} : tensor<5x37xi64> -> tensor<37xi64>
  func.return %c, %ci, %h, %r, %am, %an, %ai, %aj : tensor<5x37xT>, tensor<5x37xi64>, tensor<5x37xT>, tensor<5x37xT>, tensor<5xi64>, tensor<1x37xi64>, tensor<5xi64>, tensor<37xi64>
}""",
    ),
    Case(
        "topk_and_sort",
        ("pointwise", "topk", "topk", "topk"),
        # top-3 with NaNs (they rank first), a whole-row ascending sort (NaNs last), and
        # integer top-4 with ties (in index order), along the first axis. The ranked values
        # are exact in every type (x, or NaN where x < 0): an index order must not hang on
        # how a kernel rounds (Triton's interpreter truncates to bfloat16).
        """func.func @forward(%x: tensor<4x23xT>, %i: tensor<9x6xi64>) -> (tensor<4x3xT>, tensor<4x3xi64>, tensor<4x23xT>, tensor<4x23xi64>, tensor<4x6xi64>) {
  %root = tcp.sqrt %x : tensor<4x23xT>
  %nan = tcp.sub %root, %root : tensor<4x23xT>
  %sq = tcp.add %nan, %x : tensor<4x23xT>
  %v, %k = tcp.topk %sq {k = 3 : i64, axis = 1 : i64, largest = true} : tensor<4x23xT> -> tensor<4x3xT>, tensor<4x3xi64>
  %sv, %sk = tcp.topk %sq {k = 23 : i64, axis = 1 : i64, largest = false} : tensor<4x23xT> -> tensor<4x23xT>, tensor<4x23xi64>
  %iv, %ik = tcp.topk %i {k = 4 : i64, axis = 0 : i64, largest = true} : tensor<9x6xi64> -> tensor<4x6xi64>, tensor<4x6xi64>
  func.return %v, %k, %sv, %sk, %ik : tensor<4x3xT>, tensor<4x3xi64>, tensor<4x23xT>, tensor<4x23xi64>, tensor<4x6xi64>
}""",
    ),
    Case(
        "long_row_selections",
        ("scan", "topk", "reduce", "rms_norm"),
        """func.func @forward(%x: tensor<2x9000xT>, %w: tensor<9000xT>) -> (tensor<2x9000xT>, tensor<2x2xT>, tensor<2x2xi64>, tensor<2xi64>, tensor<2x9000xT>) {
  %c = tcp.cumsum %x {axis = 1 : i64} : tensor<2x9000xT> -> tensor<2x9000xT>
  %v, %k = tcp.topk %x {k = 2 : i64, axis = 1 : i64, largest = false} : tensor<2x9000xT> -> tensor<2x2xT>, tensor<2x2xi64>
  %a = tcp.argmax %x {axis = 1 : i64, keepdim = false} : tensor<2x9000xT> -> tensor<2xi64>
  %r = tcp.rms_norm %x, %w {axis = 1 : i64, epsilon = 1.0e-05 : f64} : tensor<2x9000xT>, tensor<9000xT>
  func.return %c, %v, %k, %a, %r : tensor<2x9000xT>, tensor<2x2xT>, tensor<2x2xi64>, tensor<2xi64>, tensor<2x9000xT>
}""",
        looped=True,
    ),
]

KIND_CASES = {kind for case in CASES for kind in case.kinds}
