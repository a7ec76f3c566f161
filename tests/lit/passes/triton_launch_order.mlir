// RUN: %dnnc opt %s -p triton-launch-order | %filecheck %s

// Launch order: a cuDNN convolution, Triton kernels A and B with a reshape (a view, no kernel)
// between them, a torch op (a top-level tcp op no backend took), Triton kernel C. Only B
// follows a Triton kernel; C's stale mark (it followed B before the torch op came between)
// is taken off.
// CHECK-LABEL: func.func @order
// CHECK:         cudnn.graph
// CHECK:         %[[A:.*]] = tcp.isolated_group(%{{.*}}) {backend = "triton", kind = "softmax"} :
// CHECK:         tcp.reshape %[[A]]
// CHECK:         %[[B:.*]] = tcp.isolated_group(%{{.*}}) {backend = "triton", kind = "softmax", dnnc.launch_early = "any"} :
// CHECK:         tcp.exp %[[B]]
// CHECK:         tcp.isolated_group(%{{.*}}) {backend = "triton", kind = "softmax"} :
// CHECK-NOT:     dnnc.launch_early
// CHECK:         func.return
func.func @order(%x: tensor<2x8x6x6xf16>) -> tensor<2x48x6xf16> {
  %w = tcp.param @w : tensor<8x8x1x1xf16>
  %c = cudnn.graph(%x, %w) {kind = "conv", result_strides = [strided<[288, 36, 6, 1]>]} : (tensor<2x8x6x6xf16>, tensor<8x8x1x1xf16>) -> tensor<2x8x6x6xf16> {
  ^bb0(%x_1: tensor<2x8x6x6xf16, strided<[288, 36, 6, 1]>>, %w_1: tensor<8x8x1x1xf16, strided<[8, 1, 1, 1]>>):
    %c_1 = cudnn.conv_fprop %x_1, %w_1 {pre_padding = array<i64: 0, 0>, post_padding = array<i64: 0, 0>, stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>} : (tensor<2x8x6x6xf16, strided<[288, 36, 6, 1]>>, tensor<8x8x1x1xf16, strided<[8, 1, 1, 1]>>) -> tensor<2x8x6x6xf16>
    cudnn.return %c_1 : tensor<2x8x6x6xf16>
  }
  %a = tcp.isolated_group(%c) {backend = "triton", kind = "softmax"} : (tensor<2x8x6x6xf16>) -> tensor<2x8x6x6xf16> {
  ^bb0(%0: tensor<2x8x6x6xf16>):
    %s = tcp.softmax %0 {axis = 1 : i64} : tensor<2x8x6x6xf16>
    tcp.yield %s : tensor<2x8x6x6xf16>
  }
  %r = tcp.reshape %a : tensor<2x8x6x6xf16> to tensor<2x48x6xf16>
  %b = tcp.isolated_group(%r) {backend = "triton", kind = "softmax"} : (tensor<2x48x6xf16>) -> tensor<2x48x6xf16> {
  ^bb0(%0: tensor<2x48x6xf16>):
    %s = tcp.softmax %0 {axis = 2 : i64} : tensor<2x48x6xf16>
    tcp.yield %s : tensor<2x48x6xf16>
  }
  %t = tcp.exp %b : tensor<2x48x6xf16>
  %d = tcp.isolated_group(%t) {backend = "triton", kind = "softmax", dnnc.launch_early = "any"} : (tensor<2x48x6xf16>) -> tensor<2x48x6xf16> {
  ^bb0(%0: tensor<2x48x6xf16>):
    %s = tcp.softmax %0 {axis = 2 : i64} : tensor<2x48x6xf16>
    tcp.yield %s : tensor<2x48x6xf16>
  }
  func.return %d : tensor<2x48x6xf16>
}

// After a cuDNN matrix product, marked "one_wave": launched with PDL in a config of one
// wave only (a convolution, above, launches the next kernel plainly).
// CHECK-LABEL: func.func @after_a_product
// CHECK:         cudnn.graph
// CHECK:         tcp.isolated_group(%{{.*}}) {backend = "triton", kind = "softmax", dnnc.launch_early = "one_wave"} :
func.func @after_a_product(%x: tensor<8x32xf16>) -> tensor<8x16xf16> {
  %w = tcp.param @w : tensor<32x16xf16>
  %m = cudnn.graph(%x, %w) {kind = "matmul", result_strides = [strided<[128, 16, 1]>]} : (tensor<8x32xf16>, tensor<32x16xf16>) -> tensor<8x16xf16> {
  ^bb0(%x_1: tensor<1x8x32xf16, strided<[256, 32, 1]>>, %w_1: tensor<1x32x16xf16, strided<[512, 16, 1]>>):
    %m_1 = cudnn.matmul %x_1, %w_1 : (tensor<1x8x32xf16, strided<[256, 32, 1]>>, tensor<1x32x16xf16, strided<[512, 16, 1]>>) -> tensor<1x8x16xf16>
    cudnn.return %m_1 : tensor<1x8x16xf16>
  }
  %s = tcp.isolated_group(%m) {backend = "triton", kind = "softmax"} : (tensor<8x16xf16>) -> tensor<8x16xf16> {
  ^bb0(%0: tensor<8x16xf16>):
    %s_1 = tcp.softmax %0 {axis = 1 : i64} : tensor<8x16xf16>
    tcp.yield %s_1 : tensor<8x16xf16>
  }
  func.return %s : tensor<8x16xf16>
}
