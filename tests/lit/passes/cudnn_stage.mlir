// RUN: %dnnc opt %s -p "cudnn-group,assign-layouts,sink-transposes,simplify-shapes,fold-params{max-growth=3.0},dce,lower-cudnn" --random-params | %filecheck %s

// The whole cuDNN stage (dnnc.pipeline.CUDNN_STAGE) on two convolutions and a linear
// head: the weights are stored KRSC (descriptors [K, C, R, S] with channels-last
// strides), the second graph reads the first one's NHWC result directly (once, for the
// convolution and the residual), and the only transposes left are the program input's
// and the one before the mean. The linear weight was transposed at compile time.
// CHECK-LABEL: func.func @net
// CHECK-SAME:    (%[[X:.*]]: tensor<1x3x6x6xf32>)
// CHECK-NOT:     tcp.isolated_group
// CHECK-DAG:     %[[XT:.*]] = tcp.transpose %[[X]] {permutation = array<i64: 0, 2, 3, 1>} : tensor<1x3x6x6xf32> -> tensor<1x6x6x3xf32>
// CHECK-DAG:     %[[W1:.*]] = tcp.param @c1.weight.folded : tensor<8x3x3x3xf32>
// CHECK-DAG:     %[[B1:.*]] = tcp.param @c1.bias : tensor<1x8x1x1xf32>
// CHECK:         %[[G1:.*]] = cudnn.graph(%[[XT]], %[[W1]], %[[B1]]) {kind = "conv_bias_relu", result_strides = [strided<[288, 1, 48, 8]>]} : (tensor<1x6x6x3xf32>, tensor<8x3x3x3xf32>, tensor<1x8x1x1xf32>) -> tensor<1x6x6x8xf32> {
// CHECK-NEXT:    ^bb0(%{{.*}}: tensor<1x3x6x6xf32, strided<[108, 1, 18, 3]>>, %{{.*}}: tensor<8x3x3x3xf32, strided<[27, 1, 9, 3]>>, %{{.*}}: tensor<1x8x1x1xf32, strided<[8, 1, 1, 1]>>):
// CHECK-NEXT:      cudnn.conv_fprop
// CHECK-NEXT:      cudnn.pointwise {{.*}} {mode = "add"}
// CHECK-NEXT:      cudnn.pointwise {{.*}} {mode = "relu"}
// CHECK-NEXT:      cudnn.return
// CHECK-NEXT:    }
// CHECK-NOT:     tcp.transpose
// CHECK:         %[[W2:.*]] = tcp.param @c2.weight.folded : tensor<8x3x3x8xf32>
// CHECK-NEXT:    %[[G2:.*]] = cudnn.graph(%[[G1]], %[[W2]], %{{.*}}) {kind = "conv_bias_add_relu", result_strides = [strided<[288, 1, 48, 8]>]}
// CHECK-NEXT:    ^bb0(%[[IN:[a-z0-9_]+]]: tensor<1x8x6x6xf32, strided<[288, 1, 48, 8]>>, %[[WD:[a-z0-9_]+]]: tensor<8x8x3x3xf32, strided<[72, 1, 24, 8]>>, %{{.*}}: tensor<1x8x1x1xf32, strided<[8, 1, 1, 1]>>):
// CHECK-NEXT:      cudnn.conv_fprop %[[IN]], %[[WD]]
// CHECK-NEXT:      cudnn.pointwise {{.*}} {mode = "add"}
// CHECK-NEXT:      cudnn.pointwise %{{.*}}, %[[IN]] {mode = "add"}
// CHECK-NEXT:      cudnn.pointwise {{.*}} {mode = "relu"}
// CHECK:         cudnn.return
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[N:.*]] = tcp.transpose %[[G2]] {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT:    %[[M:.*]] = tcp.reduce_mean %[[N]]
// CHECK-NOT:     tcp.transpose
// CHECK:         %[[FW:.*]] = tcp.param @fc.weight.folded : tensor<8x4xf32>
// CHECK:         cudnn.graph(%[[M]], %[[FW]], %{{.*}}) {kind = "matmul_add", result_strides = [strided<[4, 4, 1]>]}
// CHECK-NEXT:    ^bb0(%{{.*}}: tensor<1x1x8xf32, strided<[8, 8, 1]>>, %{{.*}}: tensor<1x8x4xf32, strided<[32, 4, 1]>>, %{{.*}}: tensor<1x1x4xf32, strided<[4, 4, 1]>>):
// CHECK-NOT:     tcp.
// CHECK:         func.return
func.func @net(%x: tensor<1x3x6x6xf32>) -> tensor<1x4xf32> {
  %w1 = tcp.param @c1.weight : tensor<8x3x3x3xf32>
  %c1 = tcp.conv2d %x, %w1 {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x6x6xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x6x6xf32>
  %b1 = tcp.param @c1.bias : tensor<1x8x1x1xf32>
  %bb1 = tcp.broadcast %b1 : tensor<1x8x1x1xf32> to tensor<1x8x6x6xf32>
  %a1 = tcp.add %c1, %bb1 : tensor<1x8x6x6xf32>
  %r1 = tcp.clamp %a1 {min = 0.000000e+00 : f64} : tensor<1x8x6x6xf32>
  %w2 = tcp.param @c2.weight : tensor<8x8x3x3xf32>
  %c2 = tcp.conv2d %r1, %w2 {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x6x6xf32>
  %b2 = tcp.param @c2.bias : tensor<1x8x1x1xf32>
  %bb2 = tcp.broadcast %b2 : tensor<1x8x1x1xf32> to tensor<1x8x6x6xf32>
  %a2 = tcp.add %c2, %bb2 : tensor<1x8x6x6xf32>
  %s = tcp.add %a2, %r1 : tensor<1x8x6x6xf32>
  %r2 = tcp.clamp %s {min = 0.000000e+00 : f64} : tensor<1x8x6x6xf32>
  %m = tcp.reduce_mean %r2 {axes = array<i64: 2, 3>, keepdim = false} : tensor<1x8x6x6xf32> -> tensor<1x8xf32>
  %fw = tcp.param @fc.weight : tensor<4x8xf32>
  %fwt = tcp.transpose %fw {permutation = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
  %mm = tcp.matmul %m, %fwt : (tensor<1x8xf32>, tensor<8x4xf32>) -> tensor<1x4xf32>
  %fb = tcp.param @fc.bias : tensor<1x4xf32>
  %y = tcp.add %mm, %fb : tensor<1x4xf32>
  func.return %y : tensor<1x4xf32>
}

// A depthwise convolution between two others: cuDNN takes it bare; its bias and
// ReLU6 stay tcp ops, and run channels-last between the graphs (sink-transposes
// moved the layout changes through them, where they cancelled).
// CHECK-LABEL: func.func @depthwise
// CHECK:         %[[P:.*]] = cudnn.graph({{.*}}) {kind = "conv_bias_relu"
// CHECK-NOT:     tcp.transpose
// CHECK:         %[[D:.*]] = cudnn.graph(%[[P]], %{{.*}}) {kind = "conv", result_strides = [strided<[288, 1, 48, 8]>]}
// CHECK-NOT:     tcp.transpose
// CHECK:         %[[A:.*]] = tcp.add %[[D]], %{{.*}} : tensor<1x6x6x8xf32>
// CHECK-NEXT:    %[[R:.*]] = tcp.clamp %[[A]] {min = 0.000000e+00 : f64, max = 6.000000e+00 : f64} : tensor<1x6x6x8xf32>
// CHECK-NOT:     tcp.transpose
// CHECK:         cudnn.graph(%[[R]], %{{.*}}) {kind = "conv"
// CHECK-NEXT:    ^bb0
// CHECK:         tcp.transpose
// CHECK-NEXT:    func.return
func.func @depthwise(%x: tensor<1x3x6x6xf32>) -> tensor<1x4x6x6xf32> {
  %w1 = tcp.param @e.weight : tensor<8x3x1x1xf32>
  %c1 = tcp.conv2d %x, %w1 {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x6x6xf32>, tensor<8x3x1x1xf32>) -> tensor<1x8x6x6xf32>
  %b1 = tcp.param @e.bias : tensor<1x8x1x1xf32>
  %bb1 = tcp.broadcast %b1 : tensor<1x8x1x1xf32> to tensor<1x8x6x6xf32>
  %a1 = tcp.add %c1, %bb1 : tensor<1x8x6x6xf32>
  %r1 = tcp.clamp %a1 {min = 0.000000e+00 : f64, max = 6.000000e+00 : f64} : tensor<1x8x6x6xf32>
  %wd = tcp.param @dw.weight : tensor<8x1x3x3xf32>
  %d = tcp.conv2d %r1, %wd {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 8 : i64} : (tensor<1x8x6x6xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x6x6xf32>
  %bd = tcp.param @dw.bias : tensor<1x8x1x1xf32>
  %bbd = tcp.broadcast %bd : tensor<1x8x1x1xf32> to tensor<1x8x6x6xf32>
  %ad = tcp.add %d, %bbd : tensor<1x8x6x6xf32>
  %rd = tcp.clamp %ad {min = 0.000000e+00 : f64, max = 6.000000e+00 : f64} : tensor<1x8x6x6xf32>
  %w2 = tcp.param @p.weight : tensor<4x8x1x1xf32>
  %c2 = tcp.conv2d %rd, %w2 {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x8x6x6xf32>, tensor<4x8x1x1xf32>) -> tensor<1x4x6x6xf32>
  func.return %c2 : tensor<1x4x6x6xf32>
}

// A depthwise weight's channels-last transpose moves a size-1 dim only, so it reaches the
// graph as a reshape; its descriptor still reads channels-last ([RS, 1, S, 1], as a
// PyTorch channels-last weight), not KCRS ([RS, RS, S, 1]): cuDNN picks its depthwise
// kernel for the one and transforms the tensors for a generic GEMM for the other.
// CHECK-LABEL: func.func @depthwise_weight_strides
// CHECK:         cudnn.graph
// CHECK-NEXT:    ^bb0(%{{.*}}: tensor<2x6x9x9xf16, strided<[486, 1, 54, 6]>>, %{{.*}}: tensor<6x1x7x7xf16, strided<[49, 1, 7, 1]>>):
// CHECK-NEXT:      cudnn.conv_fprop
func.func @depthwise_weight_strides(%x: tensor<2x6x9x9xf16>) -> tensor<2x6x9x9xf16> {
  %w = tcp.param @w : tensor<6x1x7x7xf16>
  %c = tcp.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 3, 3, 3, 3>, dilation = array<i64: 1, 1>, groups = 6 : i64} : (tensor<2x6x9x9xf16>, tensor<6x1x7x7xf16>) -> tensor<2x6x9x9xf16>
  func.return %c : tensor<2x6x9x9xf16>
}
