// RUN: %dnnc opt %s -p cudnn-group | %filecheck %s
// RUN: %dnnc opt %s -p "cudnn-group{epilogues=false}" | %filecheck %s --check-prefix=ROOTS
// RUN: %dnnc opt %s -p "cudnn-group{depthwise-epilogues=true}" | %filecheck %s --check-prefix=DWFUSED

// Convolution, bias (a broadcast [1, C, 1, 1] moves into the group) and ReLU (a
// clamp at 0) are one graph; the kind names the steps.
// CHECK-LABEL: func.func @conv_bias_relu
// CHECK-SAME:    (%[[X:.*]]: tensor<1x3x8x8xf32>)
// CHECK-NEXT:    %[[W:.*]] = tcp.param @conv.weight
// CHECK-NEXT:    %[[B:.*]] = tcp.param @conv.bias
// CHECK-NEXT:    %[[G:.*]] = tcp.isolated_group(%[[X]], %[[W]], %[[B]]) {backend = "cudnn", kind = "conv_bias_relu"}
// CHECK-NEXT:    ^bb0(%[[XA:.*]]: tensor<1x3x8x8xf32>, %[[WA:.*]]: tensor<4x3x3x3xf32>, %[[BA:.*]]: tensor<1x4x1x1xf32>):
// CHECK-NEXT:      %[[C:.*]] = tcp.conv2d %[[XA]], %[[WA]]
// CHECK-NEXT:      %[[BB:.*]] = tcp.broadcast %[[BA]] : tensor<1x4x1x1xf32> to tensor<1x4x8x8xf32>
// CHECK-NEXT:      %[[A:.*]] = tcp.add %[[C]], %[[BB]]
// CHECK-NEXT:      %[[R:.*]] = tcp.clamp %[[A]] {min = 0.000000e+00 : f64}
// CHECK-NEXT:      tcp.yield %[[R]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[G]]
// ROOTS-LABEL: func.func @conv_bias_relu
// ROOTS:         %[[G:.*]] = tcp.isolated_group({{.*}}) {backend = "cudnn", kind = "conv"}
// ROOTS-NEXT:    ^bb0
// ROOTS-NEXT:      tcp.conv2d
// ROOTS-NEXT:      tcp.yield
// ROOTS-NEXT:    }
// ROOTS-NEXT:    tcp.param @conv.bias
// ROOTS-NEXT:    %[[BB:.*]] = tcp.broadcast
// ROOTS-NEXT:    %[[A:.*]] = tcp.add %[[G]], %[[BB]]
// ROOTS-NEXT:    tcp.clamp %[[A]]
func.func @conv_bias_relu(%x: tensor<1x3x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %w = tcp.param @conv.weight : tensor<4x3x3x3xf32>
  %c = tcp.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %b = tcp.param @conv.bias : tensor<1x4x1x1xf32>
  %bb = tcp.broadcast %b : tensor<1x4x1x1xf32> to tensor<1x4x8x8xf32>
  %a = tcp.add %c, %bb : tensor<1x4x8x8xf32>
  %r = tcp.clamp %a {min = 0.000000e+00 : f64} : tensor<1x4x8x8xf32>
  func.return %r : tensor<1x4x8x8xf32>
}

// A residual add (the other operand is no broadcast) is "add", not "bias"; the
// residual is captured.
// CHECK-LABEL: func.func @conv_bias_residual_relu
// CHECK-SAME:    (%[[X:.*]]: tensor<2x8x6x6xf16>, %[[RES:.*]]: tensor<2x8x6x6xf16>)
// CHECK:         %[[G:.*]] = tcp.isolated_group(%[[X]], %{{.*}}, %{{.*}}, %[[RES]]) {backend = "cudnn", kind = "conv_bias_add_relu"}
// CHECK:           tcp.conv2d
// CHECK-NEXT:      tcp.broadcast
// CHECK-NEXT:      tcp.add
// CHECK-NEXT:      tcp.add
// CHECK-NEXT:      tcp.clamp
// CHECK-NEXT:      tcp.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[G]]
func.func @conv_bias_residual_relu(%x: tensor<2x8x6x6xf16>, %res: tensor<2x8x6x6xf16>) -> tensor<2x8x6x6xf16> {
  %w = tcp.param @w : tensor<8x8x1x1xf16>
  %c = tcp.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x8x6x6xf16>, tensor<8x8x1x1xf16>) -> tensor<2x8x6x6xf16>
  %b = tcp.param @b : tensor<1x8x1x1xf16>
  %bb = tcp.broadcast %b : tensor<1x8x1x1xf16> to tensor<2x8x6x6xf16>
  %a = tcp.add %c, %bb : tensor<2x8x6x6xf16>
  %s = tcp.add %res, %a : tensor<2x8x6x6xf16>
  %r = tcp.clamp %s {min = 0.000000e+00 : f64} : tensor<2x8x6x6xf16>
  func.return %r : tensor<2x8x6x6xf16>
}

// Linear layer: matmul, bias, exact GELU.
// CHECK-LABEL: func.func @matmul_bias_gelu
// CHECK:         %[[G:.*]] = tcp.isolated_group(%x, %{{.*}}, %{{.*}}) {backend = "cudnn", kind = "matmul_bias_gelu"}
// CHECK:           tcp.matmul
// CHECK-NEXT:      tcp.broadcast {{.*}} : tensor<1x16xf32> to tensor<8x16xf32>
// CHECK-NEXT:      tcp.add
// CHECK-NEXT:      tcp.gelu {{.*}} {approximate = "none"}
// CHECK-NEXT:      tcp.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[G]]
// ROOTS-LABEL: func.func @matmul_bias_gelu
// ROOTS:         kind = "matmul"}
// ROOTS:         tcp.gelu
func.func @matmul_bias_gelu(%x: tensor<8x32xf32>) -> tensor<8x16xf32> {
  %w = tcp.param @fc.weight : tensor<32x16xf32>
  %mm = tcp.matmul %x, %w : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  %b = tcp.param @fc.bias : tensor<1x16xf32>
  %bb = tcp.broadcast %b : tensor<1x16xf32> to tensor<8x16xf32>
  %a = tcp.add %mm, %bb : tensor<8x16xf32>
  %g = tcp.gelu %a {approximate = "none"} : tensor<8x16xf32>
  func.return %g : tensor<8x16xf32>
}

// Batched matmuls are roots too; the tanh GELU is its own mode, a scale by a
// captured tensor is "mul".
// CHECK-LABEL: func.func @batch_matmul_scale_gelu_tanh
// CHECK:         tcp.isolated_group(%a, %b, %s) {backend = "cudnn", kind = "matmul_mul_gelu_approx_tanh"}
// CHECK:           tcp.batch_matmul
// CHECK-NEXT:      tcp.mul
// CHECK-NEXT:      tcp.gelu {{.*}} {approximate = "tanh"}
// CHECK-NEXT:      tcp.yield
func.func @batch_matmul_scale_gelu_tanh(%a: tensor<3x4x5xbf16>, %b: tensor<3x5x6xbf16>, %s: tensor<3x4x6xbf16>) -> tensor<3x4x6xbf16> {
  %mm = tcp.batch_matmul %a, %b : (tensor<3x4x5xbf16>, tensor<3x5x6xbf16>) -> tensor<3x4x6xbf16>
  %m = tcp.mul %mm, %s : tensor<3x4x6xbf16>
  %g = tcp.gelu %m {approximate = "tanh"} : tensor<3x4x6xbf16>
  func.return %g : tensor<3x4x6xbf16>
}

// A layer norm over the last dim is a graph of its own: nothing joins it.
// CHECK-LABEL: func.func @layer_norm
// CHECK:         %[[G:.*]] = tcp.isolated_group(%x, %{{.*}}, %{{.*}}) {backend = "cudnn", kind = "layernorm"}
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tcp.layer_norm
// CHECK-NEXT:      tcp.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[R:.*]] = tcp.clamp %[[G]]
// CHECK-NEXT:    func.return %[[R]]
func.func @layer_norm(%x: tensor<2x5x16xf32>) -> tensor<2x5x16xf32> {
  %lw = tcp.param @ln.weight : tensor<16xf32>
  %lb = tcp.param @ln.bias : tensor<16xf32>
  %n = tcp.layer_norm %x, %lw, %lb {axis = 2 : i64, epsilon = 1.0e-05 : f64} : tensor<2x5x16xf32>, tensor<16xf32>
  %r = tcp.clamp %n {min = 0.000000e+00 : f64} : tensor<2x5x16xf32>
  func.return %r : tensor<2x5x16xf32>
}

// A layer norm over more than the last dim is not cuDNN's.
// CHECK-LABEL: func.func @layer_norm_two_dims
// CHECK-NOT:     tcp.isolated_group
// CHECK:         tcp.layer_norm
func.func @layer_norm_two_dims(%x: tensor<2x5x16xf32>) -> tensor<2x5x16xf32> {
  %lw = tcp.param @ln2.weight : tensor<5x16xf32>
  %lb = tcp.param @ln2.bias : tensor<5x16xf32>
  %n = tcp.layer_norm %x, %lw, %lb {axis = 1 : i64, epsilon = 1.0e-05 : f64} : tensor<2x5x16xf32>, tensor<5x16xf32>
  func.return %n : tensor<2x5x16xf32>
}

// The chain stops at a value with two users: the bias add is the group's output,
// the relu and the second user stay outside.
// CHECK-LABEL: func.func @two_users
// CHECK:         %[[G:.*]] = tcp.isolated_group({{.*}}) {backend = "cudnn", kind = "conv_bias"}
// CHECK:           tcp.add
// CHECK-NEXT:      tcp.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[R:.*]] = tcp.clamp %[[G]]
// CHECK-NEXT:    %[[S:.*]] = tcp.sigmoid %[[G]]
// CHECK-NEXT:    func.return %[[R]], %[[S]]
func.func @two_users(%x: tensor<1x3x8x8xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) {
  %w = tcp.param @w2 : tensor<4x3x3x3xf32>
  %c = tcp.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %b = tcp.param @b2 : tensor<1x4x1x1xf32>
  %bb = tcp.broadcast %b : tensor<1x4x1x1xf32> to tensor<1x4x8x8xf32>
  %a = tcp.add %c, %bb : tensor<1x4x8x8xf32>
  %r = tcp.clamp %a {min = 0.000000e+00 : f64} : tensor<1x4x8x8xf32>
  %s = tcp.sigmoid %a : tensor<1x4x8x8xf32>
  func.return %r, %s : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
}

// A cast ends the graph (its outputs have one element type); a clamp that is no
// relu (lower bound not 0) and a pointwise op *before* the convolution stay out:
// the sigmoid is captured as the group's input.
// CHECK-LABEL: func.func @stops
// CHECK:         %[[P:.*]] = tcp.sigmoid %x
// CHECK-NEXT:    %[[W:.*]] = tcp.param @w3
// CHECK-NEXT:    %[[G:.*]] = tcp.isolated_group(%[[P]], %[[W]]) {backend = "cudnn", kind = "conv"}
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tcp.conv2d
// CHECK-NEXT:      tcp.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[CAST:.*]] = tcp.cast %[[G]] : tensor<1x4x8x8xf32> to tensor<1x4x8x8xf16>
// CHECK-NEXT:    %[[G2:.*]] = tcp.isolated_group(%[[P]], %[[W]]) {backend = "cudnn", kind = "conv"}
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tcp.conv2d
// CHECK-NEXT:      tcp.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[CL:.*]] = tcp.clamp %[[G2]] {min = -1.000000e+00 : f64, max = 1.000000e+00 : f64}
// CHECK-NEXT:    func.return %[[CAST]], %[[CL]]
func.func @stops(%x: tensor<1x3x8x8xf32>) -> (tensor<1x4x8x8xf16>, tensor<1x4x8x8xf32>) {
  %p = tcp.sigmoid %x : tensor<1x3x8x8xf32>
  %w = tcp.param @w3 : tensor<4x3x3x3xf32>
  %c = tcp.conv2d %p, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %h = tcp.cast %c : tensor<1x4x8x8xf32> to tensor<1x4x8x8xf16>
  %c2 = tcp.conv2d %p, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %cl = tcp.clamp %c2 {min = -1.000000e+00 : f64, max = 1.000000e+00 : f64} : tensor<1x4x8x8xf32>
  func.return %h, %cl : tensor<1x4x8x8xf16>, tensor<1x4x8x8xf32>
}

// groups = 2 of 4 channels is refused (left to codegen); depthwise (groups = C) is
// taken bare, its ReLU6 (a clamp [0, 6]) left outside the graph (cuDNN's fused
// depthwise plans are slow); asked for, the clamp joins the graph.
// CHECK-LABEL: func.func @grouped_and_depthwise
// CHECK-NEXT:    %[[W:.*]] = tcp.param @grouped.weight
// CHECK-NEXT:    %[[C:.*]] = tcp.conv2d %x, %[[W]] {{.*}} groups = 2 : i64}
// CHECK-NOT:     kind = "conv_relu"}
// CHECK:         %[[D:.*]] = tcp.isolated_group(%[[C]], %{{.*}}) {backend = "cudnn", kind = "conv"}
// CHECK:           tcp.conv2d {{.*}} groups = 4 : i64}
// CHECK-NEXT:      tcp.yield
// CHECK:         tcp.clamp %[[D]] {min = 0.000000e+00 : f64, max = 6.000000e+00 : f64}
// DWFUSED-LABEL: func.func @grouped_and_depthwise
// DWFUSED:         tcp.isolated_group(%{{.*}}, %{{.*}}) {backend = "cudnn", kind = "conv_relu"}
// DWFUSED:           tcp.conv2d {{.*}} groups = 4 : i64}
// DWFUSED-NEXT:      tcp.clamp {{.*}} {min = 0.000000e+00 : f64, max = 6.000000e+00 : f64}
func.func @grouped_and_depthwise(%x: tensor<1x4x6x6xf32>) -> tensor<1x8x6x6xf32> {
  %w = tcp.param @grouped.weight : tensor<4x2x3x3xf32>
  %c = tcp.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x4x6x6xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  %dw = tcp.param @dw.weight : tensor<8x1x3x3xf32>
  %d = tcp.conv2d %c, %dw {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 4 : i64} : (tensor<1x4x6x6xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x6x6xf32>
  %r = tcp.clamp %d {min = 0.000000e+00 : f64, max = 6.000000e+00 : f64} : tensor<1x8x6x6xf32>
  func.return %r : tensor<1x8x6x6xf32>
}

// A convolution of a 1x1 map (a squeeze-excite block) is a small matrix product: it
// stays for code generation. A side operand broadcast over H and W but not over the
// batch (a per-sample time embedding) ends the epilogue before it.
// CHECK-LABEL: func.func @squeeze_excite_and_per_sample_bias
// CHECK-NOT:     kind = "conv
// CHECK:         tcp.conv2d %p
// CHECK:         %[[G:.*]] = tcp.isolated_group({{.*}}) {backend = "cudnn", kind = "conv_bias"}
// CHECK:         tcp.add %[[G]], %tb
func.func @squeeze_excite_and_per_sample_bias(%p: tensor<2x16x1x1xf16>, %w1: tensor<4x16x1x1xf16>, %x: tensor<2x8x6x6xf16>, %w2: tensor<8x8x3x3xf16>, %b: tensor<1x8x1x1xf16>, %t: tensor<2x8x1x1xf16>) -> (tensor<2x4x1x1xf16>, tensor<2x8x6x6xf16>) {
  %se = tcp.conv2d %p, %w1 {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x16x1x1xf16>, tensor<4x16x1x1xf16>) -> tensor<2x4x1x1xf16>
  %c = tcp.conv2d %x, %w2 {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x8x6x6xf16>, tensor<8x8x3x3xf16>) -> tensor<2x8x6x6xf16>
  %bb = tcp.broadcast %b : tensor<1x8x1x1xf16> to tensor<2x8x6x6xf16>
  %cb = tcp.add %c, %bb : tensor<2x8x6x6xf16>
  %tb = tcp.broadcast %t : tensor<2x8x1x1xf16> to tensor<2x8x6x6xf16>
  %y = tcp.add %cb, %tb : tensor<2x8x6x6xf16>
  func.return %se, %y : tensor<2x4x1x1xf16>, tensor<2x8x6x6xf16>
}
