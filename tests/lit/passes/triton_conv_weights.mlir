// RUN: %dnnc opt %s -p triton-conv-weights,dce --random-params | %filecheck %s

// A partitioned 3x3 convolution reading a channels-last input: its weight is stored again
// as OHWI and brought back to OIHW inside its kernel (the transpose carries its part).
// CHECK-LABEL: func.func @window_reads_channels_last
// CHECK:         %[[W:.*]] = tcp.param @w.ohwi : tensor<8x3x3x6xf16>
// CHECK-NEXT:    %[[B:.*]] = tcp.transpose %[[W]] {dnnc.part = 0 : i64, permutation = array<i64: 0, 3, 1, 2>} : tensor<8x3x3x6xf16> -> tensor<8x6x3x3xf16>
// CHECK-NEXT:    tcp.conv2d %{{.*}}, %[[B]]
// CHECK-NOT:     tcp.param @w :
func.func @window_reads_channels_last(%x: tensor<2x5x7x6xf16>) -> tensor<2x8x5x7xf16> {
  %w = tcp.param @w : tensor<8x6x3x3xf16>
  %t = tcp.transpose %x {dnnc.part = 0 : i64, permutation = array<i64: 0, 3, 1, 2>} : tensor<2x5x7x6xf16> -> tensor<2x6x5x7xf16>
  %c = tcp.conv2d %t, %w {dnnc.part = 0 : i64, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x6x5x7xf16>, tensor<8x6x3x3xf16>) -> tensor<2x8x5x7xf16>
  func.return %c : tensor<2x8x5x7xf16>
}

// A depthwise one's weight is stored IHWO: one tap's weights contiguous along the output
// channels its kernel's tile runs along.
// CHECK-LABEL: func.func @depthwise_reads_channels_last
// CHECK:         %[[W:.*]] = tcp.param @wd.ihwo : tensor<1x7x7x6xf16>
// CHECK-NEXT:    %[[B:.*]] = tcp.transpose %[[W]] {dnnc.part = 0 : i64, permutation = array<i64: 3, 0, 1, 2>} : tensor<1x7x7x6xf16> -> tensor<6x1x7x7xf16>
// CHECK-NEXT:    tcp.conv2d %{{.*}}, %[[B]]
// CHECK-NOT:     tcp.param @wd :
func.func @depthwise_reads_channels_last(%x: tensor<2x5x7x6xf16>) -> tensor<2x6x5x7xf16> {
  %w = tcp.param @wd : tensor<6x1x7x7xf16>
  %t = tcp.transpose %x {dnnc.part = 0 : i64, permutation = array<i64: 0, 3, 1, 2>} : tensor<2x5x7x6xf16> -> tensor<2x6x5x7xf16>
  %c = tcp.conv2d %t, %w {dnnc.part = 0 : i64, stride = array<i64: 1, 1>, padding = array<i64: 3, 3, 3, 3>, dilation = array<i64: 1, 1>, groups = 6 : i64} : (tensor<2x6x5x7xf16>, tensor<6x1x7x7xf16>) -> tensor<2x6x5x7xf16>
  func.return %c : tensor<2x6x5x7xf16>
}

// Left alone: a 1x1 window (its weight is OI either way), an NCHW input, and a
// convolution no Triton kernel holds (no part: cuDNN lays out its own weights).
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT:     ohwi
// CHECK:         func.return
func.func @left_alone(%x: tensor<2x5x7x6xf16>, %y: tensor<2x6x5x7xf16>) -> (tensor<2x8x5x7xf16>, tensor<2x8x5x7xf16>, tensor<2x8x5x7xf16>) {
  %w1 = tcp.param @w1 : tensor<8x6x1x1xf16>
  %w3 = tcp.param @w3 : tensor<8x6x3x3xf16>
  %t = tcp.transpose %x {dnnc.part = 0 : i64, permutation = array<i64: 0, 3, 1, 2>} : tensor<2x5x7x6xf16> -> tensor<2x6x5x7xf16>
  %a = tcp.conv2d %t, %w1 {dnnc.part = 0 : i64, stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x6x5x7xf16>, tensor<8x6x1x1xf16>) -> tensor<2x8x5x7xf16>
  %b = tcp.conv2d %y, %w3 {dnnc.part = 1 : i64, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x6x5x7xf16>, tensor<8x6x3x3xf16>) -> tensor<2x8x5x7xf16>
  %u = tcp.transpose %x {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x5x7x6xf16> -> tensor<2x6x5x7xf16>
  %c = tcp.conv2d %u, %w3 {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x6x5x7xf16>, tensor<8x6x3x3xf16>) -> tensor<2x8x5x7xf16>
  func.return %a, %b, %c : tensor<2x8x5x7xf16>, tensor<2x8x5x7xf16>, tensor<2x8x5x7xf16>
}
