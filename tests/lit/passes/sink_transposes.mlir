// RUN: %dnnc opt %s -p sink-transposes,simplify-shapes,dce | %filecheck %s

// A channels-last epilogue between two NCHW convolutions, as JAX's NHWC programs
// import: the transposes move below the bias add and the ReLU and cancel; the bias
// broadcast is taken to NCHW (a reshape of the parameter, for fold-params).
// CHECK-LABEL: func.func @nhwc_epilogue
// CHECK-NOT:     tcp.transpose
// CHECK:         %[[C:.*]] = tcp.conv2d
// CHECK:         %[[B:.*]] = tcp.param @b : tensor<1x1x1x8xf32>
// CHECK-NEXT:    %[[R:.*]] = tcp.reshape %[[B]] : tensor<1x1x1x8xf32> to tensor<1x8x1x1xf32>
// CHECK-NEXT:    %[[BB:.*]] = tcp.broadcast %[[R]] : tensor<1x8x1x1xf32> to tensor<2x8x5x5xf32>
// CHECK-NEXT:    %[[A:.*]] = tcp.add %[[C]], %[[BB]] : tensor<2x8x5x5xf32>
// CHECK-NEXT:    %[[RELU:.*]] = tcp.clamp %[[A]] {min = 0.000000e+00 : f64} : tensor<2x8x5x5xf32>
// CHECK-NEXT:    tcp.conv2d %[[RELU]]
// CHECK-NOT:     tcp.transpose
func.func @nhwc_epilogue(%x: tensor<2x3x5x5xf32>) -> tensor<2x8x5x5xf32> {
  %w0 = tcp.param @w0 : tensor<8x3x1x1xf32>
  %w1 = tcp.param @w1 : tensor<8x8x1x1xf32>
  %c = tcp.conv2d %x, %w0 {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x3x5x5xf32>, tensor<8x3x1x1xf32>) -> tensor<2x8x5x5xf32>
  %t = tcp.transpose %c {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x8x5x5xf32> -> tensor<2x5x5x8xf32>
  %b = tcp.param @b : tensor<1x1x1x8xf32>
  %bb = tcp.broadcast %b : tensor<1x1x1x8xf32> to tensor<2x5x5x8xf32>
  %a = tcp.add %t, %bb : tensor<2x5x5x8xf32>
  %r = tcp.clamp %a {min = 0.0 : f64} : tensor<2x5x5x8xf32>
  %back = tcp.transpose %r {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x5x5x8xf32> -> tensor<2x8x5x5xf32>
  %y = tcp.conv2d %back, %w1 {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x8x5x5xf32>, tensor<8x8x1x1xf32>) -> tensor<2x8x5x5xf32>
  func.return %y : tensor<2x8x5x5xf32>
}

// Runtime operands in two layouts: moving the transpose would add one, so nothing moves.
// CHECK-LABEL: func.func @mixed_layouts
// CHECK:         %[[T:.*]] = tcp.transpose %x
// CHECK-NEXT:    tcp.add %[[T]], %y
func.func @mixed_layouts(%x: tensor<2x3xf32>, %y: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %t = tcp.transpose %x {permutation = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  %a = tcp.add %t, %y : tensor<3x2xf32>
  func.return %a : tensor<3x2xf32>
}

// Two operands transposed alike: one transpose after the op instead of two before it.
// CHECK-LABEL: func.func @same_layouts
// CHECK-NEXT:    %[[M:.*]] = tcp.mul %x, %y : tensor<2x3xf32>
// CHECK-NEXT:    %[[T:.*]] = tcp.transpose %[[M]] {permutation = array<i64: 1, 0>}
// CHECK-NEXT:    func.return %[[T]]
func.func @same_layouts(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %tx = tcp.transpose %x {permutation = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  %ty = tcp.transpose %y {permutation = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  %m = tcp.mul %tx, %ty : tensor<3x2xf32>
  func.return %m : tensor<3x2xf32>
}
