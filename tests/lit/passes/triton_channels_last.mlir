// RUN: %dnnc opt %s -p triton-channels-last | %filecheck %s
// RUN: %dnnc opt %s -p triton-channels-last,sink-transposes,simplify-shapes,dce | %filecheck %s --check-prefix=SUNK

// A partitioned 1x1 convolution (dnnc.part 3) is followed by a transpose to NHWC pinned
// in its kernel and one back outside it, which its epilogue now reads.
// CHECK-LABEL: func.func @residual
// CHECK:         %[[C:.*]] = tcp.conv2d %{{.*}}, %{{.*}} {dnnc.part = 3 : i64
// CHECK-NEXT:    %[[N:.*]] = tcp.transpose %[[C]] {dnnc.part = 3 : i64, dnnc.pinned, permutation = array<i64: 0, 2, 3, 1>} : tensor<2x8x5x5xf16> -> tensor<2x5x5x8xf16>
// CHECK-NEXT:    %[[B:.*]] = tcp.transpose %[[N]] {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x5x5x8xf16> -> tensor<2x8x5x5xf16>
// CHECK:         tcp.add %[[B]], %{{.*}} {dnnc.part = 3 : i64}
// A 3x3 convolution of a short K (72) is left alone: its product splits no K.
// CHECK:         tcp.conv2d %{{.*}}, %{{.*}} {dnnc.part = 4 : i64
// CHECK-NEXT:    func.return

// With sink-transposes, the transpose back moves below the epilogue: the bias, the
// residual stream (a channels-last tensor brought back to NCHW) and the ReLU are NHWC,
// and only the 3x3 convolution's input goes back.
// SUNK-LABEL: func.func @residual
// SUNK:         %[[C:.*]] = tcp.conv2d
// SUNK-NEXT:    %[[N:.*]] = tcp.transpose %[[C]] {dnnc.part = 3 : i64, dnnc.pinned, permutation = array<i64: 0, 2, 3, 1>}
// SUNK:         %[[A:.*]] = tcp.add %[[N]], %{{.*}} {dnnc.part = 3 : i64} : tensor<2x5x5x8xf16>
// SUNK-NEXT:    %[[S:.*]] = tcp.add %[[A]], %r {dnnc.part = 3 : i64} : tensor<2x5x5x8xf16>
// SUNK-NEXT:    %[[R:.*]] = tcp.clamp %[[S]] {dnnc.part = 3 : i64, min = 0.000000e+00 : f64} : tensor<2x5x5x8xf16>
// SUNK-NEXT:    %[[RN:.*]] = tcp.transpose %[[R]] {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x5x5x8xf16> -> tensor<2x8x5x5xf16>
// SUNK-NEXT:    tcp.conv2d %[[RN]]
func.func @residual(%r: tensor<2x5x5x8xf16>) -> tensor<2x8x5x5xf16> {
  %w = tcp.param @w : tensor<8x8x1x1xf16>
  %b = tcp.param @b : tensor<1x8x1x1xf16>
  %w3 = tcp.param @w3 : tensor<8x8x3x3xf16>
  %x = tcp.transpose %r {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x5x5x8xf16> -> tensor<2x8x5x5xf16>
  %c = tcp.conv2d %x, %w {dnnc.part = 3 : i64, stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x8x5x5xf16>, tensor<8x8x1x1xf16>) -> tensor<2x8x5x5xf16>
  %bb = tcp.broadcast %b {dnnc.part = 3 : i64} : tensor<1x8x1x1xf16> to tensor<2x8x5x5xf16>
  %a = tcp.add %c, %bb {dnnc.part = 3 : i64} : tensor<2x8x5x5xf16>
  %s = tcp.add %a, %x {dnnc.part = 3 : i64} : tensor<2x8x5x5xf16>
  %y = tcp.clamp %s {dnnc.part = 3 : i64, min = 0.0 : f64} : tensor<2x8x5x5xf16>
  %z = tcp.conv2d %y, %w3 {dnnc.part = 4 : i64, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x8x5x5xf16>, tensor<8x8x3x3xf16>) -> tensor<2x8x5x5xf16>
  func.return %z : tensor<2x8x5x5xf16>
}

// A depthwise convolution hands channels-last too (its kernel runs on strips of
// contiguous channels); a grouped one that is not depthwise is left alone.
// CHECK-LABEL: func.func @depthwise
// CHECK:         %[[C:.*]] = tcp.conv2d %{{.*}}, %{{.*}} {dnnc.part = 2 : i64{{.*}}groups = 8
// CHECK-NEXT:    %[[CN:.*]] = tcp.transpose %[[C]] {dnnc.part = 2 : i64, dnnc.pinned, permutation = array<i64: 0, 2, 3, 1>} : tensor<2x8x5x5xf16> -> tensor<2x5x5x8xf16>
// CHECK-NEXT:    %[[CB:.*]] = tcp.transpose %[[CN]] {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT:    tcp.clamp %[[CB]]
// CHECK-LABEL: func.func @grouped
// CHECK-NOT:     tcp.transpose
func.func @depthwise(%x: tensor<2x8x5x5xf16>) -> tensor<2x8x5x5xf16> {
  %w = tcp.param @wd : tensor<8x1x3x3xf16>
  %c = tcp.conv2d %x, %w {dnnc.part = 2 : i64, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 8 : i64} : (tensor<2x8x5x5xf16>, tensor<8x1x3x3xf16>) -> tensor<2x8x5x5xf16>
  %r = tcp.clamp %c {dnnc.part = 2 : i64, min = 0.0 : f64} : tensor<2x8x5x5xf16>
  func.return %r : tensor<2x8x5x5xf16>
}

func.func @grouped(%x: tensor<2x8x5x5xf16>) -> tensor<2x8x5x5xf16> {
  %w = tcp.param @wg : tensor<8x2x3x3xf16>
  %c = tcp.conv2d %x, %w {dnnc.part = 2 : i64, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 4 : i64} : (tensor<2x8x5x5xf16>, tensor<8x2x3x3xf16>) -> tensor<2x8x5x5xf16>
  func.return %c : tensor<2x8x5x5xf16>
}

// A 3x3 convolution whose product splits K (25 pixels x 128 channels, K = 1152: two
// 64 x 64 tiles) hands channels-last like a 1x1 one.
// CHECK-LABEL: func.func @split_window
// CHECK:         %[[Z:.*]] = tcp.conv2d %{{.*}}, %{{.*}} {dnnc.part = 5 : i64
// CHECK-NEXT:    %[[ZN:.*]] = tcp.transpose %[[Z]] {dnnc.part = 5 : i64, dnnc.pinned, permutation = array<i64: 0, 2, 3, 1>} : tensor<1x128x5x5xf16> -> tensor<1x5x5x128xf16>
// CHECK-NEXT:    %[[ZB:.*]] = tcp.transpose %[[ZN]] {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT:    tcp.clamp %[[ZB]]
func.func @split_window(%x: tensor<1x128x5x5xf16>) -> tensor<1x128x5x5xf16> {
  %w = tcp.param @w5 : tensor<128x128x3x3xf16>
  %c = tcp.conv2d %x, %w {dnnc.part = 5 : i64, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x128x5x5xf16>, tensor<128x128x3x3xf16>) -> tensor<1x128x5x5xf16>
  %r = tcp.clamp %c {dnnc.part = 5 : i64, min = 0.0 : f64} : tensor<1x128x5x5xf16>
  func.return %r : tensor<1x128x5x5xf16>
}

// A convolution on a 1x1 map (a squeeze-excite FC) has one layout: left alone.
// CHECK-LABEL: func.func @one_pixel
// CHECK-NOT:     tcp.transpose
func.func @one_pixel(%x: tensor<2x8x1x1xf16>) -> tensor<2x4x1x1xf16> {
  %w = tcp.param @w : tensor<4x8x1x1xf16>
  %c = tcp.conv2d %x, %w {dnnc.part = 1 : i64, stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x8x1x1xf16>, tensor<4x8x1x1xf16>) -> tensor<2x4x1x1xf16>
  %s = tcp.sigmoid %c {dnnc.part = 1 : i64} : tensor<2x4x1x1xf16>
  func.return %s : tensor<2x4x1x1xf16>
}

// A strided 1x1 convolution (a downsample) hands its result channels-last too. Its input,
// which a cuDNN neighbour reads through a transpose to NHWC placed after it, it reads
// through that transpose (moved up before it) and one back pinned in its kernel;
// simplify-shapes does not fold the pair, so its producer stores one layout.
// CHECK-LABEL: func.func @downsample
// CHECK:         %[[T:.*]] = tcp.transpose %x {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x8x6x6xf16> -> tensor<2x6x6x8xf16>
// CHECK-NEXT:    %[[B:.*]] = tcp.transpose %[[T]] {dnnc.part = 5 : i64, dnnc.pinned, permutation = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT:    %[[C:.*]] = tcp.conv2d %[[B]], %{{.*}} {dnnc.part = 5 : i64
// CHECK-NEXT:    tcp.transpose %[[C]] {dnnc.part = 5 : i64, dnnc.pinned, permutation = array<i64: 0, 2, 3, 1>} : tensor<2x4x3x3xf16> -> tensor<2x3x3x4xf16>
// SUNK-LABEL: func.func @downsample
// SUNK:         %[[T:.*]] = tcp.transpose %x {permutation = array<i64: 0, 2, 3, 1>}
// SUNK-NEXT:    %[[B:.*]] = tcp.transpose %[[T]] {dnnc.part = 5 : i64, dnnc.pinned, permutation = array<i64: 0, 3, 1, 2>}
// SUNK-NEXT:    tcp.conv2d %[[B]]
// SUNK:         func.return {{.*}}, %[[T]]
func.func @downsample(%x: tensor<2x8x6x6xf16>) -> (tensor<2x4x3x3xf16>, tensor<2x6x6x8xf16>) {
  %w = tcp.param @w : tensor<4x8x1x1xf16>
  %c = tcp.conv2d %x, %w {dnnc.part = 5 : i64, stride = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x8x6x6xf16>, tensor<4x8x1x1xf16>) -> tensor<2x4x3x3xf16>
  %t = tcp.transpose %x {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x8x6x6xf16> -> tensor<2x6x6x8xf16>
  func.return %c, %t : tensor<2x4x3x3xf16>, tensor<2x6x6x8xf16>
}
