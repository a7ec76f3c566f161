// RUN: %dnnc opt %s -p triton-channels-last-boundary | %filecheck %s
// RUN: %dnnc opt %s -p triton-channels-last-boundary,triton-channels-last,sink-transposes,simplify-shapes,dce,triton-fuse,dce | %filecheck %s --check-prefix=ALONE

// A Triton 1x1 convolution with its residual, as the partitioner extracts it to time it:
// its 4-D arguments and result become channels-last, with transposes at the edge.
// CHECK-LABEL: func.func @residual
// CHECK-SAME:    (%[[X:.*]]: tensor<2x5x5x8xf16>, %[[R:.*]]: tensor<2x5x5x16xf16>) -> tensor<2x5x5x16xf16>
// CHECK-NEXT:    %[[XN:.*]] = tcp.transpose %[[X]] {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x5x5x8xf16> -> tensor<2x8x5x5xf16>
// CHECK-NEXT:    %[[RN:.*]] = tcp.transpose %[[R]] {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x5x5x16xf16> -> tensor<2x16x5x5xf16>
// CHECK:         tcp.conv2d %[[XN]], %{{.*}} {dnnc.part = 0 : i64
// CHECK:         tcp.add %{{.*}}, %[[RN]] {dnnc.part = 0 : i64}
// CHECK:         %[[Y:.*]] = tcp.clamp
// CHECK-NEXT:    %[[YN:.*]] = tcp.transpose %[[Y]] {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x16x5x5xf16> -> tensor<2x5x5x16xf16>
// CHECK-NEXT:    func.return %[[YN]] : tensor<2x5x5x16xf16>

// Lowered as the whole program lowers it, the transposes at the edge cancel: one kernel
// reads the NHWC input and residual and stores NHWC, as it will between cuDNN convolutions.
// ALONE-LABEL: func.func @residual
// ALONE-SAME:    (%[[X:.*]]: tensor<2x5x5x8xf16>, %[[R:.*]]: tensor<2x5x5x16xf16>)
// ALONE:         %[[G:.*]] = tcp.isolated_group(%[[X]], %{{.*}}, %{{.*}}, %[[R]]) {backend = "triton", kind = "conv2d"}
// ALONE:           tcp.transpose %{{.*}} {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x5x5x8xf16> -> tensor<2x8x5x5xf16>
// ALONE:           tcp.transpose %{{.*}} {dnnc.pinned, permutation = array<i64: 0, 2, 3, 1>}
// ALONE:           tcp.yield %{{.*}} : tensor<2x5x5x16xf16>
// ALONE-NOT:     tcp.transpose
// ALONE:         func.return %[[G]] : tensor<2x5x5x16xf16>
func.func @residual(%x: tensor<2x8x5x5xf16>, %r: tensor<2x16x5x5xf16>) -> tensor<2x16x5x5xf16> {
  %w = tcp.param @w : tensor<16x8x1x1xf16>
  %b = tcp.param @b : tensor<1x16x1x1xf16>
  %c = tcp.conv2d %x, %w {dnnc.part = 0 : i64, stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x8x5x5xf16>, tensor<16x8x1x1xf16>) -> tensor<2x16x5x5xf16>
  %bb = tcp.broadcast %b {dnnc.part = 0 : i64} : tensor<1x16x1x1xf16> to tensor<2x16x5x5xf16>
  %a = tcp.add %c, %bb {dnnc.part = 0 : i64} : tensor<2x16x5x5xf16>
  %s = tcp.add %a, %r {dnnc.part = 0 : i64} : tensor<2x16x5x5xf16>
  %y = tcp.clamp %s {dnnc.part = 0 : i64, min = 0.0 : f64} : tensor<2x16x5x5xf16>
  func.return %y : tensor<2x16x5x5xf16>
}

// A 3x3 convolution whose product splits K too (25 pixels x 128 channels, K = 1152): timed
// alone, one kernel reads and stores NHWC (K over the window's taps and the contiguous
// channels), as between cuDNN convolutions. One of a short K is left as it is (@short_window).
// CHECK-LABEL: func.func @spatial
// CHECK-SAME:    (%{{.*}}: tensor<1x5x5x128xf16>) -> tensor<1x5x5x128xf16>
// ALONE-LABEL: func.func @spatial
// ALONE-SAME:    (%[[X:.*]]: tensor<1x5x5x128xf16>) -> tensor<1x5x5x128xf16>
// ALONE:         %[[G:.*]] = tcp.isolated_group(%[[X]], %{{.*}}) {backend = "triton", kind = "conv2d"}
// ALONE:           tcp.transpose %{{.*}} {permutation = array<i64: 0, 3, 1, 2>} : tensor<1x5x5x128xf16> -> tensor<1x128x5x5xf16>
// ALONE-NEXT:      tcp.conv2d
// ALONE-NEXT:      tcp.transpose %{{.*}} {permutation = array<i64: 0, 2, 3, 1>} : tensor<1x128x5x5xf16> -> tensor<1x5x5x128xf16>
// ALONE:         func.return %[[G]] : tensor<1x5x5x128xf16>
func.func @spatial(%x: tensor<1x128x5x5xf16>) -> tensor<1x128x5x5xf16> {
  %w = tcp.param @w3 : tensor<128x128x3x3xf16>
  %c = tcp.conv2d %x, %w {dnnc.part = 1 : i64, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x128x5x5xf16>, tensor<128x128x3x3xf16>) -> tensor<1x128x5x5xf16>
  func.return %c : tensor<1x128x5x5xf16>
}

// On one pixel per image, and with a grouped convolution that is not depthwise, the
// program is left as it is; a depthwise one takes and gives channels-last tensors.
// CHECK-LABEL: func.func @one_pixel
// CHECK-NOT:     tcp.transpose
func.func @one_pixel(%x: tensor<2x8x1x1xf16>) -> tensor<2x4x1x1xf16> {
  %w = tcp.param @w1 : tensor<4x8x1x1xf16>
  %c = tcp.conv2d %x, %w {dnnc.part = 2 : i64, stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x8x1x1xf16>, tensor<4x8x1x1xf16>) -> tensor<2x4x1x1xf16>
  func.return %c : tensor<2x4x1x1xf16>
}

// CHECK-LABEL: func.func @grouped
// CHECK-SAME:    (%{{.*}}: tensor<2x8x5x5xf16>) -> tensor<2x8x5x5xf16>
// CHECK-NOT:     tcp.transpose
func.func @grouped(%x: tensor<2x8x5x5xf16>) -> tensor<2x8x5x5xf16> {
  %w = tcp.param @wg : tensor<8x2x3x3xf16>
  %c = tcp.conv2d %x, %w {dnnc.part = 3 : i64, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 4 : i64} : (tensor<2x8x5x5xf16>, tensor<8x2x3x3xf16>) -> tensor<2x8x5x5xf16>
  func.return %c : tensor<2x8x5x5xf16>
}

// CHECK-LABEL: func.func @depthwise
// CHECK-SAME:    (%{{.*}}: tensor<2x5x5x8xf16>) -> tensor<2x5x5x8xf16>
func.func @depthwise(%x: tensor<2x8x5x5xf16>) -> tensor<2x8x5x5xf16> {
  %w = tcp.param @wd : tensor<8x1x3x3xf16>
  %c = tcp.conv2d %x, %w {dnnc.part = 3 : i64, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 8 : i64} : (tensor<2x8x5x5xf16>, tensor<8x1x3x3xf16>) -> tensor<2x8x5x5xf16>
  func.return %c : tensor<2x8x5x5xf16>
}

// An input the program hands NCHW (a group norm's result, named by partition.extract) stays
// NCHW; the other input and the result are channels-last, and the attribute is dropped.
// CHECK-LABEL: func.func @after_a_norm
// CHECK-SAME:    (%{{.*}}: tensor<1x128x5x5xf16>, %{{.*}}: tensor<1x5x5x128xf16>) -> tensor<1x5x5x128xf16>
// CHECK-NOT:     dnnc.nchw_inputs
// ALONE-LABEL: func.func @after_a_norm
// ALONE-SAME:    (%[[X:.*]]: tensor<1x128x5x5xf16>, %[[R:.*]]: tensor<1x5x5x128xf16>) -> tensor<1x5x5x128xf16>
// ALONE:         tcp.isolated_group(%[[X]], %{{.*}}, %[[R]]) {backend = "triton", kind = "conv2d"}
// ALONE-NEXT:    ^bb0
// ALONE-NEXT:      tcp.conv2d
func.func @after_a_norm(%x: tensor<1x128x5x5xf16>, %r: tensor<1x128x5x5xf16>) -> tensor<1x128x5x5xf16> attributes {dnnc.nchw_inputs = array<i64: 0>} {
  %w = tcp.param @w3 : tensor<128x128x3x3xf16>
  %c = tcp.conv2d %x, %w {dnnc.part = 4 : i64, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x128x5x5xf16>, tensor<128x128x3x3xf16>) -> tensor<1x128x5x5xf16>
  %s = tcp.add %c, %r {dnnc.part = 4 : i64} : tensor<1x128x5x5xf16>
  func.return %s : tensor<1x128x5x5xf16>
}

// CHECK-LABEL: func.func @short_window
// CHECK-SAME:    (%{{.*}}: tensor<2x8x5x5xf16>) -> tensor<2x8x5x5xf16>
// CHECK-NOT:     tcp.transpose
func.func @short_window(%x: tensor<2x8x5x5xf16>) -> tensor<2x8x5x5xf16> {
  %w = tcp.param @w8 : tensor<8x8x3x3xf16>
  %c = tcp.conv2d %x, %w {dnnc.part = 5 : i64, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x8x5x5xf16>, tensor<8x8x3x3xf16>) -> tensor<2x8x5x5xf16>
  func.return %c : tensor<2x8x5x5xf16>
}

// ConvNeXt's depthwise convolution with its bias and the model's own permute to NHWC
// before its layer norm, read from the model's permute back from NHWC: that argument and
// that result are channels-last already and keep their layouts. Lowered alone, one kernel
// reads and stores NHWC, its channels contiguous.
// CHECK-LABEL: func.func @own_permutes
// CHECK-SAME:    (%[[X:.*]]: tensor<2x5x5x8xf16>) -> tensor<2x5x5x8xf16>
// CHECK-NEXT:    tcp.param
// CHECK-NEXT:    tcp.param
// CHECK-NEXT:    %[[T:.*]] = tcp.transpose %[[X]] {dnnc.part = 6 : i64, permutation = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT:    tcp.conv2d %[[T]]
// CHECK:         %[[P:.*]] = tcp.transpose %{{.*}} {dnnc.part = 6 : i64, permutation = array<i64: 0, 2, 3, 1>} : tensor<2x8x5x5xf16> -> tensor<2x5x5x8xf16>
// CHECK-NEXT:    func.return %[[P]] : tensor<2x5x5x8xf16>
// ALONE-LABEL: func.func @own_permutes
// ALONE-SAME:    (%[[X:.*]]: tensor<2x5x5x8xf16>) -> tensor<2x5x5x8xf16>
// ALONE:         %[[G:.*]] = tcp.isolated_group(%[[X]], %{{.*}}, %{{.*}}) {backend = "triton", kind = "conv2d"}
// ALONE:           tcp.yield %{{.*}} : tensor<2x5x5x8xf16>
// ALONE-NOT:     tcp.transpose
// ALONE:         func.return %[[G]] : tensor<2x5x5x8xf16>
func.func @own_permutes(%x: tensor<2x5x5x8xf16>) -> tensor<2x5x5x8xf16> {
  %w = tcp.param @wd7 : tensor<8x1x7x7xf16>
  %b = tcp.param @bd7 : tensor<1x8x1x1xf16>
  %t = tcp.transpose %x {dnnc.part = 6 : i64, permutation = array<i64: 0, 3, 1, 2>} : tensor<2x5x5x8xf16> -> tensor<2x8x5x5xf16>
  %c = tcp.conv2d %t, %w {dnnc.part = 6 : i64, stride = array<i64: 1, 1>, padding = array<i64: 3, 3, 3, 3>, dilation = array<i64: 1, 1>, groups = 8 : i64} : (tensor<2x8x5x5xf16>, tensor<8x1x7x7xf16>) -> tensor<2x8x5x5xf16>
  %bb = tcp.broadcast %b {dnnc.part = 6 : i64} : tensor<1x8x1x1xf16> to tensor<2x8x5x5xf16>
  %a = tcp.add %c, %bb {dnnc.part = 6 : i64} : tensor<2x8x5x5xf16>
  %p = tcp.transpose %a {dnnc.part = 6 : i64, permutation = array<i64: 0, 2, 3, 1>} : tensor<2x8x5x5xf16> -> tensor<2x5x5x8xf16>
  func.return %p : tensor<2x5x5x8xf16>
}

// A depthwise convolution whose result the program's readers take NCHW (a squeeze-excite
// block's mean beside its scaling, named by partition.extract): that result stays NCHW,
// the input becomes channels-last, and the attribute is dropped.
// CHECK-LABEL: func.func @read_nchw
// CHECK-SAME:    (%{{.*}}: tensor<2x5x5x8xf16>) -> tensor<2x8x5x5xf16>
// CHECK-NOT:     dnnc.nchw_outputs
// ALONE-LABEL: func.func @read_nchw
// ALONE:         tcp.isolated_group
// ALONE:           tcp.conv2d
// ALONE:           tcp.transpose %{{.*}} {permutation = array<i64: 0, 3, 1, 2>}
// ALONE:           tcp.yield %{{.*}} : tensor<2x8x5x5xf16>
func.func @read_nchw(%x: tensor<2x8x5x5xf16>) -> tensor<2x8x5x5xf16> attributes {dnnc.nchw_outputs = array<i64: 0>} {
  %w = tcp.param @wd3 : tensor<8x1x3x3xf16>
  %c = tcp.conv2d %x, %w {dnnc.part = 7 : i64, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 8 : i64} : (tensor<2x8x5x5xf16>, tensor<8x1x3x3xf16>) -> tensor<2x8x5x5xf16>
  %s = tcp.silu %c {dnnc.part = 7 : i64} : tensor<2x8x5x5xf16>
  func.return %s : tensor<2x8x5x5xf16>
}
