// RUN: %dnnc opt %s -p lower-cudnn | %filecheck %s

// A conv group as assign-layouts and simplify-shapes leave it: an NHWC activation and a
// KRSC weight transposed back at the boundary. The transposes become descriptor
// strides (dims stay [N, C, H, W] and [K, C, R, S]), the output transpose becomes
// result_strides, the broadcast disappears (cuDNN broadcasts the [1, C, 1, 1] bias), the
// residual is read NHWC, and padding (top, bottom, left, right) splits into pre/post.
// CHECK-LABEL: func.func @conv_nhwc
// CHECK-SAME:    (%[[X:.*]]: tensor<2x8x6x3xf32>, %[[W:.*]]: tensor<5x3x1x3xf32>, %[[B:.*]]: tensor<1x5x1x1xf32>, %[[R:.*]]: tensor<2x8x6x5xf32>)
// CHECK-NEXT:    %[[G:.*]] = cudnn.graph(%[[X]], %[[W]], %[[B]], %[[R]]) {kind = "conv_bias_add_relu", result_strides = [strided<[240, 1, 30, 5]>]} : (tensor<2x8x6x3xf32>, tensor<5x3x1x3xf32>, tensor<1x5x1x1xf32>, tensor<2x8x6x5xf32>) -> tensor<2x8x6x5xf32> {
// CHECK-NEXT:    ^bb0(%[[XD:.*]]: tensor<2x3x8x6xf32, strided<[144, 1, 18, 3]>>, %[[WD:.*]]: tensor<5x3x3x1xf32, strided<[9, 1, 3, 3]>>, %[[BD:.*]]: tensor<1x5x1x1xf32, strided<[5, 1, 1, 1]>>, %[[RD:.*]]: tensor<2x5x8x6xf32, strided<[240, 1, 30, 5]>>):
// CHECK-NEXT:      %[[C:.*]] = cudnn.conv_fprop %[[XD]], %[[WD]] {pre_padding = array<i64: 0, 0>, post_padding = array<i64: 2, 0>, stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>} : (tensor<2x3x8x6xf32, strided<[144, 1, 18, 3]>>, tensor<5x3x3x1xf32, strided<[9, 1, 3, 3]>>) -> tensor<2x5x8x6xf32>
// CHECK-NEXT:      %[[A:.*]] = cudnn.pointwise %[[C]], %[[BD]] {mode = "add"}
// CHECK-NEXT:      %[[S:.*]] = cudnn.pointwise %[[RD]], %[[A]] {mode = "add"}
// CHECK-NEXT:      %[[Y:.*]] = cudnn.pointwise %[[S]] {mode = "relu"} : tensor<2x5x8x6xf32> -> tensor<2x5x8x6xf32>
// CHECK-NEXT:      cudnn.return %[[Y]] : tensor<2x5x8x6xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[G]]
func.func @conv_nhwc(%x: tensor<2x8x6x3xf32>, %w: tensor<5x3x1x3xf32>, %b: tensor<1x5x1x1xf32>, %r: tensor<2x8x6x5xf32>) -> tensor<2x8x6x5xf32> {
  %g = tcp.isolated_group(%x, %w, %b, %r) {backend = "cudnn", kind = "conv_bias_add_relu"} : (tensor<2x8x6x3xf32>, tensor<5x3x1x3xf32>, tensor<1x5x1x1xf32>, tensor<2x8x6x5xf32>) -> tensor<2x8x6x5xf32> {
  ^bb0(%xa: tensor<2x8x6x3xf32>, %wa: tensor<5x3x1x3xf32>, %ba: tensor<1x5x1x1xf32>, %ra: tensor<2x8x6x5xf32>):
    %wn = tcp.transpose %wa {permutation = array<i64: 0, 3, 1, 2>} : tensor<5x3x1x3xf32> -> tensor<5x3x3x1xf32>
    %xn = tcp.transpose %xa {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x8x6x3xf32> -> tensor<2x3x8x6xf32>
    %rn = tcp.transpose %ra {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x8x6x5xf32> -> tensor<2x5x8x6xf32>
    %c = tcp.conv2d %xn, %wn {stride = array<i64: 1, 1>, padding = array<i64: 0, 2, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x3x8x6xf32>, tensor<5x3x3x1xf32>) -> tensor<2x5x8x6xf32>
    %bb = tcp.broadcast %ba : tensor<1x5x1x1xf32> to tensor<2x5x8x6xf32>
    %a = tcp.add %c, %bb : tensor<2x5x8x6xf32>
    %s = tcp.add %rn, %a : tensor<2x5x8x6xf32>
    %y = tcp.clamp %s {min = 0.000000e+00 : f64} : tensor<2x5x8x6xf32>
    %yt = tcp.transpose %y {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x5x8x6xf32> -> tensor<2x8x6x5xf32>
    tcp.yield %yt : tensor<2x8x6x5xf32>
  }
  func.return %g : tensor<2x8x6x5xf32>
}

// Depthwise, strided and dilated, with ReLU6: a relu with both clips. The weight
// reaches the group through a reshape (a [K, R, S, 1] KRSC weight is [K, 1, R, S]), read
// row-major: a 3x3 window is not described channels-last (a 7x7 one is, cudnn_stage.mlir).
// CHECK-LABEL: func.func @depthwise_relu6
// CHECK:         cudnn.graph({{.*}}) {kind = "conv_relu", result_strides = [strided<[48, 1, 24, 8]>]}
// CHECK-NEXT:    ^bb0(%{{.*}}: tensor<1x4x5x5xf16, strided<[100, 1, 20, 4]>>, %{{.*}}: tensor<8x1x3x3xf16, strided<[9, 9, 3, 1]>>):
// CHECK-NEXT:      cudnn.conv_fprop {{.*}} {pre_padding = array<i64: 1, 1>, post_padding = array<i64: 1, 1>, stride = array<i64: 2, 2>, dilation = array<i64: 2, 1>} : ({{.*}}) -> tensor<1x8x2x3xf16>
// CHECK-NEXT:      cudnn.pointwise {{.*}} {mode = "relu", lower_clip = 0.000000e+00 : f64, upper_clip = 6.000000e+00 : f64} : tensor<1x8x2x3xf16> -> tensor<1x8x2x3xf16>
// CHECK-NEXT:      cudnn.return
func.func @depthwise_relu6(%x: tensor<1x5x5x4xf16>, %w: tensor<8x3x3x1xf16>) -> tensor<1x2x3x8xf16> {
  %g = tcp.isolated_group(%x, %w) {backend = "cudnn", kind = "conv_relu"} : (tensor<1x5x5x4xf16>, tensor<8x3x3x1xf16>) -> tensor<1x2x3x8xf16> {
  ^bb0(%xa: tensor<1x5x5x4xf16>, %wa: tensor<8x3x3x1xf16>):
    %xn = tcp.transpose %xa {permutation = array<i64: 0, 3, 1, 2>} : tensor<1x5x5x4xf16> -> tensor<1x4x5x5xf16>
    %wn = tcp.reshape %wa : tensor<8x3x3x1xf16> to tensor<8x1x3x3xf16>
    %c = tcp.conv2d %xn, %wn {stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 2, 1>, groups = 4 : i64} : (tensor<1x4x5x5xf16>, tensor<8x1x3x3xf16>) -> tensor<1x8x2x3xf16>
    %y = tcp.clamp %c {min = 0.000000e+00 : f64, max = 6.000000e+00 : f64} : tensor<1x8x2x3xf16>
    %yt = tcp.transpose %y {permutation = array<i64: 0, 2, 3, 1>} : tensor<1x8x2x3xf16> -> tensor<1x2x3x8xf16>
    tcp.yield %yt : tensor<1x2x3x8xf16>
  }
  func.return %g : tensor<1x2x3x8xf16>
}

// A rank-2 matmul is lifted to rank 3 ([1, M, K] x [1, K, N]); the [1, N] bias reads as
// [1, 1, N]; the [M, N] result is written row-major from [1, M, N].
// CHECK-LABEL: func.func @linear_gelu
// CHECK-NEXT:    cudnn.graph(%x, %w, %b) {kind = "matmul_bias_gelu", result_strides = [strided<[128, 16, 1]>]} : (tensor<8x32xbf16>, tensor<32x16xbf16>, tensor<1x16xbf16>) -> tensor<8x16xbf16> {
// CHECK-NEXT:    ^bb0(%[[XD:.*]]: tensor<1x8x32xbf16, strided<[256, 32, 1]>>, %[[WD:.*]]: tensor<1x32x16xbf16, strided<[512, 16, 1]>>, %[[BD:.*]]: tensor<1x1x16xbf16, strided<[16, 16, 1]>>):
// CHECK-NEXT:      %[[M:.*]] = cudnn.matmul %[[XD]], %[[WD]] : ({{.*}}) -> tensor<1x8x16xbf16>
// CHECK-NEXT:      %[[A:.*]] = cudnn.pointwise %[[M]], %[[BD]] {mode = "add"}
// CHECK-NEXT:      %[[Y:.*]] = cudnn.pointwise %[[A]] {mode = "gelu"} : tensor<1x8x16xbf16> -> tensor<1x8x16xbf16>
// CHECK-NEXT:      cudnn.return %[[Y]] : tensor<1x8x16xbf16>
func.func @linear_gelu(%x: tensor<8x32xbf16>, %w: tensor<32x16xbf16>, %b: tensor<1x16xbf16>) -> tensor<8x16xbf16> {
  %g = tcp.isolated_group(%x, %w, %b) {backend = "cudnn", kind = "matmul_bias_gelu"} : (tensor<8x32xbf16>, tensor<32x16xbf16>, tensor<1x16xbf16>) -> tensor<8x16xbf16> {
  ^bb0(%xa: tensor<8x32xbf16>, %wa: tensor<32x16xbf16>, %ba: tensor<1x16xbf16>):
    %mm = tcp.matmul %xa, %wa : (tensor<8x32xbf16>, tensor<32x16xbf16>) -> tensor<8x16xbf16>
    %bb = tcp.broadcast %ba : tensor<1x16xbf16> to tensor<8x16xbf16>
    %a = tcp.add %mm, %bb : tensor<8x16xbf16>
    %y = tcp.gelu %a {approximate = "none"} : tensor<8x16xbf16>
    tcp.yield %y : tensor<8x16xbf16>
  }
  func.return %g : tensor<8x16xbf16>
}

// A reshape at the boundary is read as a row-major descriptor of the new shape; a
// transposed operand of a batched matmul as strides; the modes map one to one.
// CHECK-LABEL: func.func @bmm_views
// CHECK-NEXT:    cudnn.graph(%a, %b) {kind = "matmul_swish", result_strides = [strided<[30, 6, 1]>]}
// CHECK-NEXT:    ^bb0(%[[AD:.*]]: tensor<3x5x4xf32, strided<[20, 4, 1]>>, %[[BD:.*]]: tensor<3x4x6xf32, strided<[24, 1, 4]>>):
// CHECK-NEXT:      %[[M:.*]] = cudnn.matmul %[[AD]], %[[BD]] : ({{.*}}) -> tensor<3x5x6xf32>
// CHECK-NEXT:      cudnn.pointwise %[[M]] {mode = "swish"}
func.func @bmm_views(%a: tensor<15x4xf32>, %b: tensor<3x6x4xf32>) -> tensor<3x5x6xf32> {
  %g = tcp.isolated_group(%a, %b) {backend = "cudnn", kind = "matmul_swish"} : (tensor<15x4xf32>, tensor<3x6x4xf32>) -> tensor<3x5x6xf32> {
  ^bb0(%aa: tensor<15x4xf32>, %ba: tensor<3x6x4xf32>):
    %ar = tcp.reshape %aa : tensor<15x4xf32> to tensor<3x5x4xf32>
    %bt = tcp.transpose %ba {permutation = array<i64: 0, 2, 1>} : tensor<3x6x4xf32> -> tensor<3x4x6xf32>
    %mm = tcp.batch_matmul %ar, %bt : (tensor<3x5x4xf32>, tensor<3x4x6xf32>) -> tensor<3x5x6xf32>
    %y = tcp.silu %mm : tensor<3x5x6xf32>
    tcp.yield %y : tensor<3x5x6xf32>
  }
  func.return %g : tensor<3x5x6xf32>
}

// A layer norm over the last dim reads its input as [rows, D, 1, 1] and the weight and
// bias as [1, D, 1, 1].
// CHECK-LABEL: func.func @layer_norm
// CHECK-NEXT:    cudnn.graph(%x, %w, %b) {kind = "layernorm", result_strides = [strided<[16, 1, 1, 1]>]} : (tensor<2x5x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x5x16xf32> {
// CHECK-NEXT:    ^bb0(%[[XD:.*]]: tensor<10x16x1x1xf32, strided<[16, 1, 1, 1]>>, %[[WD:.*]]: tensor<1x16x1x1xf32, strided<[16, 1, 1, 1]>>, %[[BD:.*]]: tensor<1x16x1x1xf32, strided<[16, 1, 1, 1]>>):
// CHECK-NEXT:      %[[N:.*]] = cudnn.layernorm %[[XD]], %[[WD]], %[[BD]] {epsilon = 1.000000e-05 : f64} : {{.*}} -> tensor<10x16x1x1xf32>
// CHECK-NEXT:      cudnn.return %[[N]]
func.func @layer_norm(%x: tensor<2x5x16xf32>, %w: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<2x5x16xf32> {
  %g = tcp.isolated_group(%x, %w, %b) {backend = "cudnn", kind = "layernorm"} : (tensor<2x5x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x5x16xf32> {
  ^bb0(%xa: tensor<2x5x16xf32>, %wa: tensor<16xf32>, %ba: tensor<16xf32>):
    %n = tcp.layer_norm %xa, %wa, %ba {axis = 2 : i64, epsilon = 1.0e-05 : f64} : tensor<2x5x16xf32>, tensor<16xf32>
    tcp.yield %n : tensor<2x5x16xf32>
  }
  func.return %g : tensor<2x5x16xf32>
}

// A group holding an op with no cudnn node is not lowered: its ops go back into the
// function, where code generation takes them; groups of other backends are not looked at.
// CHECK-LABEL: func.func @not_lowered
// CHECK-NOT:     cudnn.graph
// CHECK-NOT:     backend = "cudnn"
// CHECK:         %[[MM:.*]] = tcp.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %[[S:.*]] = tcp.softmax %[[MM]] {axis = 1 : i64} : tensor<4x8xf32>
// CHECK-NEXT:    %[[T:.*]] = tcp.isolated_group(%x, %w) {backend = "triton", kind = "matmul"}
// CHECK-NOT:     cudnn.graph
// CHECK:         func.return %[[S]], %[[T]]
func.func @not_lowered(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %g = tcp.isolated_group(%x, %w) {backend = "cudnn", kind = "matmul_softmax"} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%xa: tensor<4x8xf32>, %wa: tensor<8x8xf32>):
    %mm = tcp.matmul %xa, %wa : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %s = tcp.softmax %mm {axis = 1 : i64} : tensor<4x8xf32>
    tcp.yield %s : tensor<4x8xf32>
  }
  %t = tcp.isolated_group(%x, %w) {backend = "triton", kind = "matmul"} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%xa: tensor<4x8xf32>, %wa: tensor<8x8xf32>):
    %mm = tcp.matmul %xa, %wa : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    tcp.yield %mm : tensor<4x8xf32>
  }
  func.return %g, %t : tensor<4x8xf32>, tensor<4x8xf32>
}

// A convolution on a 1x1 map (a squeeze-excite block) as simplify-shapes leaves it:
// the NHWC transposes of 1x1 maps are reshapes, at the inputs and at the output. An
// output reshape keeps the row-major order, so the graph writes its logical result
// row-major.
// CHECK-LABEL: func.func @conv_1x1_map
// CHECK:         cudnn.graph({{.*}}) {kind = "conv_bias_sigmoid", result_strides = [strided<[32, 1, 1, 1]>]} : ({{.*}}) -> tensor<2x1x1x32xf16> {
// CHECK-NEXT:    ^bb0(%{{.*}}: tensor<2x8x1x1xf16, strided<[8, 1, 1, 1]>>, %{{.*}}: tensor<32x8x1x1xf16, strided<[8, 1, 1, 1]>>, %{{.*}}: tensor<1x32x1x1xf16, strided<[32, 1, 1, 1]>>):
// CHECK-NEXT:      cudnn.conv_fprop
// CHECK-NEXT:      cudnn.pointwise {{.*}} {mode = "add"}
// CHECK-NEXT:      %[[Y:.*]] = cudnn.pointwise {{.*}} {mode = "sigmoid"}
// CHECK-NEXT:      cudnn.return %[[Y]] : tensor<2x32x1x1xf16>
func.func @conv_1x1_map(%x: tensor<2x1x1x8xf16>, %w: tensor<32x1x1x8xf16>, %b: tensor<1x32x1x1xf16>) -> tensor<2x1x1x32xf16> {
  %g = tcp.isolated_group(%x, %w, %b) {backend = "cudnn", kind = "conv_bias_sigmoid"} : (tensor<2x1x1x8xf16>, tensor<32x1x1x8xf16>, tensor<1x32x1x1xf16>) -> tensor<2x1x1x32xf16> {
  ^bb0(%xa: tensor<2x1x1x8xf16>, %wa: tensor<32x1x1x8xf16>, %ba: tensor<1x32x1x1xf16>):
    %wn = tcp.reshape %wa : tensor<32x1x1x8xf16> to tensor<32x8x1x1xf16>
    %xn = tcp.reshape %xa : tensor<2x1x1x8xf16> to tensor<2x8x1x1xf16>
    %c = tcp.conv2d %xn, %wn {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x8x1x1xf16>, tensor<32x8x1x1xf16>) -> tensor<2x32x1x1xf16>
    %bb = tcp.broadcast %ba : tensor<1x32x1x1xf16> to tensor<2x32x1x1xf16>
    %a = tcp.add %c, %bb : tensor<2x32x1x1xf16>
    %s = tcp.sigmoid %a : tensor<2x32x1x1xf16>
    %y = tcp.reshape %s : tensor<2x32x1x1xf16> to tensor<2x1x1x32xf16>
    tcp.yield %y : tensor<2x1x1x32xf16>
  }
  func.return %g : tensor<2x1x1x32xf16>
}
